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
:func:`calls_note` says it in words ("192 rows from 79 distinct calls").
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import numpy as np
import pandas as pd

# Measured by deliberation.stats.calibration.size_table (docs/reading-small-samples.md):
# the smallest of G = 3, 5, 10, 20, 60 from which the method's false-positive rate at zero
# effect is at most 1.5 x alpha in every scenario.
MIN_CLUSTERS = 3  # the cluster-robust t with G - 1 degrees of freedom (the companion's method)
PAPER_METHOD_MIN_CLUSTERS = 20  # the papers' percentile cluster bootstrap
NOTE_COLUMN = "interval"
CLUSTERS_COLUMN = "n_clusters"
# Columns naming the model call behind a row, in order of preference: the request's cache key
# (``key`` in results frames, ``request_key`` in ``deliberation run`` output), else a prompt hash.
CALL_COLUMNS = ("key", "request_key", "cache_key", "prompt_hash")
# A column holding a p-value, a test statistic or a standard error (bounds are found apart).
_INFERENTIAL = re.compile(
    r"^(p|z|t|se|df_t)$|^p[_ ]|[_ ]p$|p[_ ]?value|standard[_ ]error|(^|[_ ])se$|statistic",
    re.IGNORECASE,
)


def call_column(frame: pd.DataFrame) -> str | None:
    """The first of :data:`CALL_COLUMNS` that ``frame`` has, or None."""
    return next((c for c in CALL_COLUMNS if c in frame.columns), None)


def distinct_calls(frame: pd.DataFrame, column: str | None = None) -> int | None:
    """How many distinct model calls the rows of ``frame`` rest on: distinct non-empty values
    of ``column`` (default: :func:`call_column`); None when the frame names no call. A row
    whose call was never sent (empty key) adds none."""
    column = column or call_column(frame)
    if column is None:
        return None
    keys = frame[column]
    keys = keys[keys.notna() & (keys.astype(str) != "")]
    return int(keys.nunique())


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


def interval_pairs(columns) -> list[tuple[str, str]]:
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
    """Every column of a table that carries inference: interval bounds (:func:`interval_pairs`),
    p-values, test statistics and standard errors."""
    columns = [str(c) for c in columns]
    bounds = {c for pair in interval_pairs(columns) for c in pair}
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
        out[NOTE_COLUMN] = [new or str(old) for new, old in zip(notes, existing, strict=True)]
        return out
    pairs = interval_pairs(out.columns)
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
