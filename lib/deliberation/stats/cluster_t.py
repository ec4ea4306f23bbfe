"""The companion's inference for cell-mean contrasts: a cluster-robust t with G - 1 degrees of
freedom, right-sized from few clusters on (its floor is measured: docs/reading-small-samples.md).

A statistic is a linear contrast ``w @ mu`` of cell means (:class:`~deliberation.stats.CellStatistic`:
``mean_of``, ``linear_contrast``, the contrast helpers). Its standard error is the CR1 sandwich
of the regression of the outcome on cell indicators, clustered by ``cluster``: with cluster
scores ``s_g = sum_c w_c (sums_gc - counts_gc mu_c) / N_c``, ``V = G/(G-1) (N-1)/(N-C) sum_g s_g^2``
(N rows, C cells), exactly what ``statsmodels`` OLS gives with ``cov_type="cluster"`` and
``use_t=True`` (tests/stats/test_cluster_t.py checks it), computed here in closed form because
one table asks for hundreds of them. The reference distribution is Student's t with G - 1
degrees of freedom (Bell and McCaffrey; Cameron, Gelbach and Miller 2008), whose size at zero
effect :mod:`deliberation.stats.calibration` measures.

Below :data:`~deliberation.stats.small_samples.MIN_CLUSTERS` clusters a result carries its
estimate and counts only, and says why (``note``). So does a contrast whose two arms read the
very same calls (R1-rel where the labeller keeps every fact is R1: the difference is 0 by
construction, not a finding) and one whose clusters agree exactly (no variation to test
against). The papers' own percentile bootstrap is attached as ``paper`` where it has enough
clusters of its own (:data:`~deliberation.stats.small_samples.PAPER_METHOD_MIN_CLUSTERS`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
from scipy import stats as sps

from deliberation.stats.bootstrap import (
    BootstrapResult,
    CellStatistic,
    ClusterTable,
    cluster_bootstrap_many,
    tabulate_clusters,
)
from deliberation.stats.small_samples import (
    MIN_CLUSTERS,
    PAPER_METHOD_MIN_CLUSTERS,
    interval_note,
)

METHOD = "cluster-robust t (CR1, G - 1 df)"
PAPER_METHOD = "percentile cluster bootstrap (the papers' method)"
_NO_VARIATION = 1e-12


@dataclass(frozen=True)
class ClusterEstimate:
    """An estimate with its inference (NaN where there is none, and ``note`` says why)."""

    estimate: float
    low: float
    high: float
    p_value: float
    standard_error: float
    t_statistic: float
    df: int
    n_clusters: int
    label: str = ""
    ci: float = 0.95
    n_rows: int | None = None  # rows the statistic read
    n_calls: int | None = None  # distinct calls behind them (copies in one cell count once)
    shared_calls: int | None = None  # calls read on both sides of the contrast
    note: str = ""  # why there is no inference ("" when there is)
    paper: BootstrapResult | None = None  # the papers' percentile bootstrap, where it has its floor

    def as_row(self, scale: float = 1.0) -> dict[str, object]:
        """One table row; ``scale=100`` reports proportions as percentage points."""
        return {
            "label": self.label,
            "estimate": self.estimate * scale,
            "low": self.low * scale,
            "high": self.high * scale,
            "p_value": self.p_value,
            "n_clusters": self.n_clusters,
            "interval": self.note,
        }


def contrast_inference(
    sums: np.ndarray, counts: np.ndarray, weights: np.ndarray, ci: float = 0.95
) -> tuple[np.ndarray, ...]:
    """(estimate, standard error, t, p, low, high) of ``weights @ cell means`` from per-cluster
    ``sums`` and ``counts`` of shape (..., G, C): the CR1 sandwich with G - 1 df, vectorised over
    leading axes (the calibration runs thousands of replicates at once). NaN where the clusters
    agree exactly (standard error 0) or there is a single cluster."""
    sums, counts = np.asarray(sums, dtype=float), np.asarray(counts, dtype=float)
    g, c = sums.shape[-2], sums.shape[-1]
    totals = counts.sum(axis=-2)
    with np.errstate(divide="ignore", invalid="ignore"):
        means = sums.sum(axis=-2) / totals
        estimate = means @ weights
        scores = ((sums - counts * means[..., None, :]) / totals[..., None, :]) @ weights
        n = counts.sum(axis=(-2, -1))
        small_sample = np.where(n > c, (n - 1) / (n - c), 1.0)
        variance = g / (g - 1) * small_sample * (scores**2).sum(axis=-1) if g > 1 else np.nan
        se = np.sqrt(variance)
        se = np.where(se > _NO_VARIATION, se, np.nan)
        t = estimate / se
    df = max(g - 1, 1)
    p = 2 * sps.t.sf(np.abs(t), df)
    half = sps.t.ppf(0.5 + ci / 2, df) * se
    return estimate, se, t, p, estimate - half, estimate + half


def _sides(table: ClusterTable, weights: np.ndarray) -> tuple[frozenset, frozenset] | None:
    if table.cell_calls is None:
        return None
    plus = frozenset().union(*(k for k, w in zip(table.cell_calls, weights, strict=True) if w > 0))
    minus = frozenset().union(*(k for k, w in zip(table.cell_calls, weights, strict=True) if w < 0))
    return plus, minus


def _estimate(
    statistic: CellStatistic, table: ClusterTable, ci: float, min_clusters: int
) -> ClusterEstimate:
    if statistic.weights is None:
        raise TypeError(
            f"statistic {statistic.label!r} is not a linear contrast of cell means (no weights);"
            " the cluster t needs one (mean_of, linear_contrast, the contrast helpers)"
        )
    weights = np.asarray(statistic.weights, dtype=float)
    estimate, se, t, p, low, high = (
        float(v) for v in contrast_inference(table.sums, table.counts, weights, ci)
    )
    if not np.isfinite(estimate):
        raise ValueError(f"statistic {statistic.label!r} is not finite on the observed data")
    g = len(table.clusters)
    sides = _sides(table, weights)
    shared = None
    note = interval_note(g, min_clusters)
    if sides is not None and sides[0] and sides[1]:
        shared = len(sides[0] & sides[1])
        if sides[0] == sides[1]:  # said at any number of clusters: 0 is no finding
            same = f"both sides read the same {len(sides[0])} calls: equal by construction"
            note = f"{note}; {same}" if note else f"{same}, no test"
    if not note and not np.isfinite(se):
        note = f"the {g} clusters agree exactly: no variation to test against"
    if note:
        low = high = p = se = t = float("nan")
    return ClusterEstimate(
        estimate=estimate,
        low=low,
        high=high,
        p_value=p,
        standard_error=se,
        t_statistic=t,
        df=g - 1,
        n_clusters=g,
        label=statistic.label,
        ci=ci,
        n_rows=table.n_rows,
        n_calls=table.n_calls,
        shared_calls=shared,
        note=note,
    )


def cluster_t_many(
    frame: pd.DataFrame,
    statistics: Mapping[str, CellStatistic],
    cluster: str = "template",
    ci: float = 0.95,
    *,
    n_resamples: int = 0,
    seed: int = 0,
    min_clusters: int = MIN_CLUSTERS,
) -> dict[str, ClusterEstimate]:
    """Each statistic's estimate with its cluster-robust t inference (none below
    ``min_clusters`` clusters). With ``n_resamples`` the papers' percentile bootstrap
    (``cluster_bootstrap_many`` with ``seed``) is attached as ``paper`` to the statistics with
    at least :data:`PAPER_METHOD_MIN_CLUSTERS` clusters."""
    if not 0 < ci < 1:
        raise ValueError(f"ci must be between 0 and 1, not {ci!r}")
    tables = {name: tabulate_clusters(frame, stat, cluster) for name, stat in statistics.items()}
    results = {
        name: _estimate(statistics[name], tables[name], ci, min_clusters) for name in statistics
    }
    enough = {
        name: statistics[name]
        for name, table in tables.items()
        if len(table.clusters) >= max(PAPER_METHOD_MIN_CLUSTERS, min_clusters)
    }
    if n_resamples and enough:
        paper = cluster_bootstrap_many(frame, enough, cluster, n_resamples, ci, seed)
        for name, result in paper.items():
            results[name] = _with_paper(results[name], result)
    return results


def _with_paper(result: ClusterEstimate, paper: BootstrapResult) -> ClusterEstimate:
    return replace(result, paper=paper)


def cluster_t(
    frame: pd.DataFrame,
    statistic: CellStatistic,
    cluster: str = "template",
    ci: float = 0.95,
    *,
    min_clusters: int = MIN_CLUSTERS,
) -> ClusterEstimate:
    """One statistic's :func:`cluster_t_many`."""
    return cluster_t_many(frame, {"_": statistic}, cluster, ci, min_clusters=min_clusters)["_"]
