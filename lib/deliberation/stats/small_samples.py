"""Small samples said plainly: no interval from fewer than a minimum number of clusters.

A percentile bootstrap over two templates has three possible outcomes and one template gives
an interval of width zero: neither is a 95% interval. Every published table with ``low``,
``high`` and ``n_clusters`` columns passes through :func:`withhold_small_intervals` (the table
writer calls it), so a row below the minimum keeps its estimate, loses its bounds, and says why
in its ``interval`` column ("n = 2 clusters, no interval").
"""

from __future__ import annotations

import numpy as np
import pandas as pd

MIN_CLUSTERS = 5  # the default; a profile's `min_interval_clusters` overrides it
INTERVAL_COLUMNS = ("low", "high", "n_clusters")
NOTE_COLUMN = "interval"


def interval_note(n_clusters: int, min_clusters: int = MIN_CLUSTERS) -> str:
    """Why a row has no interval ("" when it has one)."""
    if n_clusters >= min_clusters:
        return ""
    unit = "cluster" if n_clusters == 1 else "clusters"
    return f"n = {n_clusters} {unit}, no interval"


def withhold_small_intervals(frame: pd.DataFrame, min_clusters: int = MIN_CLUSTERS) -> pd.DataFrame:
    """``frame`` with ``low``/``high`` emptied where ``n_clusters`` is below ``min_clusters``
    and an ``interval`` column after ``high`` saying so; a frame without those columns (or
    with its note already) is returned unchanged."""
    if min_clusters < 1:
        raise ValueError(f"min_clusters must be >= 1, got {min_clusters}")
    if not set(INTERVAL_COLUMNS) <= set(frame.columns) or NOTE_COLUMN in frame.columns:
        return frame
    clusters = pd.to_numeric(frame["n_clusters"], errors="coerce")
    small = clusters.notna() & (clusters < min_clusters)
    out = frame.copy()
    for column in ("low", "high"):
        out[column] = out[column].astype(float).where(~small, np.nan)
    notes = [
        interval_note(int(n), min_clusters) if is_small else ""
        for n, is_small in zip(clusters.fillna(0), small, strict=True)
    ]
    out.insert(out.columns.get_loc("high") + 1, NOTE_COLUMN, notes)
    return out
