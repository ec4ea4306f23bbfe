"""Small samples said plainly: below the cluster floor no inference at all.

The floor is measured, not chosen: :data:`MIN_CLUSTERS` is the fewest clusters at which the
cluster-robust t (:mod:`deliberation.stats.cluster_t`) rejects a true null at most 1.5 x alpha
in every scenario of :mod:`deliberation.stats.calibration` (the experiments lane measures it
again and fails if this constant disagrees); :data:`PAPER_METHOD_MIN_CLUSTERS` is the same
for the papers' percentile bootstrap, which is shown for comparison only from there on.

Below the floor a table keeps its estimate and counts and loses every interval, p-value, test
statistic and standard error (:func:`inferential_columns`), saying why in its ``interval``
column. The analyses apply this where they compute (:func:`withhold_inference`), so the frame a
notebook shows is the CSV written; the table writer only checks (:func:`inference_leaks`).

Rows are not observations either: at temperature 0 identical prompts are one cached call, so
"8 rows" can be one answer copied 8 times. :func:`distinct_calls` counts the calls behind a set
of rows (distinct request keys), published as ``n_calls`` beside ``n_rows``;
:func:`calls_note` says it in words ("192 rows from 79 distinct calls"). Two rows of a table
can even be the very same calls (R1 at r = .6 and at 7 items); :func:`with_same_calls` says so
in a ``same_calls_as`` column, so they are not read as independent evidence.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

# Measured by deliberation.stats.calibration.size_table (docs/reading-small-samples.md):
# the smallest of G = 3, 5, 10, 20, 60 from which the method's false-positive rate at zero
# effect is at most 1.5 x alpha in every scenario.
MIN_CLUSTERS = 3  # the cluster-robust t with G - 1 degrees of freedom (the companion's method)
PAPER_METHOD_MIN_CLUSTERS = 20  # the papers' percentile cluster bootstrap
NOTE_COLUMN = "interval"
CLUSTERS_COLUMN = "n_clusters"
SAME_CALLS_COLUMN = "same_calls_as"  # the earlier row that read exactly the same calls
# Columns naming the model call behind a row, in order of preference: the request's cache key
# (``key`` in results frames, ``request_key`` in ``deliberation run`` output), else a prompt hash.
_CALL_COLUMNS = ("key", "request_key", "cache_key", "prompt_hash")
# A column holding a p-value, a test statistic or a standard error (bounds are found apart).
_INFERENTIAL = re.compile(
    r"^(p|z|t|se|df_t)$|^p[_ ]|[_ ]p$|p[_ ]?value|standard[_ ]error|(^|[_ ])se$|statistic",
    re.IGNORECASE,
)


def call_column(frame: pd.DataFrame) -> str | None:
    """The first of :data:`_CALL_COLUMNS` that ``frame`` has, or None."""
    return next((c for c in _CALL_COLUMNS if c in frame.columns), None)


def distinct_calls(frame: pd.DataFrame, column: str | None = None) -> int | None:
    """How many distinct model calls the rows of ``frame`` rest on: distinct non-empty values
    of ``column`` (default: :func:`call_column`); None when the frame names no call. A row
    whose call was never sent (empty key) adds none."""
    keys = call_set(frame, column)
    return None if keys is None else len(keys)


def call_set(frame: pd.DataFrame, column: str | None = None) -> frozenset | None:
    """The distinct non-empty call keys of ``frame``'s rows (see :func:`distinct_calls`);
    None when the frame names no call."""
    column = column or call_column(frame)
    if column is None:
        return None
    keys = frame[column]
    return frozenset(keys[keys.notna() & (keys.astype(str) != "")])


def with_same_calls(
    table: pd.DataFrame, calls: Sequence[frozenset | None], by: Sequence[str]
) -> pd.DataFrame:
    """``table`` with a :data:`SAME_CALLS_COLUMN` column naming, for each row, the first earlier
    row that read exactly the same calls (``calls``: each row's call set), "" when none.

    Such rows are one observation shown twice, not two pieces of evidence: R1 at r = .6 and
    at 7 items when the budget keeps 7 items anyway, R1-rel and R1 when the labeller keeps
    every fact (a mean of the calls' outcomes is then equal by construction). The earlier row
    is named by its ``by`` values that differ from the row's own (R1-rel at r = .6 reads "R1",
    at 7 items "R1, r=0.6"). Unchanged when no row names its calls."""
    if len(calls) != len(table):
        raise ValueError(f"with_same_calls: {len(calls)} call sets for {len(table)} rows")
    if all(c is None for c in calls):
        return table
    values = [tuple(str(v) for v in row) for row in table[list(by)].itertuples(index=False)]
    first: dict[frozenset, tuple[str, ...]] = {}
    same = []
    for mine, keys in zip(values, calls, strict=True):
        if not keys:  # no call named: nothing to compare
            same.append("")
            continue
        earlier = first.setdefault(keys, mine)
        differ = [e for e, m in zip(earlier, mine, strict=True) if e != m]
        same.append("" if earlier is mine else ", ".join(differ or earlier))
    out = table.copy()
    at = out.columns.get_loc("n_calls") + 1 if "n_calls" in out.columns else len(out.columns)
    out.insert(at, SAME_CALLS_COLUMN, same)
    return out


def calls_note(frame: pd.DataFrame, what: str = "rows") -> str:
    """ "192 rows from 79 distinct calls" (or "192 rows, one call each"); "" when the frame
    names no call."""
    calls = distinct_calls(frame)
    if calls is None:
        return ""
    if calls == len(frame):
        return f"{len(frame)} {what}, one call each"
    return f"{len(frame)} {what} from {calls} distinct call{'s' if calls != 1 else ''}"


def interval_note(n_clusters: int, min_clusters: int = MIN_CLUSTERS) -> str:
    """Why a row has no inference ("" when it has it)."""
    if n_clusters >= min_clusters:
        return ""
    unit = "cluster" if n_clusters == 1 else "clusters"
    return (
        f"n = {n_clusters} {unit}, fewer than {min_clusters}: estimate only"
        " (no interval, p-value or test)"
    )


def reading(
    row: pd.Series,
    label: str,
    estimate: str = "estimate",
    *,
    digits: int = 3,
    ci: float = 0.95,
    min_clusters: int = MIN_CLUSTERS,
) -> str:
    """One table row as a sentence for a notebook to print: the estimate with its SE, interval
    and p-value (columns ``se``, ``low``/``high``, ``p_value``, where the row has them), its
    clusters, rows and distinct calls; below ``min_clusters`` clusters (or when the row's
    ``interval`` note says why it has none) the estimate, n and why, and no inference at all.
    A notebook never formats inference itself, so it cannot print an SE the table withheld."""
    value = f"{label}: {float(row[estimate]):+.{digits}f}"
    clusters = pd.to_numeric(pd.Series([row.get(CLUSTERS_COLUMN)]), errors="coerce").iloc[0]
    counts = []
    if pd.notna(row.get("n_rows")):
        rows = int(row["n_rows"])
        calls = row.get("n_calls")
        counts.append(
            f"{rows} rows from {int(calls)} distinct calls" if pd.notna(calls) else f"{rows} rows"
        )
    note = row.get(NOTE_COLUMN)
    note = "" if note is None or pd.isna(note) else str(note)
    if pd.isna(clusters):
        why = note or "no inference: the clusters behind it are unknown"
        return f"{value} ({'; '.join([why, *counts])})"
    if clusters < min_clusters or note:
        why = note or interval_note(int(clusters), min_clusters)
        return f"{value} ({'; '.join([why, *counts])})"
    shown = []
    if pd.notna(row.get("se")):
        shown.append(f"cluster-robust SE {float(row['se']):.{digits}f}")
    if pd.notna(row.get("low")) and pd.notna(row.get("high")):
        shown.append(
            f"{ci:.0%} interval [{float(row['low']):+.{digits}f}, {float(row['high']):+.{digits}f}]"
        )
    if pd.notna(row.get("p_value")):
        shown.append(f"p = {float(row['p_value']):.2g}")
    counts.insert(0, f"{int(clusters)} clusters")
    return (
        f"{value} ({', '.join(shown)}; {', '.join(counts)})"
        if shown
        else f"{value} ({', '.join(counts)})"
    )


def _interval_pairs(columns) -> list[tuple[str, str]]:
    """The (low, high) column pairs of a table: ``low``/``high`` and every ``<x> low``/``<x>
    high``, ``<x>_low``/``<x>_high`` or ``low_<unit>``/``high_<unit>`` (a table of several
    effects, e.g. the tag ablation, or bounds named with their unit)."""
    columns = [str(c) for c in columns]
    pairs = []
    for column in columns:
        for low, high in (("low", "high"), (" low", " high"), ("_low", "_high")):
            if column.endswith(low) and (column == low or low != "low"):
                partner = column[: len(column) - len(low)] + high
                if partner in columns:
                    pairs.append((column, partner))
                break
        else:  # ``low_pct``/``high_pct``: the unit after the bound
            if column.startswith("low_") and f"high_{column[4:]}" in columns:
                pairs.append((column, f"high_{column[4:]}"))
    return pairs


def inferential_columns(columns: Iterable[object]) -> list[str]:
    """Every column of a table that carries inference: interval bounds (:func:`_interval_pairs`),
    p-values, test statistics and standard errors."""
    columns = [str(c) for c in columns]
    bounds = {c for pair in _interval_pairs(columns) for c in pair}
    return [c for c in columns if c in bounds or _INFERENTIAL.search(c)]


def _below_floor(frame: pd.DataFrame, min_clusters: int) -> pd.Series:
    clusters = pd.to_numeric(frame[CLUSTERS_COLUMN], errors="coerce")
    return clusters.isna() | (clusters < min_clusters)


def withhold_inference(frame: pd.DataFrame, min_clusters: int = MIN_CLUSTERS) -> pd.DataFrame:
    """``frame`` with every inferential value (:func:`inferential_columns`) emptied on the rows
    whose ``n_clusters`` is below ``min_clusters`` (or missing), and the ``interval`` column
    saying why (after the last bound; an existing note column is overwritten on those rows).
    A frame with no inferential column is returned unchanged; one with such columns but no
    ``n_clusters`` is an error, since it cannot say what its inference rests on."""
    if min_clusters < 1:
        raise ValueError(f"min_clusters must be >= 1, got {min_clusters}")
    columns = inferential_columns(frame.columns)
    if not columns:
        return frame
    if CLUSTERS_COLUMN not in frame.columns:
        raise ValueError(
            f"a table with inference ({', '.join(columns)}) needs a {CLUSTERS_COLUMN!r} column"
        )
    small = _below_floor(frame, min_clusters)
    out = frame.copy()
    for column in columns:
        if small.any():
            if not pd.api.types.is_float_dtype(out[column]) and not (
                pd.api.types.is_object_dtype(out[column])
            ):
                out[column] = out[column].astype(float)
            out.loc[small, column] = np.nan
    clusters = pd.to_numeric(frame[CLUSTERS_COLUMN], errors="coerce").fillna(0).astype(int)
    notes = [
        interval_note(int(n), min_clusters) if below else ""
        for n, below in zip(clusters, small, strict=True)
    ]
    if NOTE_COLUMN in out.columns:
        existing = out[NOTE_COLUMN].astype(object).where(out[NOTE_COLUMN].notna(), "")
        out[NOTE_COLUMN] = [  # an analysis' own note that already says it is kept
            str(old) if new and new in str(old) else new or str(old)
            for new, old in zip(notes, existing, strict=True)
        ]
        return out
    pairs = _interval_pairs(out.columns)
    after = ("high" if ("low", "high") in pairs else pairs[-1][1]) if pairs else columns[-1]
    out.insert(out.columns.get_loc(after) + 1, NOTE_COLUMN, notes)
    return out


def inference_leaks(frame: pd.DataFrame, min_clusters: int = MIN_CLUSTERS) -> list[str]:
    """What in ``frame`` breaks the floor: a table with inference and no ``n_clusters``, or an
    inferential value on a row below ``min_clusters`` clusters; [] when nothing does."""
    columns = inferential_columns(frame.columns)
    if not columns:
        return []
    if CLUSTERS_COLUMN not in frame.columns:
        return [f"inference ({', '.join(columns)}) without a {CLUSTERS_COLUMN!r} column"]
    small = _below_floor(frame, min_clusters)
    leaks = []
    for column in columns:
        values = frame.loc[small, column]
        shown = values.notna() & (values.astype(str).str.strip() != "")
        for index in values.index[shown.to_numpy()]:
            leaks.append(
                f"row {index}: {column} = {frame.at[index, column]!r} at"
                f" {frame.at[index, CLUSTERS_COLUMN]!r} clusters (floor {min_clusters})"
            )
    return leaks


def scan_tables(folder) -> dict[str, list[str]]:
    """Every published table of ``folder`` (``*.csv`` beside a sidecar, rows for re-analysis
    ``*_rows.csv`` aside) checked for the floor: {table: what breaks it}; a table of model
    answers must also state its clusters and distinct calls when it has inference. Empty when
    every table keeps the rule."""
    import json
    from pathlib import Path

    problems: dict[str, list[str]] = {}
    for csv in sorted(Path(folder).glob("*.csv")):
        if csv.stem.endswith("_rows"):
            continue
        frame = pd.read_csv(csv, keep_default_na=False, na_values=[""])
        found = inference_leaks(frame, MIN_CLUSTERS)
        sidecar = csv.with_name(csv.stem + ".provenance.json")
        uses_model = True
        if sidecar.is_file():
            record = json.loads(sidecar.read_text(encoding="utf-8"))
            uses_model = bool(record.get("uses_model", True)) and "source" not in record
        if uses_model and inferential_columns(frame.columns) and "n_calls" not in frame:
            found.append("inference without 'n_calls' (the distinct calls behind it)")
        if found:
            problems[csv.name] = found
    return problems
