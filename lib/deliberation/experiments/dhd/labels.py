"""From replay rows to paper 2's labels: replay effects, the six cells, helpful shares, values.

In full: ``docs/experiments.md``, section "DHD labels: replay effects, cells, helpful shares
(experiments/dhd/labels.py)".
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from statsmodels.stats.proportion import proportion_confint

from deliberation.stats import max_statistic_by_problem

_CATEGORY = {1: "helpful", -1: "harmful", 0: "neutral"}
CATEGORIES = ("helpful", "neutral", "harmful")


def _valid(rows: pd.DataFrame) -> pd.DataFrame:
    return rows[rows["valid"].astype(int) == 1]


def _outcomes(rows: pd.DataFrame, arm: str, keys: list[str]) -> pd.DataFrame:
    """Rows of one arm outside repeated-replay blocks (those pair within their block)."""
    picked = rows[(rows["arm"] == arm) & rows["block"].isna()]
    return picked[keys + ["valid", "correct", *(["key"] if "key" in picked else [])]]


def _label(effects: pd.DataFrame, shown: str, hidden: str) -> pd.DataFrame:
    both = (effects[f"valid_{shown}"] == 1) & (effects[f"valid_{hidden}"] == 1)
    effect = effects[f"correct_{shown}"].astype(float) - effects[f"correct_{hidden}"].astype(float)
    effects = effects.assign(effect=effect.where(both))
    if f"key_{shown}" in effects:  # the two calls an effect compares (report counts them)
        effects["calls"] = [
            frozenset(k for k in pair if isinstance(k, str) and k)
            for pair in zip(effects[f"key_{shown}"], effects[f"key_{hidden}"], strict=True)
        ]
    effects["category"] = effects["effect"].map(
        lambda e: "unscored" if pd.isna(e) else _CATEGORY[int(e)]
    )
    return effects


def single_message_effects(rows: pd.DataFrame) -> pd.DataFrame:
    """Each message alone (arm ``single``) against the no-message solver (arm ``solo``)."""
    keys = ["problem", "benchmark"]
    solo = _outcomes(rows, "solo", keys).rename(
        columns={"valid": "valid_solo", "correct": "correct_solo", "key": "key_solo"}
    )
    single = _outcomes(rows, "single", keys + ["message"]).rename(
        columns={"valid": "valid_single", "correct": "correct_single", "key": "key_single"}
    )
    effects = single.merge(solo, on=keys, how="left", validate="many_to_one")
    effects["valid_solo"] = effects["valid_solo"].fillna(0)
    return _label(effects.assign(k=1), "single", "solo")


def leave_one_out_effects(rows: pd.DataFrame) -> pd.DataFrame:
    """For each K: the prefix pool (arm ``full``) against it without message i (arm ``loo``)."""
    keys = ["problem", "benchmark", "k"]
    full = _outcomes(rows, "full", keys).rename(
        columns={"valid": "valid_full", "correct": "correct_full", "key": "key_full"}
    )
    full = full[full["k"].notna()]
    reduced = _outcomes(rows, "loo", keys + ["message"]).rename(
        columns={"valid": "valid_loo", "correct": "correct_loo", "key": "key_loo"}
    )
    effects = reduced.merge(full, on=keys, how="left", validate="many_to_one")
    effects["valid_full"] = effects["valid_full"].fillna(0)
    return _label(effects, "full", "loo")


def with_proposals(frame: pd.DataFrame, proposals: pd.DataFrame) -> pd.DataFrame:
    """``frame`` (one row per problem and message) with the message's ``proposal_correct`` and
    its label ``proposal``: ``correct``, ``wrong``, or ``unreadable`` (no answer could be read)."""
    joined = frame.merge(
        proposals[["problem", "message", "proposal_correct"]],
        on=["problem", "message"],
        how="left",
        validate="many_to_one",
    )
    joined["proposal"] = (
        joined["proposal_correct"].map({1: "correct", 0: "wrong"}).fillna("unreadable")
    )
    return joined


def six_cells(effects: pd.DataFrame, proposals: pd.DataFrame) -> pd.DataFrame:
    """Counts of (proposal wrong/correct) x (helpful/neutral/harmful) per benchmark, with the
    unscored and unreadable-answer messages counted beside them."""
    joined = with_proposals(effects, proposals)
    table = joined.groupby(["benchmark", "proposal", "category"]).size().unstack(fill_value=0)
    for column in (*CATEGORIES, "unscored"):
        if column not in table.columns:
            table[column] = 0
    return table[[*CATEGORIES, "unscored"]].reset_index()


def wilson_interval(successes: int, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """Wilson score interval for a proportion (NaN, NaN when n is 0)."""
    if n == 0:
        return float("nan"), float("nan")
    low, high = proportion_confint(successes, n, alpha=alpha, method="wilson")
    return float(low), float(high)


def helpful_share(cells: pd.DataFrame, by: list[str] | None = None) -> pd.DataFrame:
    """Helpful share among flips (helpful / (helpful + harmful)) with Wilson 95% intervals, per
    ``by`` group (default: per benchmark and proposal correctness, plus pooled rows)."""
    by = by if by is not None else ["benchmark", "proposal"]
    groups = cells.groupby(by)[["helpful", "harmful", "neutral"]].sum().reset_index()
    pooled = cells.groupby("proposal")[["helpful", "harmful", "neutral"]].sum().reset_index()
    if "benchmark" in by:
        pooled.insert(0, "benchmark", "pooled")
        groups = pd.concat([groups, pooled], ignore_index=True)
    flips = groups["helpful"] + groups["harmful"]
    groups["flips"] = flips
    groups["helpful_share"] = np.where(
        flips > 0, groups["helpful"] / flips.where(flips > 0), np.nan
    )
    intervals = [
        wilson_interval(int(h), int(n)) for h, n in zip(groups["helpful"], flips, strict=True)
    ]
    groups["share_low"] = [low for low, _ in intervals]
    groups["share_high"] = [high for _, high in intervals]
    return groups


def trajectory_values(rows: pd.DataFrame) -> pd.DataFrame:
    """Repeated replays: per (problem, message), the mean over blocks of (mean of the block's
    valid full calls) - (the block's removal call). Pairs are joined on the block id, so a failed
    call drops only its own block's pair."""
    repeated = rows[rows["block"].notna()]
    valid = _valid(repeated)
    full = (
        valid[valid["arm"] == "full"]
        .groupby(["problem", "benchmark", "block"])["correct"]
        .mean()
        .rename("full")
        .reset_index()
    )
    removal = valid[valid["arm"].str.startswith("drop-")][
        ["problem", "benchmark", "block", "message", "correct"]
    ].rename(columns={"correct": "removed"})
    pairs = removal.merge(full, on=["problem", "benchmark", "block"], how="inner")
    pairs["effect"] = pairs["full"] - pairs["removed"].astype(float)
    values = (
        pairs.groupby(["problem", "benchmark", "message"])["effect"]
        .agg(value="mean", blocks="size")
        .reset_index()
    )
    return values


def repeated_tests(rows: pd.DataFrame, n_permutations: int = 10_000, seed: int = 0) -> pd.DataFrame:
    """Within-block permutation tests of every message's removal against the full pool, the max
    statistic per problem, Benjamini-Hochberg across problems. One row per (problem, message):
    ``effect`` is mean(removal) - mean(full) (negative: the message helps)."""
    repeated = _valid(rows[rows["block"].notna()])
    frame = repeated.assign(correct=repeated["correct"].astype(float))
    tests = max_statistic_by_problem(
        frame,
        reference="full",
        problem="problem",
        arm="arm",
        outcome="correct",
        n_permutations=n_permutations,
        seed=seed,
        block="block",
    )
    arms = tests.arms.copy()
    arms["message"] = arms["arm"].str.removeprefix("drop-").astype(int)
    return arms
