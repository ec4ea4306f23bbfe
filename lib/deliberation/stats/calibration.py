"""How often each method rejects a true null, and covers a planted effect, by number of clusters.

This is where the cluster floor comes from (:data:`~deliberation.stats.small_samples.MIN_CLUSTERS`):
the smallest G of :data:`SIZES` from which a method's false-positive rate at zero effect is at
most 1.5 x alpha in every scenario. Each scenario draws whole synthetic experiments (clusters =
templates, cells = policy x ownership cells, 0/1 outcomes) and analyses them with the library's
own arithmetic: :func:`~deliberation.stats.cluster_t.contrast_inference` for the cluster t, and
the percentile cluster bootstrap (``(W @ sums) / (W @ counts)``, the p-value of
:func:`~deliberation.stats.bootstrap_p_value`) for the papers' method, vectorised over
replicates. The experiments lane recomputes the table (tests/stats/test_calibration.py) and fails
when a floor constant or docs/reading-small-samples.md disagrees with it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from deliberation.stats.cluster_t import METHOD, PAPER_METHOD, contrast_inference

SIZES = (3, 5, 10, 20, 60)
ALPHA = 0.05
TOLERANCE = 1.5  # a floor admits a false-positive rate up to 1.5 x alpha
PLANTED = 0.10  # the effect (10 points) whose interval coverage is measured


@dataclass(frozen=True)
class Scenario:
    """Synthetic experiments: ``draw(rng, replicates, G, effect)`` gives per-cluster
    ``(sums, counts)`` of shape (replicates, G, cells) and ``weights`` the contrast."""

    name: str
    draw: Callable[[np.random.Generator, int, int, float], tuple[np.ndarray, np.ndarray]]
    weights: np.ndarray
    coverage: bool = True  # planted effect unbiased (no clipping), so coverage is meaningful


def _two_sided(cells: int, rows: int, level_sd: float, contrast_sd: float, base: float = 0.5):
    """``cells`` cells on each side, ``rows`` rows each, per cluster: accuracy ``base`` + a
    cluster level (SD ``level_sd``) +- half the cluster's effect (SD ``contrast_sd`` around the
    planted effect): the design of the papers' H2 and H3 (8 ownership cells a side)."""

    def draw(rng: np.random.Generator, replicates: int, g: int, effect: float):
        level = rng.normal(0.0, level_sd, (replicates, g, 1))
        local = effect + rng.normal(0.0, contrast_sd, (replicates, g, 1))
        plus = np.clip(base + level + local / 2, 0, 1)
        minus = np.clip(base + level - local / 2, 0, 1)
        p = np.concatenate(
            [np.repeat(plus, cells, axis=2), np.repeat(minus, cells, axis=2)], axis=2
        )
        counts = np.full(p.shape, float(rows))
        return rng.binomial(rows, p).astype(float), counts

    return draw


def _unequal(replicates_max_rows: int = 8):
    """Two cells, 1-8 rows per cluster (unequal clusters), accuracy near the ceiling and
    varying by cluster (N(0.75, 0.15), clipped): the pooled ratio estimator at its hardest."""

    def draw(rng: np.random.Generator, replicates: int, g: int, effect: float):
        size = rng.integers(1, replicates_max_rows + 1, (replicates, g, 1)).astype(float)
        level = np.clip(rng.normal(0.75, 0.15, (replicates, g, 1)), 0.05, 0.95)
        p = np.concatenate(
            [np.clip(level + effect / 2, 0, 1), np.clip(level - effect / 2, 0, 1)], axis=2
        )
        counts = np.repeat(size, 2, axis=2)
        return rng.binomial(counts.astype(int), p).astype(float), counts

    return draw


def scenarios() -> list[Scenario]:
    """The scenarios a floor must hold in (the worst one sets it)."""
    h2 = np.r_[np.full(8, 1 / 8), np.full(8, -1 / 8)]
    return [
        Scenario("papers' design: 8 cells a side, 1 row each", _two_sided(8, 1, 0.058, 0.058), h2),
        Scenario(
            "varying effect: 4 cells a side, 2 rows, effect SD 0.2",
            _two_sided(4, 2, 0.058, 0.2),
            np.r_[np.full(4, 1 / 4), np.full(4, -1 / 4)],
        ),
        Scenario(
            "unequal clusters: 1-8 rows, accuracy near 0.75",
            _unequal(),
            np.r_[1.0, -1.0],
            coverage=False,
        ),  # fmt: skip
    ]


def _bootstrap(
    sums: np.ndarray, counts: np.ndarray, weights: np.ndarray, resamples: np.ndarray, ci: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(p, low, high) of the percentile cluster bootstrap for every replicate."""
    with np.errstate(divide="ignore", invalid="ignore"):
        dist = ((resamples @ sums) / (resamples @ counts)) @ weights  # (replicates, resamples)
    dist = np.where(np.isfinite(dist), dist, np.nan)
    below = (dist <= 1e-9).sum(axis=1)
    above = (dist >= -1e-9).sum(axis=1)
    r = np.isfinite(dist).sum(axis=1)
    p = np.minimum(1.0, 2 * np.minimum(1 + below, 1 + above) / (1 + r))
    low, high = np.nanquantile(dist, [(1 - ci) / 2, (1 + ci) / 2], axis=1)
    return p, low, high


def measure(
    scenario: Scenario,
    g: int,
    effect: float,
    *,
    replicates: int,
    resamples: int,
    seed: int,
    alpha: float = ALPHA,
) -> dict[str, tuple[float, float]]:
    """Per method: (rejection rate at ``alpha``, coverage of the (1 - alpha) interval of the
    true ``effect``) over ``replicates`` experiments of ``g`` clusters."""
    rng = np.random.default_rng(seed)
    ci = 1 - alpha
    counts_draw = rng.integers(0, g, (resamples, g))
    matrix = np.zeros((resamples, g))
    np.add.at(matrix, (np.arange(resamples)[:, None], counts_draw), 1.0)
    rejected = {METHOD: 0, PAPER_METHOD: 0}
    covered = {METHOD: 0, PAPER_METHOD: 0}
    for start in range(0, replicates, 250):
        n = min(250, replicates - start)
        sums, counts = scenario.draw(rng, n, g, effect)
        _, _, _, p, low, high = contrast_inference(sums, counts, scenario.weights, ci)
        rejected[METHOD] += int(np.sum(p < alpha))  # NaN p (no variation): not rejected
        covered[METHOD] += int(np.sum((low <= effect) & (effect <= high)))
        p, low, high = _bootstrap(sums, counts, scenario.weights, matrix, ci)
        rejected[PAPER_METHOD] += int(np.sum(p < alpha))
        covered[PAPER_METHOD] += int(np.sum((low <= effect) & (effect <= high)))
    return {m: (rejected[m] / replicates, covered[m] / replicates) for m in rejected}


def size_table(
    sizes: Sequence[int] = SIZES,
    *,
    replicates: int = 4000,
    resamples: int = 999,
    seed: int = 0,
    alpha: float = ALPHA,
    planted: float = PLANTED,
) -> pd.DataFrame:
    """One row per (scenario, G, method): the rejection rate at zero effect, its Monte Carlo
    error, and the coverage of the 95% interval at ``planted`` (where unbiased)."""
    records = []
    for number, scenario in enumerate(scenarios()):
        for g in sizes:
            common = dict(replicates=replicates, resamples=resamples, alpha=alpha)
            null = measure(scenario, g, 0.0, seed=seed + 1000 * number + g, **common)
            planted_run = (
                measure(scenario, g, planted, seed=seed + 1000 * number + g + 500, **common)
                if scenario.coverage
                else None
            )
            for method, (rate, _) in null.items():
                records.append(
                    {
                        "scenario": scenario.name,
                        "G": g,
                        "method": method,
                        "rejection at zero": rate,
                        "mc_error": float(np.sqrt(rate * (1 - rate) / replicates)),
                        f"coverage at {100 * planted:g} points": (
                            planted_run[method][1] if planted_run else float("nan")
                        ),
                    }
                )
    return pd.DataFrame(records)


def floor(table: pd.DataFrame, method: str, alpha: float = ALPHA) -> int | None:
    """The smallest G from which ``method``'s worst rejection rate at zero effect over the
    scenarios stays at most :data:`TOLERANCE` x alpha; None when it never does."""
    worst = table[table["method"] == method].groupby("G")["rejection at zero"].max().sort_index()
    ok = worst <= TOLERANCE * alpha + 1e-12
    passing = [g for g in worst.index if ok.loc[g:].all()]
    return int(passing[0]) if passing else None


def summary_table(table: pd.DataFrame) -> pd.DataFrame:
    """Rejection at zero (worst scenario) and coverage (worst scenario) by G, one column per
    method: the table docs/reading-small-samples.md shows."""
    coverage = [c for c in table.columns if c.startswith("coverage")][0]
    out = []
    for g, part in table.groupby("G", sort=True):
        row: dict[str, object] = {"G (clusters)": int(g)}
        for method, label in ((PAPER_METHOD, "percentile bootstrap"), (METHOD, "cluster t")):
            mine = part[part["method"] == method]
            row[f"{label}: rejection at 0 (worst)"] = round(
                float(mine["rejection at zero"].max()), 3
            )
            row[f"{label}: {coverage} (worst)"] = round(float(mine[coverage].min()), 3)
        out.append(row)
    return pd.DataFrame(out)
