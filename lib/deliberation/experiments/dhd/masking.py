"""Component masking: why a message helps or harms, by hiding its answer or its reasoning.

In full: ``docs/experiments.md``, section "DHD component masking (experiments/dhd/masking.py)".
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import numpy as np
import pandas as pd

from deliberation.benchmarks.problems import Item
from deliberation.benchmarks.problems.extract import normalize_numeric_text
from deliberation.experiments.dhd.messages import COMPONENTS, LABELS, Hypothesis
from deliberation.experiments.dhd.pool import Pool
from deliberation.experiments.dhd.protocol import run_replays
from deliberation.experiments.dhd.replay import Replay, present_indices
from deliberation.inference.client import Client
from deliberation.profiles.profile import Profile
from deliberation.stats import linear_contrast, mean_of
from deliberation.stats.cluster_t import cluster_t_many
from deliberation.stats.small_samples import distinct_calls, withhold_inference

# Arm -> (authors' condition name, transform of the case message; None = left out).
ARMS: dict[str, tuple[str, str | None]] = {
    "masking-full": ("full", "whole"),
    "masking-repeat": ("byte_identical_repeat", "whole"),
    "masking-removal": ("removal", None),
    "masking-neutral": ("neutral_replacement", "neutral"),
    "masking-answer": ("answer_masked", "mask-answer"),
    "masking-reasoning": ("reasoning_masked", "mask-reasoning"),
}
_CELLS = ("wrong-helpful", "correct-helpful", "wrong-harmful", "correct-harmful")
# First draw index of masking replays (above any repeated-replay draw index).
MASKING_SAMPLE_BASE = 10_000
CASE_COLUMNS = [
    "problem",
    "benchmark",
    "message",
    "cell",
    "proposal_correct",
    "value",
    "blocks",
]


def _normal(text: str) -> str:
    return " ".join(normalize_numeric_text(text).lower().split()).strip(" .")


def mentions(text: str, answer: str) -> int:
    """How often the normalised ``answer`` occurs in the normalised ``text`` as a whole token
    (``72`` is not found in ``1272`` or ``7.2``; ``1,296`` is found as ``1296``)."""
    needle = _normal(answer)
    if not needle:
        return 0
    pattern = rf"(?<![\w.]){re.escape(needle)}(?![\w]|\.\d)"
    return len(re.findall(pattern, _normal(text)))


def answer_leaks(hypothesis: Hypothesis) -> list[str]:
    """The fields other than the answer (the role included: it is shown in the message header)
    that state the proposed answer; masking the answer of such a message would not hide it."""
    answer_fields = set(COMPONENTS["answer"])
    return [
        name
        for name in LABELS
        if name not in answer_fields
        and mentions(getattr(hypothesis, name), hypothesis.proposed_answer)
    ]


def choose_cases(
    values: pd.DataFrame,
    proposals: pd.DataFrame,
    per_cell: int = 10,
    min_value: float = 0.5,
    tests: pd.DataFrame | None = None,
    max_p: float | None = None,
) -> pd.DataFrame:
    """Up to ``per_cell`` messages per cell from repeated-replay results.

    ``values`` is :func:`deliberation.experiments.dhd.labels.trajectory_values` (problem, benchmark,
    message, value, blocks); ``proposals`` gives ``proposal_correct``. A message is helpful when its
    value is at least ``min_value``, harmful when at most ``-min_value``; with ``tests``
    (:func:`deliberation.experiments.dhd.labels.repeated_tests`) and ``max_p`` it must also have an
    adjusted p-value at most ``max_p`` (a repeatable effect). Within a cell the strongest effects
    come first, taken in turn from each benchmark so that every benchmark is covered; messages
    without a readable proposed answer have no cell.
    """
    if not 0 <= min_value <= 1:
        raise ValueError(f"min_value must be in [0, 1], not {min_value}")
    frame = values.merge(
        proposals[["problem", "message", "proposal_correct"]],
        on=["problem", "message"],
        how="inner",
        validate="one_to_one",
    )
    frame = frame[frame["proposal_correct"].notna()]
    if tests is not None and max_p is not None:
        p = tests[["problem", "message", "p_adjusted"]]
        frame = frame.merge(p, on=["problem", "message"], how="inner")
        frame = frame[frame["p_adjusted"] <= max_p]
    direction = np.where(
        frame["value"] >= min_value,
        "helpful",
        np.where(frame["value"] <= -min_value, "harmful", ""),
    )
    proposal = np.where(frame["proposal_correct"].astype(int) == 1, "correct", "wrong")
    frame = frame.assign(
        cell=[f"{p}-{d}" if d else "" for p, d in zip(proposal, direction, strict=True)]
    )
    frame = frame[frame["cell"] != ""]
    chosen = []
    for cell in _CELLS:
        candidates = frame[frame["cell"] == cell].assign(strength=lambda f: f["value"].abs())
        candidates = candidates.sort_values(
            ["strength", "blocks", "problem", "message"], ascending=[False, False, True, True]
        )
        candidates["turn"] = candidates.groupby("benchmark").cumcount()
        ordered = candidates.sort_values(
            ["turn", "strength"], ascending=[True, False], kind="stable"
        )
        chosen.append(ordered.head(per_cell))
    cases = pd.concat(chosen, ignore_index=True)
    return cases[CASE_COLUMNS].reset_index(drop=True)


def flag_answer_leaks(pools: Mapping[str, Pool], cases: pd.DataFrame) -> pd.DataFrame:
    """``cases`` with ``answer_leak`` set to the comma-separated fields that state the message's
    answer (empty: the answer can be masked). A case whose message did not parse is an error."""
    leaks = []
    for problem, message in zip(cases["problem"], cases["message"], strict=True):
        hypothesis = _case_hypothesis(pools, problem, int(message))
        leaks.append(", ".join(answer_leaks(hypothesis)))
    return cases.assign(answer_leak=leaks)


def _case_hypothesis(pools: Mapping[str, Pool], problem: str, message: int) -> Hypothesis:
    if problem not in pools:
        raise KeyError(f"masking case {problem}: no pool for this problem")
    found = [m for m in pools[problem].messages if m.index == message]
    if not found or not found[0].present:
        raise ValueError(f"masking case {problem} message {message}: no such message in the pool")
    hypothesis = found[0].hypothesis
    if hypothesis is None:
        raise ValueError(
            f"masking case {problem} message {message}: the reply did not parse "
            f"({found[0].parse_error}), so its components cannot be masked"
        )
    return hypothesis


def masking_design(
    pool: Pool, message: int, replicates: int = 5, seed: int = 0, mask_answer: bool = True
) -> list[Replay]:
    """The arms for one case, replicate by replicate, arms in a seeded order within each
    replicate. ``mask_answer=False`` leaves out the answer-masked arm (a flagged case)."""
    if replicates < 1:
        raise ValueError(f"replicates must be >= 1, not {replicates}")
    present = present_indices(pool)
    if message not in present:
        raise ValueError(f"{pool.problem_id}: message {message} is not in the pool")
    arms = [a for a in ARMS if mask_answer or a != "masking-answer"]
    rng = np.random.default_rng([seed, message, *pool.problem_id.encode()])
    replays = []
    for replicate in range(replicates):
        sample = MASKING_SAMPLE_BASE + 2 * replicate
        for position in rng.permutation(len(arms)):
            arm = arms[int(position)]
            transform = ARMS[arm][1]
            shown = tuple(
                (i, "whole" if i != message else transform)
                for i in present
                if i != message or transform is not None
            )
            replays.append(
                Replay(
                    pool.problem_id,
                    pool.benchmark,
                    arm,
                    shown,
                    k=len(present),
                    message=message,
                    replicate=sample + (arm == "masking-repeat"),
                )
            )
    return replays


def masking_replays(
    pools: Mapping[str, Pool], cases: pd.DataFrame, replicates: int = 5, seed: int = 0
) -> list[Replay]:
    """Every case's arms, replicate-major (all cases' replicate 0, then replicate 1, ...).
    A case whose answer is stated in its other fields gets no answer-masked arm (checked here on
    the stored pool, whatever the ``cases`` frame says)."""
    cases = flag_answer_leaks(pools, cases)
    designs = []
    for case in cases.itertuples(index=False):
        designs.append(
            masking_design(
                pools[case.problem],
                int(case.message),
                replicates,
                seed,
                mask_answer=not case.answer_leak,
            )
        )
    ordered = []
    for replicate in range(replicates):
        for design in designs:
            per = len(design) // replicates
            ordered.extend(design[replicate * per : (replicate + 1) * per])
    return ordered


def run_masking(
    profile: Profile,
    client: Client,
    items: Mapping[str, Item],
    pools: Mapping[str, Pool],
    cases: pd.DataFrame,
    *,
    replicates: int = 5,
    seed: int = 0,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Flag answer leaks, run every case's arms through the cache and grade them.

    Returns (rows, cases): replay rows with the case's ``cell``, and the cases with their
    ``answer_leak`` flags."""
    cases = flag_answer_leaks(pools, cases)
    replays = masking_replays(pools, cases, replicates, seed)
    rows = run_replays(profile, client, items, pools, replays, label="dhd.integrator (masking)")
    return _with_cells(rows, cases), cases


def _with_cells(rows: pd.DataFrame, cases: pd.DataFrame) -> pd.DataFrame:
    """Masking rows with the ``cell`` of their case."""
    cells = cases[["problem", "message", "cell"]].astype({"message": "Int64"})
    return rows.astype({"message": "Int64"}).merge(
        cells, on=["problem", "message"], how="left", validate="many_to_one"
    )


MASKING_TABLE_COLUMNS = [
    "cell", "arm", "condition", "cases", "events", "invalid", "success", "low", "high",
    "minus_full", "minus_full_low", "minus_full_high", "p_value", "interval", "n_clusters",
    "n_calls",
]  # fmt: skip


def masking_table(
    rows: pd.DataFrame, n_resamples: int = 2000, seed: int = 0, cell: str = "cell"
) -> pd.DataFrame:
    """Success per cell and arm, and each arm minus the full arm, with 95% cluster-robust t
    intervals over problems (none below the cluster floor; ``n_resamples`` and ``seed`` are
    unused since the cluster t replaced the bootstrap). One row per (cell, arm): ``cases``, ``events`` (valid calls),
    ``invalid`` (failed calls, counted, never scored), ``success`` [``low``, ``high``], and
    ``minus_full`` [``minus_full_low``, ``minus_full_high``] with its bootstrap ``p_value``,
    computed on the cases that ran this arm (so a flagged case's missing answer-masked arm
    does not turn the difference into a comparison of different cases); ``condition`` is the
    authors' name of the arm; ``n_clusters`` and ``n_calls`` count the problems and distinct
    calls behind each row."""
    del n_resamples, seed
    masking = rows[rows["arm"].isin(list(ARMS))]
    valid_all = masking[masking["valid"].astype(int) == 1]
    valid_all = valid_all.assign(correct=valid_all["correct"].astype(float))
    out = []
    for name, group in masking.groupby(cell, sort=False):
        valid = valid_all[valid_all[cell] == name]
        arms = [a for a in ARMS if (valid["arm"] == a).any()]
        statistics = {a: mean_of("correct", {"arm": a}, label=a) for a in arms}
        results = cluster_t_many(valid, statistics, "problem")
        for arm in arms:
            in_arm = group[group["arm"] == arm]
            difference: dict[str, float | None] = {
                "minus_full": 0.0 if arm == "masking-full" else None,
                "minus_full_low": None,
                "minus_full_high": None,
                "p_value": None,
            }
            if arm != "masking-full" and "masking-full" in arms:
                ran = valid[valid["arm"] == arm][["problem", "message"]].drop_duplicates()
                paired = valid.merge(ran, on=["problem", "message"])
                contrast = linear_contrast(
                    {arm: 1.0, "masking-full": -1.0}, by="arm", label=f"{arm} - full"
                )
                diff = cluster_t_many(paired, {"d": contrast}, "problem")["d"]
                difference = {
                    "minus_full": diff.estimate,
                    "minus_full_low": diff.low,
                    "minus_full_high": diff.high,
                    "p_value": diff.p_value,
                }
            out.append(
                {
                    "cell": name,
                    "arm": arm,
                    "condition": ARMS[arm][0],
                    "cases": in_arm[["problem", "message"]].drop_duplicates().shape[0],
                    "events": int((in_arm["valid"].astype(int) == 1).sum()),
                    "invalid": int((in_arm["valid"].astype(int) == 0).sum()),
                    "success": results[arm].estimate,
                    "low": results[arm].low,
                    "high": results[arm].high,
                    **difference,
                    "interval": results[arm].note,
                    # problems behind the intervals: none published from fewer than the floor
                    "n_clusters": results[arm].n_clusters,
                    "n_calls": distinct_calls(in_arm),  # replicates may repeat one prompt
                }
            )
    # no case at all: header only
    return withhold_inference(pd.DataFrame(out, columns=MASKING_TABLE_COLUMNS))


def cases_summary(cases: pd.DataFrame) -> pd.DataFrame:
    """Cases per cell, the benchmarks they come from, and how many were flagged for an answer
    stated in their reasoning (no answer-masked arm)."""
    flagged = cases.assign(flagged=cases["answer_leak"] != "")
    summary = flagged.groupby("cell").agg(
        cases=("message", "size"), flagged=("flagged", "sum"), benchmarks=("benchmark", "nunique")
    )
    return summary.reindex([c for c in _CELLS if c in summary.index]).reset_index()


def run_profile_masking(profile: Profile, client: Client) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Notebook 08's model calls, for ``notebooks/manifest.yaml`` (``deliberation plan`` calls
    it): notebook 07's run (from the cache), the cases chosen from its replays, and their
    masking replays with the profile's ``experiments.dhd`` settings."""
    from deliberation.experiments.dhd.labels import trajectory_values
    from deliberation.experiments.dhd.run import run_profile

    options = profile.experiments.dhd
    results = run_profile(profile, client)
    values = trajectory_values(results.replays)
    cases = choose_cases(values, results.proposals, per_cell=options.masking_cases)
    return run_masking(
        profile,
        client,
        results.items,
        results.pools,
        cases,
        replicates=options.masking_replicates,
        seed=profile.seed,
    )
