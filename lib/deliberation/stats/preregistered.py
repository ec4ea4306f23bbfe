"""The three pre-specified tests of paper 1, Holm-adjusted together.

- H1: (R1 - B4 | decoys shared) - (R1 - B4 | decoys private), averaged with equal weight over
  the support x irrelevant ownership cells. Secondary (reported, not in the Holm family): the
  same interaction against Random, and at the fixed-7-items control if its rows are given.
- H2: R1 minus Random accuracy on average.
- H3: R1-rel minus R1 accuracy on average.

"On average" means pooled over the rows passed in (every template x variant x budget row of the
two policies); with a balanced design this equals the equal-weight average over cells.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

import pandas as pd

from deliberation.stats.bootstrap import BootstrapResult, CellStatistic, cluster_bootstrap_many
from deliberation.stats.contrasts import difference_statistic, interaction_statistic
from deliberation.stats.multiple import holm

PRIMARY = ("H1", "H2", "H3")


@dataclass(frozen=True)
class PreregisteredTests:
    """H1-H3 bootstrap results with raw and Holm-adjusted p-values, plus secondary H1 variants."""

    primary: Mapping[str, BootstrapResult]
    p_holm: Mapping[str, float]
    secondary: Mapping[str, BootstrapResult] = field(default_factory=dict)
    descriptions: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("primary", "p_holm", "secondary", "descriptions"):
            object.__setattr__(self, name, MappingProxyType(dict(getattr(self, name))))

    def table(self, scale: float = 1.0) -> pd.DataFrame:
        """One row per test: estimate, interval, raw and Holm p (secondary rows have no Holm p),
        and the rows and distinct model calls each test read (``n_rows``, ``n_calls``)."""
        rows = []
        for family, results in (("primary", self.primary), ("secondary", self.secondary)):
            for name, result in results.items():
                row = result.as_row(scale)
                rows.append(
                    {
                        "test": name,
                        "family": family,
                        "description": self.descriptions.get(name, result.label),
                        "estimate": row["estimate"],
                        "low": row["low"],
                        "high": row["high"],
                        "p_raw": result.p_value,
                        "p_holm": self.p_holm.get(name, float("nan")),
                        "n_clusters": result.n_clusters,
                        "n_resamples": result.n_resamples,
                        "n_rows": result.n_rows,
                        "n_calls": result.n_calls,
                    }
                )
        table = pd.DataFrame(rows)
        # Rows that name no model call (a hand-made frame) have no n_calls to report.
        return table.drop(columns="n_calls") if table["n_calls"].isna().all() else table


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
    n_resamples: int = 10_000,
    ci: float = 0.95,
    seed: int = 0,
) -> PreregisteredTests:
    """Run H1, H2, H3 on ``frame`` (one row per decision call) and Holm-adjust them together.

    Pass only the rows that belong in the test (e.g. the primary budget). ``fixed_count_frame``
    (rows of the fixed-7-items control, same columns) adds a secondary H1 on those rows.
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
    results = cluster_bootstrap_many(frame, statistics, cluster, n_resamples, ci, seed)
    secondary = {f"H1 vs {random}": results[f"H1 vs {random}"]}
    if fixed_count_frame is not None:
        name = "H1 (fixed item count)"
        descriptions[name] = descriptions["H1"] + ", fixed item count"
        stat = interaction_statistic(fixed_count_frame, rarity, first_mention, **h1_kwargs)
        secondary[name] = cluster_bootstrap_many(
            fixed_count_frame, {name: stat}, cluster, n_resamples, ci, seed
        )[name]
    primary = {name: results[name] for name in PRIMARY}
    adjusted = holm([r.p_value for r in primary.values()])
    return PreregisteredTests(
        primary=primary,
        p_holm=dict(zip(PRIMARY, adjusted.tolist(), strict=True)),
        secondary=secondary,
        descriptions=descriptions,
    )
