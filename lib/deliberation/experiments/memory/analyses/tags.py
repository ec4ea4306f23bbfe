"""The social-proof contrast and the tag ablation (notebook 04).

Rows are decisions on one memory read under the three tag modes (``keep``, ``remove``,
``shuffle``: the same tag sets reassigned at random, line order fixed), so every contrast
compares the same templates and the same memories; resampling templates keeps the pairing.
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable

import pandas as pd

from deliberation.benchmarks.crossprofile.variants import ALL_VARIANTS
from deliberation.experiments.memory.analyses.accuracy import answered, percent_interval
from deliberation.stats import CellStatistic, linear_contrast
from deliberation.stats.cluster_t import cluster_t_many
from deliberation.stats.small_samples import call_set, with_same_calls

_BY = ("tags", "support", "decoy", "irrelevant")


def _gap_weights(rows: pd.DataFrame, tags: str, sign: float = 1.0) -> dict[tuple, float]:
    """Weights of support shared minus support private under ``tags``, averaged with equal
    weight over the decoy x irrelevant cells present."""
    combos = sorted(set(rows[["decoy", "irrelevant"]].itertuples(index=False, name=None)))
    weights: dict[tuple[Hashable, ...], float] = {}
    for decoy, irrelevant in combos:
        weights[(tags, "shared", decoy, irrelevant)] = sign / len(combos)
        weights[(tags, "private", decoy, irrelevant)] = -sign / len(combos)
    return weights


def _main_rows(rows: pd.DataFrame, policy: str | None = None) -> pd.DataFrame:
    rows = answered(rows)  # failed rows (no usable reply) count in no contrast
    keep = rows["pilot"] == 0 if "pilot" in rows else pd.Series(True, index=rows.index)
    if policy is not None:
        keep &= rows["policy"] == policy
    return rows[keep]


def social_proof_table(
    rows: pd.DataFrame, *, n_resamples: int, seed: int, policy: str = "all"
) -> pd.DataFrame:
    """Support shared minus support private (points) for ``policy``'s memory (default all
    facts) under each tag mode in ``rows`` (main templates), and how much removing or
    reassigning tags narrows it (gap with tags kept minus gap without)."""
    rows = _main_rows(rows, policy)
    if rows.empty:
        raise ValueError(f"social_proof_table: no main-template rows of policy {policy!r}")
    modes = [m for m in ("keep", "remove", "shuffle") if (rows["tags"] == m).any()]
    statistics: dict[str, CellStatistic] = {
        f"gap, tags {mode}": linear_contrast(_gap_weights(rows, mode), _BY) for mode in modes
    }
    if "keep" in modes:
        for mode in modes[1:]:
            weights = {**_gap_weights(rows, "keep"), **_gap_weights(rows, mode, -1.0)}
            statistics[f"narrowing: gap(keep) - gap({mode})"] = linear_contrast(weights, _BY)
    results = cluster_t_many(rows, statistics, "template", n_resamples=n_resamples, seed=seed)
    return pd.DataFrame(
        [
            {
                "policy": policy,
                "contrast": name,
                **percent_interval(r, paper=True),
            }
            for name, r in results.items()
        ]
    )


def tag_effects_by_cell(rows: pd.DataFrame, *, n_resamples: int, seed: int) -> pd.DataFrame:
    """Per policy and ownership cell (main templates): accuracy under each tag mode and the
    paired effects of removing and of reassigning tags (mode minus keep, points,
    cluster-robust t interval, none below the floor), and which earlier row read the very same
    calls (``same_calls_as``). Each policy's rows must come from one capacity, so that the tag
    modes read the same memories."""
    rows = _main_rows(rows)
    by = ("policy", "tags", "variant")
    variants = [v.id for v in ALL_VARIANTS if (rows["variant"] == v.id).any()]
    modes = [m for m in ("remove", "shuffle") if (rows["tags"] == m).any()]
    policies = list(dict.fromkeys(rows["policy"]))
    for policy in policies:
        capacities = rows.loc[rows["policy"] == policy, ["budget", "item_limit"]].drop_duplicates()
        if len(capacities) > 1:
            raise ValueError(f"tag_effects_by_cell: policy {policy} has several capacities")
    statistics: dict[str, CellStatistic] = {}
    for policy, variant in itertools.product(policies, variants):
        for mode in ("keep", *modes):
            statistics[f"{policy}|{variant}|{mode}"] = linear_contrast(
                {(policy, mode, variant): 1.0}, by
            )
        for mode in modes:
            statistics[f"{policy}|{variant}|{mode}-keep"] = linear_contrast(
                {(policy, mode, variant): 1.0, (policy, "keep", variant): -1.0}, by
            )
    del n_resamples, seed  # the cluster t draws nothing (kept for the notebook's call)
    results = cluster_t_many(rows, statistics, "template")
    out, read = [], []
    for policy, variant in itertools.product(policies, variants):
        key = f"{policy}|{variant}"
        row: dict[str, object] = {"policy": policy, "variant": variant}
        for mode in ("keep", *modes):
            row[f"acc {mode}"] = 100 * results[f"{key}|{mode}"].estimate
        for mode in modes:
            r = results[f"{key}|{mode}-keep"]
            row[f"{mode} - keep"] = 100 * r.estimate
            row[f"{mode} low"] = 100 * r.low
            row[f"{mode} high"] = 100 * r.high
        notes = [results[f"{key}|{mode}-keep"].note for mode in modes]
        row["interval"] = "; ".join(dict.fromkeys(n for n in notes if n))
        row["n_clusters"] = results[f"{key}|keep"].n_clusters
        mine = rows[(rows["policy"] == policy) & (rows["variant"] == variant)]
        row["n_rows"] = len(mine)
        read.append(call_set(mine))
        if read[-1] is not None:
            row["n_calls"] = len(read[-1])
        out.append(row)
    return with_same_calls(pd.DataFrame(out), read, ("policy", "variant"))
