"""Monte Carlo permutation tests over repeated replays (paper 2).

A problem's replay block holds repeated integrator runs with and without a message. Under the null
that the message changes nothing, outcomes are exchangeable within the block, so labels are
permuted within blocks only. Monte Carlo p-values are ``(1 + #{T* at least as extreme as T}) /
(1 + n_permutations)``, never 0. ``max_statistic_test`` tests all messages of one problem at once
(Westfall-Young single-step max-T: family-wise error control within the problem), and
``max_statistic_by_problem`` adds Benjamini-Hochberg across problems.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pandas as pd

from deliberation.seeds import stable_seed
from deliberation.stats.bootstrap import numeric_values, require_columns
from deliberation.stats.multiple import benjamini_hochberg

_Alternative = Literal["two-sided", "greater", "less"]

# Permuted outcome blocks are generated in chunks of at most this many entries.
_BLOCK_ENTRIES = 1 << 21
# Statistics within this relative distance of the observed one count as ties (as extreme).
_TIE_TOLERANCE = 1e-9


def _extremeness(statistic: np.ndarray, alternative: _Alternative) -> np.ndarray:
    if alternative == "two-sided":
        return np.abs(statistic)
    if alternative == "greater":
        return statistic
    if alternative == "less":
        return -statistic
    raise ValueError(f"alternative must be 'two-sided', 'greater' or 'less', not {alternative!r}")


def _count_at_least(null: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """For each score, how many entries of the 1-D ``null`` are >= it (up to float ties)."""
    tolerance = _TIE_TOLERANCE * np.maximum(1.0, np.abs(scores))
    return np.count_nonzero(null[:, None] >= scores - tolerance, axis=0)


def permutation_p_value(
    null: np.ndarray, observed: float, alternative: _Alternative = "two-sided"
) -> float:
    """(1 + #{null statistics at least as extreme as ``observed``}) / (1 + len(null))."""
    null = np.asarray(null, dtype=float)
    score = float(_extremeness(np.asarray(observed, dtype=float), alternative))
    tolerance = _TIE_TOLERANCE * max(1.0, abs(score))
    extreme = np.count_nonzero(_extremeness(null, alternative) >= score - tolerance)
    return float((1 + extreme) / (1 + null.size))


def _check_count(n_permutations: int) -> None:
    if int(n_permutations) != n_permutations or n_permutations < 1:
        raise ValueError(f"n_permutations must be a positive integer, not {n_permutations!r}")


def _permuted(
    values: np.ndarray, n: int, rng: np.random.Generator, strata: np.ndarray | None = None
) -> np.ndarray:
    """``n`` independent random permutations of ``values`` as rows of an (n, len) array; with
    ``strata`` (one integer code per value), values move only within their stratum."""
    if strata is None:
        return rng.permuted(np.broadcast_to(values, (n, values.size)), axis=1)
    # Sorting (stratum + a uniform draw) shuffles within strata and keeps each stratum's slots.
    order = np.argsort(strata, kind="stable")
    keys = rng.random((n, values.size)) + strata[order]
    shuffled = order[np.argsort(keys, axis=1)]
    out = np.empty((n, values.size), dtype=values.dtype)
    out[:, order] = values[shuffled]
    return out


@dataclass(frozen=True)
class PermutationResult:
    """Observed statistic, Monte Carlo p-value and the permutation null distribution."""

    observed: float
    p_value: float
    null_distribution: np.ndarray = field(repr=False, compare=False)
    n_permutations: int
    n_blocks: int
    alternative: str


def permutation_test(
    frame: pd.DataFrame,
    *,
    outcome: str = "correct",
    treatment: str = "with_message",
    block: str | None = "problem",
    n_permutations: int = 10_000,
    seed: int = 0,
    alternative: _Alternative = "two-sided",
) -> PermutationResult:
    """Within-block permutation test of a binary ``treatment`` on ``outcome``.

    The statistic is the average over blocks of (mean outcome treated - mean outcome untreated)
    in the block; treatment labels are permuted within each block (``block=None``: one block).
    """
    _check_count(n_permutations)
    what = "permutation_test"
    require_columns(frame, [outcome, treatment] + ([block] if block else []), what)
    y = numeric_values(frame, outcome, what)
    labels = frame[treatment]
    if labels.isna().any() or not set(pd.unique(labels)) <= {0, 1}:
        raise ValueError(f"{what}: column {treatment!r} must be boolean or 0/1")
    treated = labels.to_numpy().astype(bool)
    codes, blocks = (
        pd.factorize(frame[block], sort=True) if block else (np.zeros(len(frame), int), [None])
    )
    rng = np.random.default_rng(seed)
    observed = 0.0
    null = np.zeros(n_permutations)
    for b, name in enumerate(blocks):
        members = codes == b
        yb, tb = y[members], treated[members]
        n_t, n_c = int(tb.sum()), int((~tb).sum())
        if n_t == 0 or n_c == 0:
            raise ValueError(f"{what}: block {block}={name!r} lacks treated or untreated rows")
        contrast = np.where(tb, 1 / n_t, -1 / n_c)
        observed += float(yb @ contrast)
        chunk = max(1, _BLOCK_ENTRIES // yb.size)
        for start in range(0, n_permutations, chunk):
            stop = min(n_permutations, start + chunk)
            null[start:stop] += _permuted(yb, stop - start, rng) @ contrast
    observed /= len(blocks)
    null /= len(blocks)
    return PermutationResult(
        observed=observed,
        p_value=permutation_p_value(null, observed, alternative),
        null_distribution=null,
        n_permutations=int(n_permutations),
        n_blocks=len(blocks),
        alternative=alternative,
    )


@dataclass(frozen=True)
class MaxStatisticResult:
    """Per-arm effects with raw and max-T adjusted p-values; ``p_value`` is the max's p."""

    arms: pd.DataFrame  # arm, effect, n, p_raw, p_adjusted
    p_value: float
    null_max: np.ndarray = field(repr=False, compare=False)
    n_permutations: int
    alternative: str


def max_statistic_test(
    frame: pd.DataFrame,
    *,
    reference: Hashable,
    arm: str = "arm",
    outcome: str = "correct",
    n_permutations: int = 10_000,
    seed: int | np.random.SeedSequence = 0,
    alternative: _Alternative = "two-sided",
    block: str | None = None,
) -> MaxStatisticResult:
    """Test every arm of one problem against ``reference`` at once, by the max statistic.

    Rows are replays of one problem; ``arm`` names the condition (e.g. the message hidden or
    shown) and ``reference`` the baseline (e.g. the full pool, or the no-message solver). Each
    arm's effect is mean(outcome | arm) - mean(outcome | reference). Under the null that no
    message matters all rows are exchangeable, so outcomes are permuted across the problem's
    rows (with ``block``: only within each replay block, the design of repeated replays) and the
    null of max over arms of the (signed per ``alternative``) effect gives family-wise adjusted
    p-values.
    """
    _check_count(n_permutations)
    what = "max_statistic_test"
    require_columns(frame, [arm, outcome] + ([block] if block else []), what)
    strata = pd.factorize(frame[block], sort=True)[0] if block else None
    y = numeric_values(frame, outcome, what)
    labels = frame[arm].to_numpy()
    if not (labels == reference).any():
        raise ValueError(f"{what}: no rows with {arm} == {reference!r} (the reference arm)")
    others = sorted({v for v in labels if v != reference}, key=str)
    if not others:
        raise ValueError(f"{what}: no arms besides the reference {reference!r}")
    # Column j of `design` averages an arm minus the reference: one matmul gives every effect.
    ref_mask = labels == reference
    design = np.empty((y.size, len(others)))
    for j, name in enumerate(others):
        mask = labels == name
        design[:, j] = mask / mask.sum() - ref_mask / ref_mask.sum()
    observed = np.array([y[labels == name].mean() for name in others]) - y[ref_mask].mean()
    score = _extremeness(observed, alternative)
    rng = np.random.default_rng(seed)
    null_max = np.empty(n_permutations)
    exceed_raw = np.zeros(len(others), dtype=np.int64)
    chunk = max(1, _BLOCK_ENTRIES // y.size)
    for start in range(0, n_permutations, chunk):
        stop = min(n_permutations, start + chunk)
        null_scores = _extremeness(_permuted(y, stop - start, rng, strata) @ design, alternative)
        null_max[start:stop] = null_scores.max(axis=1)
        tolerance = _TIE_TOLERANCE * np.maximum(1.0, np.abs(score))
        exceed_raw += np.count_nonzero(null_scores >= score - tolerance, axis=0)
    p_adjusted = (1 + _count_at_least(null_max, score)) / (1 + n_permutations)
    arms = pd.DataFrame(
        {
            "arm": others,
            "effect": observed,
            "n": [int((labels == name).sum()) for name in others],
            "p_raw": (1 + exceed_raw) / (1 + n_permutations),
            "p_adjusted": p_adjusted,
        }
    )
    return MaxStatisticResult(
        arms=arms,
        p_value=float(p_adjusted.min()),
        null_max=null_max,
        n_permutations=int(n_permutations),
        alternative=alternative,
    )


def _problem_seed(seed: int, problem: Hashable) -> np.random.SeedSequence:
    """A seed for one problem that depends only on ``seed`` and the problem id."""
    return np.random.SeedSequence([seed, stable_seed(problem)])


@dataclass(frozen=True)
class ProblemPermutationTests:
    """Per-problem max-statistic tests with Benjamini-Hochberg q-values across problems."""

    problems: pd.DataFrame  # problem, n_arms, top_arm, top_effect, p_value, q_value
    arms: pd.DataFrame  # problem, arm, effect, n, p_raw, p_adjusted, q_problem


def max_statistic_by_problem(
    frame: pd.DataFrame,
    *,
    reference: Hashable,
    problem: str = "problem",
    arm: str = "arm",
    outcome: str = "correct",
    n_permutations: int = 10_000,
    seed: int = 0,
    alternative: _Alternative = "two-sided",
    block: str | None = None,
) -> ProblemPermutationTests:
    """``max_statistic_test`` for each problem (within ``block`` if given), then BH across
    problems' p-values.

    Each problem's permutations are seeded from (``seed``, problem id), so a problem's p-value
    does not change when other problems are added or removed.
    """
    require_columns(frame, [problem, arm, outcome], "max_statistic_by_problem")
    problem_rows, arm_tables = [], []
    for name, rows in frame.groupby(problem, sort=True):
        result = max_statistic_test(
            rows,
            reference=reference,
            arm=arm,
            outcome=outcome,
            n_permutations=n_permutations,
            seed=_problem_seed(seed, name),
            alternative=alternative,
            block=block,
        )
        table = result.arms
        top = int(np.argmax(_extremeness(table["effect"].to_numpy(), alternative)))
        problem_rows.append(
            {
                problem: name,
                "n_arms": len(table),
                "top_arm": table["arm"].iloc[top],
                "top_effect": float(table["effect"].iloc[top]),
                "p_value": result.p_value,
            }
        )
        arm_tables.append(table.assign(**{problem: name}))
    problems = pd.DataFrame(problem_rows)
    if problems.empty:
        raise ValueError("max_statistic_by_problem: the frame has no rows")
    problems["q_value"] = benjamini_hochberg(problems["p_value"].to_numpy())
    arms = pd.concat(arm_tables, ignore_index=True)
    arms = arms.merge(
        problems[[problem, "q_value"]].rename(columns={"q_value": "q_problem"}), on=problem
    )
    arms = arms[[problem, "arm", "effect", "n", "p_raw", "p_adjusted", "q_problem"]]
    return ProblemPermutationTests(problems=problems, arms=arms)
