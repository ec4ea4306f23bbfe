"""Small samples said plainly: no interval from fewer than a minimum number of clusters.

A percentile bootstrap over two templates has three possible outcomes and one template gives
an interval of width zero: neither is a 95% interval. Every published table with ``low``,
``high`` and ``n_clusters`` columns passes through :func:`withhold_small_intervals` (the table
writer calls it), so a row below the minimum keeps its estimate, loses its bounds, and says why
in its ``interval`` column ("n = 2 clusters, no interval").

Rows are not observations either: at temperature 0 identical prompts are one cached call, so
"8 rows" can be one answer copied 8 times. :func:`distinct_calls` counts the calls behind a set
of rows (distinct request keys), which tables publish as ``n_calls`` beside ``n_rows``, and
:func:`calls_note` says it in words ("192 rows from 79 distinct calls").
"""

from __future__ import annotations

import numpy as np
import pandas as pd

MIN_CLUSTERS = 5  # the default; a profile's `min_interval_clusters` overrides it
NOTE_COLUMN = "interval"
# Columns naming the model call behind a row, in order of preference: the request's cache key
# (``key`` in results frames, ``request_key`` in ``deliberation run`` output), else a prompt hash.
CALL_COLUMNS = ("key", "request_key", "cache_key", "prompt_hash")


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
    """Why a row has no interval ("" when it has one)."""
    if n_clusters >= min_clusters:
        return ""
    unit = "cluster" if n_clusters == 1 else "clusters"
    return f"n = {n_clusters} {unit}, no interval"


def interval_pairs(columns) -> list[tuple[str, str]]:
    """The (low, high) column pairs of a table: ``low``/``high`` and every ``<x> low``/``<x>
    high``, ``<x>_low``/``<x>_high`` or ``low_<unit>``/``high_<unit>`` (a table of several
    effects, e.g. the tag ablation, or bounds named with their unit)."""
    columns = list(columns)
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


def withhold_small_intervals(frame: pd.DataFrame, min_clusters: int = MIN_CLUSTERS) -> pd.DataFrame:
    """``frame`` with every interval (:func:`interval_pairs`) emptied where ``n_clusters`` is
    below ``min_clusters`` and an ``interval`` column after the last bound saying so; a frame
    without ``n_clusters`` or bounds (or with its note already) is returned unchanged."""
    if min_clusters < 1:
        raise ValueError(f"min_clusters must be >= 1, got {min_clusters}")
    pairs = interval_pairs(frame.columns)
    if "n_clusters" not in frame.columns or not pairs or NOTE_COLUMN in frame.columns:
        return frame
    clusters = pd.to_numeric(frame["n_clusters"], errors="coerce")
    small = clusters.notna() & (clusters < min_clusters)
    out = frame.copy()
    for pair in pairs:
        for column in pair:
            out[column] = out[column].astype(float).where(~small, np.nan)
    notes = [
        interval_note(int(n), min_clusters) if is_small else ""
        for n, is_small in zip(clusters.fillna(0), small, strict=True)
    ]
    after = "high" if ("low", "high") in pairs else pairs[-1][1]
    out.insert(out.columns.get_loc(after) + 1, NOTE_COLUMN, notes)
    return out
