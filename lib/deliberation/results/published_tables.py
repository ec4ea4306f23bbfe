"""Published tables are checked before anything reads them (compare, the report, replay).

In full: ``docs/outputs.md``, section "Published tables are checked before they are read
(results/published_tables.py)".
"""

from __future__ import annotations

import csv as csv_module
import hashlib
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from deliberation import exit_codes
from deliberation.publish.provenance import check_output_set
from deliberation.stats.small_samples import NOTE_COLUMN

_COUNT_COLUMNS = ("n_clusters", "n_rows")  # required
_OPTIONAL_COUNTS = ("n_calls",)  # a number where given
VALUE_COLUMNS = ("estimate", "accuracy")
STATISTICS = frozenset({"p_value", "se", "z", "n_clusters", "n_rows", NOTE_COLUMN})
NUMERIC_KEYS = frozenset({"budget", "item_limit", "k", "r"})
_BOUND = re.compile(r"^(?P<kind>.*?[ _])?(?P<side>low|high)$")


class DamagedTableError(exit_codes.CommandError):
    """A published table that does not match its sidecar or its own columns; names the file."""

    exit_code = exit_codes.BAD_INPUT

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(
            f"{path}: {problem}; refused (rebuild it with make paper, or restore it from git)"
        )
        self.path = path


@dataclass(frozen=True)
class Layout:
    keys: tuple[str, ...]
    value: str
    low: str
    high: str


def _numeric(column: pd.Series) -> bool:
    present = column[column.astype(str).str.strip() != ""]
    return len(present) > 0 and pd.to_numeric(present, errors="coerce").notna().all()


def interval_layout(frame: pd.DataFrame) -> Layout | None:
    """Which columns identify a row and which hold the value and its interval (None: the table
    reports no interval)."""
    columns = [str(c) for c in frame.columns]
    low = next(
        (c for c in columns if c.endswith("low") and c[: -len("low")] + "high" in columns), None
    )
    if low is None:
        return None
    high = low[: -len("low")] + "high"
    value = next((c for c in VALUE_COLUMNS if c in columns), None)
    if value is None:
        before = [c for c in columns[: columns.index(low)] if c not in STATISTICS]
        if not before:
            return None
        value = before[-1]
    leading = columns[: columns.index(value)]
    keys = [c for c in leading if c in NUMERIC_KEYS or not _numeric(frame[c])]
    return Layout(tuple(keys or leading), value, low, high)


def _sidecar_of(csv: Path) -> Path:
    return csv.with_name(f"{csv.stem}.provenance.json")


def _check_against_sidecar(csv: Path) -> None:
    """Refuse a file its sidecar does not vouch for (missing, unlisted, other bytes)."""
    sidecar = _sidecar_of(csv)
    try:
        record = json.loads(sidecar.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DamagedTableError(csv, f"no provenance sidecar ({sidecar.name})") from None
    except (OSError, ValueError) as exc:
        raise DamagedTableError(csv, f"its sidecar {sidecar.name} is unreadable ({exc})") from None
    files = record.get("files") if isinstance(record, dict) else None
    expected = files.get(csv.name) if isinstance(files, dict) else None
    if not isinstance(expected, str):
        raise DamagedTableError(csv, f"its sidecar {sidecar.name} does not list it")
    actual = hashlib.sha256(csv.read_bytes()).hexdigest()
    if actual != expected:
        raise DamagedTableError(
            csv,
            f"its bytes differ from the sha256 in {sidecar.name} (edited or damaged since it was"
            " written)",
        )


def _interval_pairs(columns: list[str]) -> list[tuple[str, str]]:
    """(low, high) column pairs in header order; a half pair raises ValueError."""
    pairs, seen = [], set()
    for column in columns:
        match = _BOUND.match(column)
        if match is None:
            continue
        kind = match["kind"] or ""
        low, high = f"{kind}low", f"{kind}high"
        if low in seen:
            continue
        if low not in columns or high not in columns:
            present, absent = (low, high) if low in columns else (high, low)
            raise ValueError(f"column {present!r} without {absent!r} (a dropped column?)")
        seen.add(low)
        pairs.append((low, high))
    return pairs


def _number(text: str) -> float | None:
    """The cell as a finite number; None when blank; ValueError when it is not a number."""
    text = text.strip()
    if not text:
        return None
    value = float(text)  # raises ValueError for text
    if not math.isfinite(value):
        raise ValueError(text)
    return value


def _check_columns(csv: Path, frame: pd.DataFrame) -> None:
    """Refuse a table (read as text, blanks as "") whose columns break the rules above."""
    columns = [str(c) for c in frame.columns]
    try:
        pairs = _interval_pairs(columns)
    except ValueError as exc:
        raise DamagedTableError(csv, str(exc)) from None
    if not pairs:
        return
    layout = interval_layout(frame)
    value = layout.value if layout is not None else None
    notes = frame[NOTE_COLUMN] if NOTE_COLUMN in columns else pd.Series("", index=frame.index)
    numeric = [
        c for c in (value, *_COUNT_COLUMNS, *_OPTIONAL_COUNTS) if c is not None and c in columns
    ]
    numeric += [bound for pair in pairs for bound in pair]
    for line, (index, row) in enumerate(frame.iterrows(), start=2):
        explained = bool(str(notes[index]).strip())
        cells: dict[str, float | None] = {}
        for column in dict.fromkeys(numeric):
            try:
                cells[column] = _number(str(row[column]))
            except ValueError:
                raise DamagedTableError(
                    csv, f"line {line}, column {column!r}: {row[column]!r} is not a number"
                ) from None
        for column in (value, *_COUNT_COLUMNS):
            if column in cells and cells[column] is None and not explained:
                raise DamagedTableError(
                    csv, f"line {line}, column {column!r}: blank where a number is required"
                )
        for number, (low, high) in enumerate(pairs):
            if (cells[low] is None) != (cells[high] is None):
                blank = low if cells[low] is None else high
                raise DamagedTableError(
                    csv, f"line {line}, column {blank!r}: blank, but its other bound is not"
                )
            first = number == 0 and layout is not None and low == layout.low
            if first and cells[low] is None and not explained:
                raise DamagedTableError(
                    csv,
                    f"line {line}: columns {low!r} and {high!r} blank, and no"
                    f" {NOTE_COLUMN!r} note says the interval was withheld",
                )


def read_published_table(csv: Path) -> pd.DataFrame:
    """A published table as text (blanks as ""), after checking it against its sidecar and its
    columns; raises :class:`DamagedTableError` naming what is wrong."""
    csv = Path(csv)
    _check_against_sidecar(csv)
    with csv.open(encoding="utf-8", newline="") as handle:
        header = next(csv_module.reader(handle), [])
    repeated = [c for c in dict.fromkeys(header) if header.count(c) > 1]
    if repeated:
        raise DamagedTableError(csv, f"column {repeated[0]!r} appears twice")
    try:
        frame = pd.read_csv(csv, dtype=str, keep_default_na=False)
    except pd.errors.EmptyDataError:  # a table written with no column at all
        return pd.DataFrame()
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise DamagedTableError(csv, f"not a readable CSV ({exc})") from None
    _check_columns(csv, frame)
    return frame


def _check_file_set(sidecar: Path) -> None:
    """Refuse a set (CSV, Markdown, LaTeX) whose sidecar names a file that is missing or whose
    bytes differ from the hash it holds (:func:`deliberation.publish.provenance.check_output_set`)."""
    try:
        problems = check_output_set(sidecar)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise DamagedTableError(sidecar, f"not a readable provenance sidecar ({exc})") from None
    if problems:
        path, _, problem = problems[0].partition(": ")
        raise DamagedTableError(Path(path), problem)


def check_tables(files: list[Path]) -> None:
    """Check every table (CSV) among ``files`` and every file set whose sidecar is among them;
    the first damaged one is refused."""
    for path in sorted(files):
        if path.name.startswith("."):
            continue
        if path.suffix == ".csv":
            read_published_table(path)
        elif path.name.endswith(".provenance.json"):
            _check_file_set(path)


def check_table_folder(folder: Path) -> None:
    """Check every table of a published folder (:func:`check_tables`)."""
    folder = Path(folder)
    if folder.is_dir():
        check_tables([p for p in folder.iterdir() if p.is_file()])
