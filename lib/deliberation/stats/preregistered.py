"""The three pre-specified tests of paper 1, Holm-adjusted together.

- H1: (R1 - B4 | decoys shared) - (R1 - B4 | decoys private), averaged with equal weight over
  the support x irrelevant ownership cells. Secondary (reported, not in the Holm family): the
  same interaction against Random, and at the fixed-7-items control if its rows are given.
- H2: R1 minus Random accuracy on average.
- H3: R1-rel minus R1 accuracy on average.

"On average" means pooled over the distinct calls passed in (every template x variant x budget
row of the two policies, a call copied within a cell counted once); with a balanced design this
equals the equal-weight average over cells.

Inference is the cluster-robust t with G - 1 df (:mod:`deliberation.stats.cluster_t`), none
below the cluster floor; the papers' percentile bootstrap is reported beside it where it has
enough clusters of its own. With ``sensitivity_cluster`` (the template's domain: templates
sit in 12 domains of 5, and templates of one domain may move together) every test is repeated
with that column as the cluster, reported beside the main result and outside the Holm family.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np
import pandas as pd

from deliberation.stats.bootstrap import CellStatistic
from deliberation.stats.cluster_t import ClusterEstimate, cluster_t_many
from deliberation.stats.contrasts import difference_statistic, interaction_statistic
from deliberation.stats.multiple import holm
from deliberation.stats.small_samples import MIN_CLUSTERS

_PRIMARY = ("H1", "H2", "H3")
PAPER_COLUMNS = ("paper bootstrap low", "paper bootstrap high", "paper bootstrap p")


@dataclass(frozen=True)
class PreregisteredTests:
    """H1-H3 with raw and Holm-adjusted p-values, the secondary H1 variants and the
    sensitivity rows (the same tests with another cluster)."""

    primary: Mapping[str, ClusterEstimate]
    p_holm: Mapping[str, float]
    secondary: Mapping[str, ClusterEstimate] = field(default_factory=dict)
    descriptions: Mapping[str, str] = field(default_factory=dict)
    sensitivity: Mapping[str, ClusterEstimate] = field(default_factory=dict)
    clusters: Mapping[str, str] = field(default_factory=dict)  # test -> its cluster column

    def __post_init__(self) -> None:
        for name in ("primary", "p_holm", "secondary", "descriptions", "sensitivity", "clusters"):
            object.__setattr__(self, name, MappingProxyType(dict(getattr(self, name))))

    def table(self, scale: float = 1.0) -> pd.DataFrame:
        """One row per test: estimate, interval (or why none), raw and Holm p (secondary and
        sensitivity rows have no Holm p), the cluster and the rows, distinct calls and calls
        shared by both sides each test read, and the papers' percentile bootstrap where it
        has its floor."""
        rows = []
        groups = (
            ("primary", self.primary),
            ("secondary", self.secondary),
            ("sensitivity", self.sensitivity),
        )
        for family, results in groups:
            for name, result in results.items():
                row = result.as_row(scale)
                paper = result.paper
                rows.append(
                    {
                        "test": name,
                        "family": family,
                        "description": self.descriptions.get(name, result.label),
                        "estimate": row["estimate"],
                        "low": row["low"],
                        "high": row["high"],
                        "interval": result.note,
                        "p_raw": result.p_value,
                        "p_holm": self.p_holm.get(name, float("nan")),
                        "cluster": self.clusters.get(name, ""),
                        "n_clusters": result.n_clusters,
                        "n_rows": result.n_rows,
                        "n_calls": result.n_calls,
                        "shared_calls": result.shared_calls,
                        PAPER_COLUMNS[0]: paper.low * scale if paper else float("nan"),
                        PAPER_COLUMNS[1]: paper.high * scale if paper else float("nan"),
                        PAPER_COLUMNS[2]: paper.p_value if paper else float("nan"),
                        "n_resamples": paper.n_resamples if paper else float("nan"),
                    }
                )
        table = pd.DataFrame(rows)
        # Rows that name no model call (a hand-made frame) have no calls to report.
        for column in ("n_calls", "shared_calls"):
            if table[column].isna().all():
                table = table.drop(columns=column)
        return table


def holm_over_tested(results: Mapping[str, ClusterEstimate]) -> dict[str, float]:
    """Holm-adjusted p of each test; a test without a p (equal by construction, no variation)
    enters the family as p = 1, one that can never reject; none at all below the floor."""
    raw = [r.p_value for r in results.values()]
    if all(np.isnan(p) for p in raw):
        return dict.fromkeys(results, float("nan"))
    adjusted = holm([1.0 if np.isnan(p) else p for p in raw])
    return {
        name: float("nan") if np.isnan(p) else float(a)
        for (name, p), a in zip(zip(results, raw, strict=True), adjusted, strict=True)
    }


def preregistered_tests(
    frame: pd.DataFrame,
    *,
    policy: str = "policy",
    value: str = "correct",
    cluster: str = "template",
    rarity: Hashable = "R1",
    first_mention: Hashable = "B4",
    random: Hashable = "Random",
    relevance: Hashable = "R1-rel",
    decoy: str = "decoy",
    decoy_levels: tuple[Hashable, Hashable] = ("shared", "private"),
    average_over: Sequence[str] = ("support", "irrelevant"),
    fixed_count_frame: pd.DataFrame | None = None,
    sensitivity_cluster: str | None = None,
    n_resamples: int = 10_000,
    ci: float = 0.95,
    seed: int = 0,
    min_clusters: int = MIN_CLUSTERS,
) -> PreregisteredTests:
    """Run H1, H2, H3 on ``frame`` (one row per decision call) and Holm-adjust them together.

    Pass only the rows that belong in the test (e.g. the primary budget). ``fixed_count_frame``
    (rows of the fixed-7-items control, same columns) adds a secondary H1 on those rows;
    ``sensitivity_cluster`` (e.g. ``"domain"``) repeats H1-H3 clustered by that column.
    ``n_resamples`` and ``seed``: the papers' percentile bootstrap, shown beside the cluster t
    where it has its own floor of clusters.
    """
    h1_kwargs = dict(
        factor=decoy, levels=decoy_levels, by=policy, value=value, average_over=average_over
    )
    shared, private = decoy_levels
    descriptions = {
        "H1": f"({rarity} - {first_mention} | {decoy} {shared}) - (... | {decoy} {private})",
        "H2": f"{rarity} - {random}",
        "H3": f"{relevance} - {rarity}",
        f"H1 vs {random}": f"({rarity} - {random} | {decoy} {shared}) - (... | {decoy} {private})",
    }
    statistics: dict[str, CellStatistic] = {
        "H1": interaction_statistic(frame, rarity, first_mention, **h1_kwargs),
        "H2": difference_statistic(frame, rarity, random, by=policy, value=value),
        "H3": difference_statistic(frame, relevance, rarity, by=policy, value=value),
        f"H1 vs {random}": interaction_statistic(frame, rarity, random, **h1_kwargs),
    }
    options = dict(n_resamples=n_resamples, seed=seed, min_clusters=min_clusters)
    results = cluster_t_many(frame, statistics, cluster, ci, **options)
    clusters = dict.fromkeys(statistics, cluster)
    secondary = {f"H1 vs {random}": results[f"H1 vs {random}"]}
    if fixed_count_frame is not None:
        name = "H1 (fixed item count)"
        descriptions[name] = descriptions["H1"] + ", fixed item count"
        stat = interaction_statistic(fixed_count_frame, rarity, first_mention, **h1_kwargs)
        secondary[name] = cluster_t_many(fixed_count_frame, {name: stat}, cluster, ci, **options)[
            name
        ]
        clusters[name] = cluster
    sensitivity: dict[str, ClusterEstimate] = {}
    if sensitivity_cluster is not None:
        primary_statistics = {name: statistics[name] for name in _PRIMARY}
        by_domain = cluster_t_many(frame, primary_statistics, sensitivity_cluster, ci, **options)
        for name, result in by_domain.items():
            label = f"{name}, {sensitivity_cluster}s as clusters"
            sensitivity[label] = result
            descriptions[label] = descriptions[name]
            clusters[label] = sensitivity_cluster
    primary = {name: results[name] for name in _PRIMARY}
    return PreregisteredTests(
        primary=primary,
        p_holm=holm_over_tested(primary),
        secondary=secondary,
        descriptions=descriptions,
        sensitivity=sensitivity,
        clusters=clusters,
    )
