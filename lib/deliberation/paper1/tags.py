"""The social-proof contrast and the tag ablation (notebook 04).

Rows are decisions on one memory read under the three tag modes (``keep``, ``remove``,
``shuffle``: the same tag sets reassigned at random, line order fixed), so every contrast
compares the same templates and the same memories; resampling templates keeps the pairing.
"""

from __future__ import annotations

from collections.abc import Hashable

import pandas as pd

from deliberation.crossprofile.variants import ALL_VARIANTS
from deliberation.stats import CellStatistic, cluster_bootstrap_many, linear_contrast

BY = ("tags", "support", "decoy", "irrelevant")


def _gap_weights(rows: pd.DataFrame, tags: str, sign: float = 1.0) -> dict[tuple, float]:
    """Weights of support shared minus support private under ``tags``, averaged with equal
    weight over the decoy x irrelevant cells present."""
    combos = sorted(set(rows[["decoy", "irrelevant"]].itertuples(index=False, name=None)))
    weights: dict[tuple[Hashable, ...], float] = {}
    for decoy, irrelevant in combos:
        weights[(tags, "shared", decoy, irrelevant)] = sign / len(combos)
        weights[(tags, "private", decoy, irrelevant)] = -sign / len(combos)
    return weights


def social_proof_table(rows: pd.DataFrame, *, n_resamples: int, seed: int) -> pd.DataFrame:
    """Support shared minus support private (points) under each tag mode in ``rows``, and how
    much removing or reassigning tags narrows it (gap with tags kept minus gap without)."""
    modes = [m for m in ("keep", "remove", "shuffle") if (rows["tags"] == m).any()]
    statistics: dict[str, CellStatistic] = {
        f"gap, tags {mode}": linear_contrast(_gap_weights(rows, mode), BY) for mode in modes
    }
    if "keep" in modes:
        for mode in modes[1:]:
            weights = {**_gap_weights(rows, "keep"), **_gap_weights(rows, mode, -1.0)}
            statistics[f"narrowing: gap(keep) - gap({mode})"] = linear_contrast(weights, BY)
    results = cluster_bootstrap_many(rows, statistics, "template", n_resamples, 0.95, seed)
    return pd.DataFrame(
        [
            {
                "contrast": name,
                "estimate": 100 * r.estimate,
                "low": 100 * r.low,
                "high": 100 * r.high,
                "p_value": r.p_value,
                "n_clusters": r.n_clusters,
            }
            for name, r in results.items()
        ]
    )


def tag_effects_by_cell(rows: pd.DataFrame, *, n_resamples: int, seed: int) -> pd.DataFrame:
    """Per ownership cell: accuracy under each tag mode and the paired effects of removing
    and of reassigning tags (mode minus keep, points, template-bootstrap interval)."""
    variants = [v.id for v in ALL_VARIANTS if (rows["variant"] == v.id).any()]
    modes = [m for m in ("remove", "shuffle") if (rows["tags"] == m).any()]
    statistics: dict[str, CellStatistic] = {}
    for variant in variants:
        for mode in ("keep", *modes):
            statistics[f"{variant}|{mode}"] = linear_contrast(
                {(mode, variant): 1.0}, ("tags", "variant")
            )
        for mode in modes:
            statistics[f"{variant}|{mode}-keep"] = linear_contrast(
                {(mode, variant): 1.0, ("keep", variant): -1.0}, ("tags", "variant")
            )
    results = cluster_bootstrap_many(rows, statistics, "template", n_resamples, 0.95, seed)
    out = []
    for variant in variants:
        row: dict[str, object] = {"variant": variant}
        for mode in ("keep", *modes):
            row[f"acc {mode}"] = 100 * results[f"{variant}|{mode}"].estimate
        for mode in modes:
            r = results[f"{variant}|{mode}-keep"]
            row[f"{mode} - keep"] = 100 * r.estimate
            row[f"{mode} low"] = 100 * r.low
            row[f"{mode} high"] = 100 * r.high
        row["n_clusters"] = results[f"{variant}|keep"].n_clusters
        out.append(row)
    return pd.DataFrame(out)
