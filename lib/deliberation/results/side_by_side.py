"""The papers' headline numbers next to this companion's, one row per headline.

The papers' numbers are data, not results: ``paper_numbers.yaml`` transcribes each one with the
sentence of the paper's summary it comes from, its model and which of our published tables,
row and columns holds the comparable number. Our numbers are read from
``tables/<profile>/<table>.csv`` as ``make paper`` published them; nothing is recomputed, and a
table, row or column a profile lacks is shown as missing, never filled in.

Scale: every number is shown in points (percent for rates, percentage points for differences),
as the papers state them. Our tables write rates either as percent or as shares (0-1); each
mapping says which (``ours.scale``), and :func:`to_points` is the one place that converts.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pandas as pd
import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from deliberation.io import paths
from deliberation.io.atomic import atomic_write_text
from deliberation.publish.pages import CSS, RunLabel, page
from deliberation.publish.provenance import SYNTHETIC_LABEL
from deliberation.results.published_tables import read_published_table
from deliberation.stats.small_samples import MIN_CLUSTERS, NOTE_COLUMN

_PAPER_NUMBERS = Path(__file__).with_name("paper_numbers.yaml")
_SCALES = {"points": 1.0, "share": 100.0}  # to points: percent / percentage points

_Text = Field(min_length=1)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _ReportedNumber(_Strict):
    """One number a paper reports, for one model, in points."""

    model: str = _Text
    value: float
    low: float | None = None
    high: float | None = None

    @model_validator(mode="after")
    def _interval(self) -> _ReportedNumber:
        if (self.low is None) != (self.high is None):
            raise ValueError("give both low and high, or neither")
        if self.low is not None and not self.low <= self.value <= self.high:  # type: ignore[operator]
            raise ValueError(f"value {self.value} lies outside [low, high]")
        return self


class OurNumber(_Strict):
    """Where our comparable number is: a published table, the row (column -> text, every one
    must match), the value and interval columns, and the scale the table writes."""

    table: str = Field(pattern=r"^[0-9A-Za-z_]+$")
    row: dict[str, str] = Field(min_length=1)
    value: str = _Text
    low: str | None = None
    high: str | None = None
    scale: Literal["points", "share"]

    @model_validator(mode="after")
    def _interval(self) -> OurNumber:
        if (self.low is None) != (self.high is None):
            raise ValueError("give both low and high columns, or neither")
        return self


class Headline(_Strict):
    """A headline number of a paper: what it is, where the paper says it, and where ours is."""

    id: str = Field(pattern=r"^[a-z0-9_]+$")
    label: str = _Text
    unit: Literal["%", "points"]
    paper: Literal[1, 2]
    seed_file: str = Field(pattern=r"^\d{3}_[0-9a-f]+\.txt$")
    quote: str = _Text
    reported: list[_ReportedNumber]
    not_reported: str | None = None  # why ``reported`` is empty
    note: str | None = None  # a caveat of the mapping, kept with the data
    ours: OurNumber

    @model_validator(mode="after")
    def _reported_or_why_not(self) -> Headline:
        if not self.reported and not self.not_reported:
            raise ValueError("reported is empty: say why in not_reported")
        return self


class _PaperNumbers(_Strict):
    papers: dict[Literal[1, 2], str]
    profile_notes: dict[str, str] = {}
    headlines: list[Headline] = Field(min_length=1)

    @field_validator("headlines")
    @classmethod
    def _unique_ids(cls, headlines: list[Headline]) -> list[Headline]:
        ids = [h.id for h in headlines]
        repeated = sorted({i for i in ids if ids.count(i) > 1})
        if repeated:
            raise ValueError(f"ids repeated: {', '.join(repeated)}")
        return headlines


class PaperNumbersError(ValueError):
    """A bad ``paper_numbers.yaml``: the message names the file and the field."""


def _field(loc: tuple, raw: object) -> str:
    """``headlines[h1_r1_minus_b4].reported.0.low``: the headline by its id where it has one."""
    parts: list[str] = []
    node = raw
    for step in loc:
        if isinstance(step, int) and parts and isinstance(node, list):
            item = node[step] if step < len(node) else None
            name = item.get("id") if isinstance(item, dict) else None
            parts[-1] += f"[{name}]" if isinstance(name, str) else f"[{step}]"
            node = item
            continue
        parts.append(str(step))
        node = node.get(step) if isinstance(node, dict) else None
    return ".".join(parts)


def load_paper_numbers(path: Path | None = None) -> _PaperNumbers:
    """The papers' headline numbers, validated strictly (unknown fields, missing fields, a value
    outside its interval and repeated ids are errors naming the file and the field)."""
    from deliberation.io.yaml_errors import describe_yaml_error, load_strict, yaml_error_location

    path = Path(path or _PAPER_NUMBERS)
    try:
        raw = load_strict(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise PaperNumbersError(f"{path}: cannot read: {exc}") from exc
    except yaml.YAMLError as exc:
        where = yaml_error_location(exc)
        raise PaperNumbersError(f"{path}: {where}: {describe_yaml_error(exc)}") from exc
    if not isinstance(raw, dict):
        raise PaperNumbersError(f"{path}: expected a mapping with papers and headlines")
    try:
        return _PaperNumbers.model_validate(raw)
    except ValidationError as exc:
        problems = []
        for err in exc.errors(include_url=False):
            where = _field(tuple(err["loc"]), raw)
            message = str(err["msg"]).removeprefix("Value error, ")
            problems.append(f"{where}: {message}" if where else message)
        raise PaperNumbersError(f"{path}: {'; '.join(problems)}") from exc


def to_points(value: float, scale: str) -> float:
    """A number from one of our tables in points (the papers' scale)."""
    return value * _SCALES[scale]


def _decimals(value: float) -> int:
    text = repr(float(value))
    return max(1, len(text.split(".")[1])) if "." in text and "e" not in text else 1


def _format_reported(number: _ReportedNumber) -> str:
    """As the paper states it: ``Qwen2.5-7B-Instruct 64.6 [60.3, 69.0]``."""
    places = max(_decimals(x) for x in (number.value, number.low, number.high) if x is not None)
    shown = f"{number.value:.{places}f}"
    if number.low is not None:
        shown += f" [{number.low:.{places}f}, {number.high:.{places}f}]"
    return f"{number.model} {shown}"


@dataclass(frozen=True)
class _OurCell:
    """What a profile's table says for one headline: a number (in points) or why not."""

    value: float | None = None
    low: float | None = None
    high: float | None = None
    missing: str = ""  # "no table", "no row ...", ...
    note: str = ""  # why the table gives no interval ("n = 1 cluster, fewer than 3: ...")

    def text(self) -> str:
        if self.missing:
            return f"missing ({self.missing})"
        if self.value is None:
            return "-"
        if self.low is None or self.high is None:
            return f"{self.value:.1f} ({self.note})" if self.note else f"{self.value:.1f}"
        return f"{self.value:.1f} [{self.low:.1f}, {self.high:.1f}]"


def _number(text: str) -> float | None:
    value = pd.to_numeric(pd.Series([text]), errors="coerce").iloc[0]
    return None if pd.isna(value) else float(value)


def read_our_number(profile: str, where: OurNumber) -> _OurCell:
    """The comparable number from ``tables/<profile>/<table>.csv`` as published (row matched
    on text, so ``0.6`` meets ``0.6``); a missing table, column or row is said, not filled."""
    path = paths.output_root() / "tables" / profile / f"{where.table}.csv"
    if not path.is_file():
        return _OurCell(missing="no table")
    frame = read_published_table(path)  # a damaged table is refused, naming it
    if frame.empty and not len(frame.columns):  # a table written with no column at all
        return _OurCell(missing="empty table")
    wanted = [*where.row, where.value, *(c for c in (where.low, where.high) if c)]
    absent = [c for c in wanted if c not in frame.columns]
    if absent:
        return _OurCell(missing=f"no column {', '.join(absent)}")
    match = pd.Series(True, index=frame.index)
    for column, text in where.row.items():
        match &= frame[column].str.strip() == text
    found = frame[match]
    if len(found) != 1:
        return _OurCell(missing="no such row" if found.empty else f"{len(found)} rows match")
    record = found.iloc[0]

    def points(column: str | None) -> float | None:
        number = _number(record[column]) if column else None
        return None if number is None else to_points(number, where.scale)

    note = str(record.get(NOTE_COLUMN, "")).strip()
    return _OurCell(points(where.value), points(where.low), points(where.high), note=note)


def _profile_column(profile: str, synthetic: bool) -> str:
    return f"{profile} ({'synthetic' if synthetic else 'model'})"


PAPERS_COLUMN = "papers (model value [95% interval])"
_WHERE_COLUMN = "our table: row"


def _where(ours: OurNumber) -> str:
    row = ", ".join(f"{k}={v}" for k, v in ours.row.items())
    return f"{ours.table}: {row}" + (" (share x100)" if ours.scale == "share" else "")


def _caveat_marks(numbers: _PaperNumbers) -> dict[str, int]:
    """Headline id -> its footnote number, for the headlines whose mapping has a ``note``."""
    noted = [h.id for h in numbers.headlines if h.note]
    return {headline_id: number for number, headline_id in enumerate(noted, start=1)}


def side_by_side(
    profiles: Sequence[str], synthetic: dict[str, bool], numbers: _PaperNumbers | None = None
) -> pd.DataFrame:
    """One row per headline: the papers' values, each profile's value [interval] in points
    (columns labelled synthetic or model, as ``synthetic`` says) and the table and row they
    were read from."""
    numbers = numbers or load_paper_numbers()
    profiles = list(dict.fromkeys(profiles))
    marks = _caveat_marks(numbers)
    rows = []
    for headline in numbers.headlines:
        papers = "; ".join(_format_reported(n) for n in headline.reported)
        mark = f" [{marks[headline.id]}]" if headline.id in marks else ""
        row = {
            "headline": f"{headline.label} ({headline.unit}){mark}",
            "paper": f"{headline.paper}",
            PAPERS_COLUMN: papers or f"not reported: {headline.not_reported}",
        }
        for profile in profiles:
            cell = read_our_number(profile, headline.ours)
            row[_profile_column(profile, synthetic[profile])] = cell.text()
        row[_WHERE_COLUMN] = _where(headline.ours)
        rows.append(row)
    return pd.DataFrame(rows)


def _notes(
    profiles: Sequence[str], numbers: _PaperNumbers, synthetic: dict[str, bool]
) -> list[str]:
    """What a reader needs before reading the table: sources, scale, and what each column can
    show (sim: a mechanism model; profile notes from the data file)."""
    sources = "; ".join(f"paper {k}: {v}" for k, v in sorted(numbers.papers.items()))
    notes = [
        f"Papers' numbers as their summaries report them ({sources}; CITATION.cff cites "
        "both); each row's sentence is in `lib/deliberation/results/paper_numbers.yaml`. Ours "
        "are read from "
        "`tables/<profile>/` as `make paper` wrote them, nothing recomputed; all in points "
        "(percent, or percentage points for differences), shares (0-1) multiplied by 100; "
        "intervals are 95% cluster-robust t intervals (G - 1 degrees of freedom) over templates, "
        f"tasks or problems. A row resting on fewer than {MIN_CLUSTERS} of them shows its "
        "estimate with the table's reason (\"n = k clusters, fewer than "
        f'{MIN_CLUSTERS}: estimate only"): below that measured floor the t rejects a true null '
        "too often (docs/reading-small-samples.md); one cluster is one template (or task, or "
        "problem), and at temperature 0 its rows often repeat one model call (the tables count "
        "`n_calls` beside `n_rows` and `n_clusters`).",
    ]
    if any(synthetic.values()):
        notes.append(
            "Columns marked synthetic come from the `sim` backend, a seeded mechanism model, not a "
            "language model; several of its parameters were set to resemble figures the papers "
            "report (params/sim.yaml says which), so agreement with the papers' column is partly "
            "by construction: it checks that the pipeline and statistics recover planted effects, "
            "and is no evidence about any model."
        )
    notes += [numbers.profile_notes[p] for p in profiles if p in numbers.profile_notes]
    by_id = {h.id: h for h in numbers.headlines}
    notes += [f"[{n}] {by_id[i].label}: {by_id[i].note}" for i, n in _caveat_marks(numbers).items()]
    notes.append(
        "missing (no table): the profile has not made that table (`make paper PROFILE=...`); "
        "missing (no such row): its table lacks that row (a smaller grid, or no case of that "
        "kind was found)."
    )
    return notes


def markdown_table(frame: pd.DataFrame) -> str:
    """A pipe table without padding (the README's diff then shows only changed numbers)."""

    def line(cells: Sequence[object]) -> str:
        return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"

    rule = "| " + " | ".join("---" for _ in frame.columns) + " |"
    return "\n".join([line(frame.columns), rule, *(line(r) for r in frame.itertuples(False))])


@dataclass
class _PapersComparison:
    """The side-by-side frame with the notes a reader needs beside it (README, page, CLI)."""

    profiles: list[str]
    synthetic: dict[str, bool]
    frame: pd.DataFrame
    notes: list[str]

    def markdown(self) -> str:
        """The table, then the notes as a list."""
        table = markdown_table(self.frame)
        return table + "\n\n" + "\n".join(f"- {n}" for n in self.notes)

    def lines(self) -> list[str]:
        return self.markdown().splitlines()

    def html(self) -> str:
        notes = "".join(f"<li>{html.escape(n)}</li>" for n in self.notes)
        return self.frame.to_html(index=False, border=0) + f"<ul>{notes}</ul>"


def compare_with_papers(
    profiles: Sequence[str], synthetic: dict[str, bool], numbers: _PaperNumbers | None = None
) -> _PapersComparison:
    """The side-by-side frame of ``profiles`` and the notes that go with it; ``synthetic``
    labels each profile as ``deliberation compare`` and the report do (the caller decides, so
    this module reads tables and nothing of the report)."""
    numbers = numbers or load_paper_numbers()
    profiles = list(dict.fromkeys(profiles))
    frame = side_by_side(profiles, synthetic, numbers)
    return _PapersComparison(profiles, synthetic, frame, _notes(profiles, numbers, synthetic))


README_BEGIN = "<!-- side-by-side:begin -->"
README_END = "<!-- side-by-side:end -->"


def results_page() -> Path:
    """The documentation page that holds the generated side-by-side table."""
    return paths.repo_root() / "docs" / "results.md"


def _readme_section(comparison: _PapersComparison) -> str:
    """The generated part of the side-by-side section, with the command that made it."""
    command = "deliberation compare --profile " + " ".join(comparison.profiles) + " --readme"
    return (
        f"{README_BEGIN}\n<!-- generated by `{command}`: edit paper_numbers.yaml, not this -->\n\n"
        f"{comparison.markdown()}\n{README_END}"
    )


def write_readme_section(comparison: _PapersComparison, readme: Path | None = None) -> Path:
    """Replace the text between the markers in ``docs/results.md`` (atomically; the README links
    there); the markers must be there, once each, so a misplaced section is an error rather than
    a duplicate."""

    readme = readme or results_page()
    text = readme.read_text(encoding="utf-8")
    if text.count(README_BEGIN) != 1 or text.count(README_END) != 1:
        raise ValueError(f"{readme}: needs the markers {README_BEGIN} and {README_END} once each")
    pattern = re.compile(re.escape(README_BEGIN) + ".*?" + re.escape(README_END), re.DOTALL)
    atomic_write_text(readme, pattern.sub(lambda _: _readme_section(comparison), text))
    return readme


def papers_label(comparison: _PapersComparison) -> RunLabel:
    """The banner of a papers page: synthetic when any column is."""
    kinds = ", ".join(
        f"{p}: {SYNTHETIC_LABEL if comparison.synthetic[p] else 'model output'}"
        for p in comparison.profiles
    )
    profiles = ", ".join(comparison.profiles)
    return RunLabel(f"papers vs {profiles}", any(comparison.synthetic.values()), kinds)


def write_papers_page(comparison: _PapersComparison, out: Path | None = None) -> Path:
    """``build/report/papers-<P1>-<P2>.../index.html`` (self-contained, like the report)."""
    folder = out or paths.build_dir() / "report" / ("papers-" + "-".join(comparison.profiles))
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_text(folder / "style.css", CSS)
    text = page("Papers side by side", papers_label(comparison), comparison.html(), up=None)
    atomic_write_text(folder / "index.html", text)
    return folder / "index.html"
