"""Cluster bootstrap of cell-mean statistics, vectorised over resamples.

A statistic is a function of *cell means*, where a cell is a combination of column values (for
example policy x decoy ownership). Each cluster (a template, or a problem) is reduced once to a row
of per-cell sums and counts. A resample is a vector of cluster multiplicities drawn with
replacement (whole clusters, never rows), so the resampled cell means of all resamples are
``(W @ sums) / (W @ counts)`` for one ``(n_resamples, n_clusters)`` count matrix ``W``. ``W`` is
the bincount of ``rng.integers(0, K, (R, K))``, the index draws ``scipy.stats.bootstrap`` makes
at the time of writing (so with one seed both currently resample the same clusters).

Two-sided bootstrap p-value (``bootstrap_p_value``): with R resamples theta*_1..R and null value 0,
``p = min(1, 2 * min((1 + #{theta* <= 0}) / (1 + R), (1 + #{theta* >= 0}) / (1 + R)))``: twice
the smaller tail of the bootstrap distribution at the null, with the +1 correction so that p is
never 0 (its smallest value is 2 / (1 + R)). Resamples within 1e-9 of the null (float rounding
of an exact tie) count in both tails. Percentile intervals use linear interpolation between order
statistics, as ``scipy.stats.bootstrap(method="percentile")`` does.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pandas as pd

from deliberation.stats.small_samples import call_column, distinct_calls

logger = logging.getLogger(__name__)

Weighting = Literal["rows", "clusters"]
_Combine = Callable[[np.ndarray], np.ndarray]
_CellKey = tuple[Hashable, ...]

# Upper bound on the entries of one resample-count block; resamples are drawn in blocks of
# rows so memory stays bounded for many clusters. The block size depends only on the number of
# clusters, so results are identical however many statistics are computed together.
_BLOCK_ENTRIES = 1 << 21
# Bootstrap statistics within this distance of the null value count as ties (float rounding).
_TIE_TOLERANCE = 1e-9


@dataclass(frozen=True)
class BootstrapResult:
    """A bootstrap estimate with its percentile interval, two-sided p-value and distribution."""

    estimate: float
    low: float
    high: float
    p_value: float
    distribution: np.ndarray = field(repr=False, compare=False)
    n_clusters: int
    n_resamples: int
    ci: float = 0.95
    label: str = ""
    n_rows: int | None = None  # rows the statistic read
    n_calls: int | None = None  # distinct model calls behind them (None: rows name no call)

    def __post_init__(self) -> None:
        self.distribution.setflags(write=False)

    def as_row(self, scale: float = 1.0) -> dict[str, object]:
        """One table row; ``scale=100`` reports proportions as percentage points."""
        return {
            "label": self.label,
            "estimate": self.estimate * scale,
            "low": self.low * scale,
            "high": self.high * scale,
            "p_value": self.p_value,
            "n_clusters": self.n_clusters,
            "n_resamples": self.n_resamples,
            "ci": self.ci,
        }


def results_frame(
    results: Mapping[str, BootstrapResult] | Iterable[BootstrapResult], scale: float = 1.0
) -> pd.DataFrame:
    """A tidy table of bootstrap results, one row each; mapping keys become the ``label``."""
    if isinstance(results, Mapping):
        rows = [{**r.as_row(scale), "label": name} for name, r in results.items()]
    else:
        rows = [r.as_row(scale) for r in results]
    columns = ["label", "estimate", "low", "high", "p_value", "n_clusters", "n_resamples", "ci"]
    return pd.DataFrame(rows, columns=columns)


@dataclass(frozen=True)
class CellStatistic:
    """A function of cell means; cells are value combinations of the ``by`` columns.

    ``combine`` maps an ``(n_resamples, n_cells)`` array of cell means (columns in the order of
    ``cells``) to ``(n_resamples,)`` estimates. ``weighting="rows"`` pools rows within a cell
    (ratio of totals); ``"clusters"`` first averages each cluster's rows, so each cluster counts
    once per cell. Rows outside the listed cells are ignored. ``weights`` is set for linear
    contrasts (estimate = cell means @ weights) and ``None`` otherwise.
    """

    value: str
    by: tuple[str, ...]
    cells: tuple[_CellKey, ...]
    combine: _Combine = field(repr=False, compare=False)
    weighting: Weighting = "rows"
    label: str = ""
    weights: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        if self.weighting not in ("rows", "clusters"):
            raise ValueError(f"weighting must be 'rows' or 'clusters', not {self.weighting!r}")
        if not self.cells:
            raise ValueError(f"statistic {self.label!r} lists no cells")
        for cell in self.cells:
            if len(cell) != len(self.by):
                raise ValueError(
                    f"statistic {self.label!r}: cell {cell!r} has {len(cell)} values "
                    f"but by={self.by!r} has {len(self.by)} columns"
                )
        if len(set(self.cells)) != len(self.cells):
            raise ValueError(f"statistic {self.label!r} lists a cell twice")


def _as_key(key: Hashable | _CellKey) -> _CellKey:
    return key if isinstance(key, tuple) else (key,)


def mean_of(
    value: str = "correct",
    where: Mapping[str, Hashable] | None = None,
    *,
    weighting: Weighting = "rows",
    label: str = "",
) -> CellStatistic:
    """The mean of ``value`` over rows matching ``where`` (all rows if ``None``)."""
    where = dict(where or {})
    return CellStatistic(
        value=value,
        by=tuple(where),
        cells=(tuple(where.values()),),
        combine=lambda means: means[:, 0],
        weighting=weighting,
        label=label or f"mean {value}",
        weights=(1.0,),
    )


def linear_contrast(
    weights: Mapping[Hashable | _CellKey, float],
    by: str | Sequence[str],
    value: str = "correct",
    *,
    weighting: Weighting = "rows",
    label: str = "",
) -> CellStatistic:
    """Sum over cells of weight x cell mean; keys are cells (tuples of ``by`` values)."""
    by = (by,) if isinstance(by, str) else tuple(by)
    cells = tuple(_as_key(k) for k in weights)
    w = np.array([float(weights[k]) for k in weights])
    return CellStatistic(
        value=value,
        by=by,
        cells=cells,
        combine=lambda means: means @ w,
        weighting=weighting,
        label=label or "linear contrast",
        weights=tuple(w.tolist()),
    )


@dataclass(frozen=True)
class ClusterTable:
    """Per-cluster sums and counts of a statistic's outcome in each of its cells."""

    clusters: np.ndarray  # (K,) cluster ids, sorted
    sums: np.ndarray  # (K, C)
    counts: np.ndarray  # (K, C)
    n_rows: int | None = None  # rows in the statistic's cells
    n_calls: int | None = None  # distinct model calls behind them (small_samples.distinct_calls)
    # the calls read by each cell (None: rows name no call); a call counts once per cell
    cell_calls: tuple[frozenset, ...] | None = None

    def cell_means(self) -> np.ndarray:
        """Observed cell means, shape (C,)."""
        return self.sums.sum(axis=0) / self.counts.sum(axis=0)


def require_columns(frame: pd.DataFrame, columns: Iterable[str], what: str) -> None:
    """Raise a clear error naming any column ``what`` needs that ``frame`` lacks."""
    missing = [c for c in dict.fromkeys(columns) if c not in frame.columns]
    if missing:
        raise KeyError(
            f"{what}: results frame has no column(s) {missing}; it has {list(frame.columns)}"
        )


def numeric_values(frame: pd.DataFrame, column: str, what: str) -> np.ndarray:
    """``frame[column]`` as float64, with a clear error for non-numeric or missing values."""
    series = frame[column]
    if series.dtype == bool:
        series = series.astype(np.int8)
    if not pd.api.types.is_numeric_dtype(series):
        raise TypeError(f"{what}: column {column!r} must be numeric, not {series.dtype}")
    values = series.to_numpy(dtype=float, na_value=np.nan)
    n_missing = int(np.isnan(values).sum())
    if n_missing:
        raise ValueError(f"{what}: column {column!r} has {n_missing} missing value(s)")
    return values


def _cell_codes(
    frame: pd.DataFrame, by: tuple[str, ...], cells: tuple[_CellKey, ...]
) -> np.ndarray:
    """Index into ``cells`` of each row's ``by`` values, -1 for rows in no listed cell."""
    codes = np.zeros(len(frame), dtype=np.int64)
    cell_codes = np.zeros(len(cells), dtype=np.int64)
    for j, column in enumerate(by):
        levels = pd.Index(list(dict.fromkeys(cell[j] for cell in cells)), dtype=object)
        row_level = levels.get_indexer(frame[column].astype(object))
        # Mixed-radix code of the level combination; -1 marks a level outside every cell.
        codes = np.where((codes < 0) | (row_level < 0), -1, codes * len(levels) + row_level)
        cell_codes = cell_codes * len(levels) + levels.get_indexer([c[j] for c in cells])
    order = np.argsort(cell_codes)
    position = np.searchsorted(cell_codes[order], codes).clip(max=len(cells) - 1)
    found = (codes >= 0) & (cell_codes[order][position] == codes)
    return np.where(found, order[position], -1)


def tabulate_clusters(
    frame: pd.DataFrame, statistic: CellStatistic, cluster: str = "template"
) -> ClusterTable:
    """Reduce ``frame`` to per-cluster sums and counts in each cell of ``statistic``; rows
    naming the same call (:func:`~deliberation.stats.small_samples.call_column`) count once
    per cell."""
    what = f"statistic {statistic.label!r}"
    require_columns(frame, [cluster, statistic.value, *statistic.by], what)
    cell = _cell_codes(frame, statistic.by, statistic.cells)
    used = cell >= 0
    rows = frame.loc[used]
    cell = cell[used]
    n_rows, n_calls, cell_calls = len(rows), distinct_calls(rows), None
    column = call_column(rows)
    if column is not None:
        # Identical requests are one observation: a call copied into a cell (the same memory
        # under two budgets, the empty memory in every variant) counts once there.
        keys = rows[column].astype(object)
        named = (keys.notna() & (keys.astype(str) != "")).to_numpy()
        copy = named & pd.Series(list(zip(cell, keys, strict=True))).duplicated().to_numpy()
        cell_calls = tuple(
            frozenset(keys.to_numpy()[named & (cell == j)]) for j in range(len(statistic.cells))
        )
        rows, cell = rows.loc[~copy], cell[~copy]
    values = numeric_values(rows, statistic.value, what)
    if rows[cluster].isna().any():
        raise ValueError(f"{what}: column {cluster!r} (the cluster id) has missing values")
    codes, clusters = pd.factorize(rows[cluster], sort=True)
    n_clusters, n_cells = len(clusters), len(statistic.cells)
    flat = codes * n_cells + cell
    size = n_clusters * n_cells
    sums = np.bincount(flat, weights=values, minlength=size).reshape(n_clusters, n_cells)
    counts = np.bincount(flat, minlength=size).reshape(n_clusters, n_cells).astype(float)
    empty = [statistic.cells[j] for j in np.flatnonzero(counts.sum(axis=0) == 0)]
    if empty:
        raise ValueError(
            f"{what}: no rows in cell(s) {empty[:5]} of columns {list(statistic.by)}"
            + (f" (and {len(empty) - 5} more)" if len(empty) > 5 else "")
        )
    if statistic.weighting == "clusters":
        present = counts > 0
        sums = np.divide(sums, counts, out=np.zeros_like(sums), where=present)
        counts = present.astype(float)
    return ClusterTable(
        clusters=np.asarray(clusters),
        sums=sums,
        counts=counts,
        n_rows=n_rows,
        n_calls=n_calls,
        cell_calls=cell_calls,
    )


def resample_counts(n_clusters: int, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """An ``(n_resamples, n_clusters)`` matrix of multiplicities of clusters drawn with replacement.

    Each row is the bincount of ``n_clusters`` uniform draws, i.e. one ordinary bootstrap resample.
    """
    draws = rng.integers(0, n_clusters, size=(n_resamples, n_clusters))
    draws += np.arange(n_resamples)[:, None] * n_clusters
    counts = np.bincount(draws.ravel(), minlength=n_resamples * n_clusters)
    return counts.reshape(n_resamples, n_clusters).astype(float)


def bootstrap_p_value(distribution: np.ndarray, null: float = 0.0) -> float:
    """Two-sided p: twice the smaller tail at ``null``, each (1 + count) / (1 + R), capped at 1.

    Values within 1e-9 of ``null`` are ties (float rounding) and count in both tails.
    """
    dist = np.asarray(distribution, dtype=float)
    n = dist.size
    if n == 0:
        raise ValueError("bootstrap_p_value needs at least one resample")
    # Resamples within float rounding of the null are ties and count in both tails.
    tolerance = _TIE_TOLERANCE * max(1.0, abs(null))
    below = (1 + np.count_nonzero(dist <= null + tolerance)) / (1 + n)
    above = (1 + np.count_nonzero(dist >= null - tolerance)) / (1 + n)
    return float(min(1.0, 2 * min(below, above)))


def percentile_interval(distribution: np.ndarray, ci: float = 0.95) -> tuple[float, float]:
    """Equal-tailed percentile interval (linear interpolation, as ``scipy.stats.bootstrap``)."""
    alpha = (1 - ci) / 2
    low, high = np.quantile(np.asarray(distribution, dtype=float), [alpha, 1 - alpha])
    return float(low), float(high)


def _check_settings(n_resamples: int, ci: float) -> None:
    if int(n_resamples) != n_resamples or n_resamples < 2:
        raise ValueError(f"n_resamples must be an integer >= 2, not {n_resamples!r}")
    if not 0 < ci < 1:
        raise ValueError(f"ci must be between 0 and 1, not {ci!r}")


def _evaluate(statistic: CellStatistic, means: np.ndarray) -> np.ndarray:
    out = np.asarray(statistic.combine(means), dtype=float)
    if out.shape != (means.shape[0],):
        raise ValueError(
            f"statistic {statistic.label!r}: combine returned shape {out.shape}, "
            f"expected ({means.shape[0]},)"
        )
    return out


def _result(
    statistic: CellStatistic, table: ClusterTable, dist: np.ndarray, ci: float
) -> BootstrapResult:
    estimate = float(_evaluate(statistic, table.cell_means()[None, :])[0])
    if not np.isfinite(estimate):
        raise ValueError(f"statistic {statistic.label!r} is not finite on the observed data")
    finite = np.isfinite(dist)
    if not finite.all():
        logger.warning(
            "statistic %r undefined in %d of %d resamples (a cell drew no rows); dropped",
            statistic.label,
            int((~finite).sum()),
            dist.size,
        )
        dist = dist[finite]
    low, high = percentile_interval(dist, ci)
    return BootstrapResult(
        estimate=estimate,
        low=low,
        high=high,
        p_value=bootstrap_p_value(dist),
        distribution=dist,
        n_clusters=len(table.clusters),
        n_resamples=int(dist.size),
        ci=ci,
        label=statistic.label,
        n_rows=table.n_rows,
        n_calls=table.n_calls,
    )


def cluster_bootstrap_many(
    frame: pd.DataFrame,
    statistics: Mapping[str, CellStatistic],
    cluster: str = "template",
    n_resamples: int = 10_000,
    ci: float = 0.95,
    seed: int = 0,
) -> dict[str, BootstrapResult]:
    """Bootstrap several statistics at once, each exactly as ``cluster_bootstrap`` would.

    Statistics over the same number of clusters share the resample-count matrix (common random
    numbers), so differences between them are not blurred by independent resampling noise.
    """
    _check_settings(n_resamples, ci)
    tables = {name: tabulate_clusters(frame, stat, cluster) for name, stat in statistics.items()}
    by_size: dict[int, list[str]] = {}
    for name, table in tables.items():
        by_size.setdefault(len(table.clusters), []).append(name)
    dists = {name: np.empty(n_resamples) for name in statistics}
    for n_clusters, names in by_size.items():
        # One (K, 2 * total cells) matrix of sums then counts, so one matmul serves them all.
        stacked = np.hstack([tables[n].sums for n in names] + [tables[n].counts for n in names])
        edges = np.cumsum([0] + [tables[n].sums.shape[1] for n in names])
        rng = np.random.default_rng(seed)
        block = max(1, _BLOCK_ENTRIES // n_clusters)
        for start in range(0, n_resamples, block):
            stop = min(n_resamples, start + block)
            totals = resample_counts(n_clusters, stop - start, rng) @ stacked
            sums, counts = totals[:, : edges[-1]], totals[:, edges[-1] :]
            with np.errstate(invalid="ignore", divide="ignore"):
                means = sums / counts
            for i, name in enumerate(names):
                cells = means[:, edges[i] : edges[i + 1]]
                dists[name][start:stop] = _evaluate(statistics[name], cells)
    return {name: _result(statistics[name], tables[name], dists[name], ci) for name in statistics}


def cluster_bootstrap(
    frame: pd.DataFrame,
    statistic: CellStatistic,
    cluster: str = "template",
    n_resamples: int = 10_000,
    ci: float = 0.95,
    seed: int = 0,
) -> BootstrapResult:
    """Percentile bootstrap of ``statistic`` resampling whole clusters with replacement.

    Deterministic given ``seed``; independent of row order. Build statistics with ``mean_of``,
    ``linear_contrast`` or the contrast helpers in ``deliberation.stats``.
    """
    if not isinstance(statistic, CellStatistic):
        raise TypeError(
            "cluster_bootstrap needs a CellStatistic (see mean_of, linear_contrast, "
            f"difference_statistic, interaction_statistic), not {type(statistic).__name__}"
        )
    return cluster_bootstrap_many(frame, {"_": statistic}, cluster, n_resamples, ci, seed)["_"]
