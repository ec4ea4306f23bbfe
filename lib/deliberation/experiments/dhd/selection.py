"""Cross-fitted selection: which message to drop, chosen from repeated trajectory-value evidence.

In full: ``docs/experiments.md``, section "DHD cross-fitted selection
(experiments/dhd/selection.py)".
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from deliberation.stats import cross_fit, linear_contrast, mean_of
from deliberation.stats.cluster_t import cluster_t_many
from deliberation.stats.small_samples import withhold_inference

_FULL = 0
# Folds hold out one block each and fit on the others: one block leaves nothing to fit on.
MIN_BLOCKS = 2
PER_FOLD_COLUMNS = [
    "model",
    "benchmark",
    "problem_id",
    "held_out_block",
    "selected_action",
    "selected_action_label",
    "selector_value",
    "full_value",
    "random_all6_value",
    "random_removal_value",
    "correctness_heuristic_action",
    "correctness_heuristic_label",
    "correctness_heuristic_value",
    "hindsight_action",
    "hindsight_value",
    "selector_fullA_action",
    "selector_fullA_value",
    "selector_fullB_action",
    "selector_fullB_value",
    "proposal_correctness",
]
# Policy -> its held-out value column in the per-fold frame.
POLICY_VALUES = {
    "selector": "selector_value",
    "selector_fullA": "selector_fullA_value",
    "selector_fullB": "selector_fullB_value",
    "full": "full_value",
    "random_all6": "random_all6_value",
    "random_removal": "random_removal_value",
    "correctness_heuristic": "correctness_heuristic_value",
    "hindsight": "hindsight_value",
}
BASELINES = ("full", "random_all6", "random_removal", "correctness_heuristic", "hindsight")


def _action_label(action: int) -> str:
    """The authors' label of an action: ``full`` or ``remove_h<k-1>``."""
    return "full" if action == _FULL else f"remove_h{action - 1}"


def _block_outcomes(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per (problem, benchmark, block) of repeated replays: ``full`` (mean of the valid
    full calls), ``full_a``/``full_b`` (the calls with the lower/higher draw index), one column
    per message ``k`` (its removal call) and ``complete`` (every outcome present). Invalid calls
    leave their cell empty."""
    repeated = rows[rows["block"].notna()]
    valid = repeated[repeated["valid"].astype(int) == 1]
    valid = valid.assign(correct=valid["correct"].astype(float))
    keys = ["problem", "benchmark", "block"]
    units = repeated[keys].drop_duplicates().set_index(keys)
    full_calls = repeated[repeated["arm"] == "full"].sort_values(keys + ["replicate"])
    full_calls = full_calls.assign(call=full_calls.groupby(keys).cumcount())
    if (full_calls["call"] > 1).any():
        raise ValueError("repeated replays: a block has more than two full calls")
    good = full_calls[full_calls["valid"].astype(int) == 1]
    calls = good.assign(correct=good["correct"].astype(float)).pivot_table(
        index=keys, columns="call", values="correct", aggfunc="first"
    )
    calls = calls.reindex(index=units.index, columns=[0, 1])
    out = units.assign(full_a=calls[0], full_b=calls[1], full=calls.mean(axis=1))
    removals = valid[valid["arm"].str.startswith("drop-")]
    dropped = removals.pivot_table(index=keys, columns="message", values="correct", aggfunc="first")
    expected = repeated[repeated["arm"].str.startswith("drop-")]
    messages = sorted(int(m) for m in expected["message"].dropna().unique())
    dropped = dropped.reindex(columns=messages)
    dropped.columns = [int(c) for c in dropped.columns]
    out = out.join(dropped)
    # Which removals each problem has (a message whose hypothesizer call failed has none).
    has = expected.groupby(["problem", "message"]).size().reset_index()[["problem", "message"]]
    needed = {p: set(g["message"].astype(int)) for p, g in has.groupby("problem")}
    out = out.reset_index()
    out["complete"] = [
        pd.notna(row["full_a"])
        and pd.notna(row["full_b"])
        and all(pd.notna(row[m]) for m in needed.get(row["problem"], ()))
        for _, row in out.iterrows()
    ]
    return out


def _best(values: np.ndarray) -> np.ndarray:
    """Index of the highest value per row; NaN never wins; ties go to the first column."""
    filled = np.where(np.isnan(values), -np.inf, values)
    return filled.argmax(axis=1)


def _heuristic_action(proposals: Sequence[int | None], messages: Sequence[int]) -> int:
    for message, correct in zip(messages, proposals, strict=True):
        if correct == 0:
            return message
    return _FULL


def cross_fitted_selection(
    rows: pd.DataFrame,
    proposals: pd.DataFrame,
    *,
    folds: int | None = None,
    seed: int = 0,
    model: str = "",
) -> pd.DataFrame:
    """The per-fold frame: one row per problem and held-out block, every policy's action and
    held-out value (columns :data:`PER_FOLD_COLUMNS` + ``fold``).

    ``rows`` are repeated-replay rows, ``proposals`` the proposal rows (``proposal_correct`` per
    message). ``folds=None`` holds out one block at a time; a smaller number groups blocks into
    that many folds. Action values come only from the training blocks of each fold
    (:func:`deliberation.stats.cross_fit` guarantees the held-out block is not among them).
    """
    if rows.empty:  # no replay at all (e.g. no pool could be drawn): nothing to select from
        return pd.DataFrame(columns=[*PER_FOLD_COLUMNS, "fold"])
    outcomes = _block_outcomes(rows)
    if outcomes.empty:
        raise ValueError("cross-fitted selection: no repeated-replay rows (no block ids)")
    messages = [c for c in outcomes.columns if isinstance(c, int)]
    n_blocks = outcomes["block"].nunique()
    folds = n_blocks if folds is None else folds
    if n_blocks < MIN_BLOCKS:
        raise ValueError(
            f"cross-fitted selection needs at least {MIN_BLOCKS} blocks per problem"
            " (experiments.dhd.blocks)"
        )
    proposal_lists = _proposal_lists(proposals, messages)

    def fit(train: pd.DataFrame) -> pd.DataFrame:
        return train.groupby("problem")[["full", "full_a", "full_b", *messages]].mean()

    def evaluate(values: pd.DataFrame, test: pd.DataFrame) -> pd.DataFrame:
        test = test[test["complete"]]
        trained = values.reindex(test["problem"])
        return _score(test, trained, messages, proposal_lists, model)

    result = cross_fit(outcomes, fit, evaluate, folds=folds, by="block", seed=seed)
    frame = result.scores.drop(columns=["n_test"])
    ordered = PER_FOLD_COLUMNS + ["fold"]
    frame = frame[ordered].sort_values(["benchmark", "problem_id", "held_out_block"])
    return frame.reset_index(drop=True)


def _proposal_lists(proposals: pd.DataFrame, messages: Sequence[int]) -> dict[str, list]:
    table = proposals.pivot_table(
        index="problem", columns="message", values="proposal_correct", aggfunc="first"
    )
    table = table.reindex(columns=list(messages))
    return {
        problem: [None if pd.isna(v) else int(v) for v in row]
        for problem, row in zip(table.index, table.to_numpy(), strict=True)
    }


def _score(
    test: pd.DataFrame,
    trained: pd.DataFrame,
    messages: Sequence[int],
    proposal_lists: Mapping[str, list],
    model: str,
) -> pd.DataFrame:
    actions = np.array([_FULL, *messages])
    held = test[["full", *messages]].to_numpy(dtype=float)
    held_a = test[["full_a", *messages]].to_numpy(dtype=float)
    held_b = test[["full_b", *messages]].to_numpy(dtype=float)
    train = trained[["full", *messages]].to_numpy(dtype=float)
    train_a = trained[["full_a", *messages]].to_numpy(dtype=float)
    train_b = trained[["full_b", *messages]].to_numpy(dtype=float)
    # An action the problem does not have (no such message) is never available.
    absent = np.isnan(held)
    for values in (train, train_a, train_b):
        values[absent] = np.nan
    rows = np.arange(len(test))
    chosen, chosen_a, chosen_b = _best(train), _best(train_a), _best(train_b)
    hindsight = _best(held)
    removal = held[:, 1:]
    heuristic = []
    for problem, available in zip(test["problem"], ~absent[:, 1:], strict=True):
        listed = proposal_lists.get(problem, [None] * len(messages))
        present = [m for m, ok in zip(messages, available, strict=True) if ok]
        flags = [c for c, ok in zip(listed, available, strict=True) if ok]
        heuristic.append(int(np.flatnonzero(actions == _heuristic_action(flags, present))[0]))
    heuristic_index = np.array(heuristic, dtype=int)
    return pd.DataFrame(
        {
            "model": model,
            "benchmark": test["benchmark"].to_numpy(),
            "problem_id": test["problem"].to_numpy(),
            "held_out_block": test["block"].astype(int).to_numpy(),
            "selected_action": actions[chosen],
            "selected_action_label": [_action_label(a) for a in actions[chosen]],
            "selector_value": held[rows, chosen],
            "full_value": held[:, 0],
            "random_all6_value": np.nanmean(held, axis=1),
            "random_removal_value": np.nanmean(removal, axis=1) if removal.shape[1] else np.nan,
            "correctness_heuristic_action": actions[heuristic_index],
            "correctness_heuristic_label": [_action_label(a) for a in actions[heuristic_index]],
            "correctness_heuristic_value": held[rows, heuristic_index],
            "hindsight_action": actions[hindsight],
            "hindsight_value": held[rows, hindsight],
            "selector_fullA_action": actions[chosen_a],
            "selector_fullA_value": held_a[rows, chosen_a],
            "selector_fullB_action": actions[chosen_b],
            "selector_fullB_value": held_b[rows, chosen_b],
            "proposal_correctness": [
                json.dumps(proposal_lists.get(p, [])) for p in test["problem"].to_numpy()
            ],
        }
    )


def _long(per_fold: pd.DataFrame, policies: Sequence[str]) -> pd.DataFrame:
    missing = [POLICY_VALUES[p] for p in policies if POLICY_VALUES[p] not in per_fold.columns]
    if missing:
        raise KeyError(f"per-fold selection frame lacks column(s) {missing}")
    frames = [
        per_fold.assign(policy=p, value=per_fold[POLICY_VALUES[p]].astype(float)) for p in policies
    ]
    return pd.concat(frames, ignore_index=True)


def _groups(per_fold: pd.DataFrame, by: Sequence[str]):
    """(labels, rows) per benchmark within each ``by`` group, then pooled over benchmarks."""
    split = [*by]
    pieces = per_fold.groupby(split, sort=True) if split else [((), per_fold)]
    for key, part in pieces:
        key = key if isinstance(key, tuple) else (key,)
        labels = dict(zip(split, key, strict=True))
        for benchmark, rows in part.groupby("benchmark", sort=True):
            yield {**labels, "benchmark": benchmark}, rows
        if not part.empty:  # no fold at all (no replay): no group, an empty table
            yield {**labels, "benchmark": "pooled"}, part


def _calls_read(replays: pd.DataFrame | None, problems: pd.Series) -> int | None:
    """The distinct repeated-replay calls of ``problems`` (every block's arms: the values of
    every fold are read from them), or None without rows that name their calls."""
    if replays is None or "key" not in replays:
        return None
    repeated = replays[replays["block"].notna() & replays["problem"].isin(set(problems))]
    return int(repeated["key"].dropna().nunique())


def policy_accuracy(
    per_fold: pd.DataFrame,
    by: Sequence[str] = (),
    policies: Sequence[str] = tuple(POLICY_VALUES),
    n_resamples: int = 2000,
    seed: int = 0,
    replays: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Held-out accuracy (percent) of each policy per benchmark and pooled (within each ``by``
    group, e.g. ``("model",)``), with 95% cluster-robust t intervals over problems (none below
    the cluster floor; ``n_resamples`` and ``seed`` are unused since the cluster t replaced the
    bootstrap) and, given the repeated-replay rows (``replays``), the distinct calls each row
    rests on (``n_calls``)."""
    del n_resamples, seed
    out = []
    for labels, rows in _groups(per_fold, by):
        long = _long(rows, policies)
        stats = {p: mean_of("value", {"policy": p}, label=p) for p in policies}
        results = cluster_t_many(long, stats, "problem_id")
        for policy in policies:
            r = results[policy]
            out.append(
                {
                    **labels,
                    "policy": policy,
                    "accuracy_pct": 100 * r.estimate,
                    "low_pct": 100 * r.low,
                    "high_pct": 100 * r.high,
                    "interval": r.note,
                    "problems": r.n_clusters,
                    "folds": len(rows),
                    "n_clusters": r.n_clusters,
                    **_n_calls(replays, rows),
                }
            )
    return withhold_inference(pd.DataFrame(out))


def _n_calls(replays: pd.DataFrame | None, rows: pd.DataFrame) -> dict[str, int]:
    calls = _calls_read(replays, rows["problem_id"])
    return {} if calls is None else {"n_calls": calls}


def selector_gains(
    per_fold: pd.DataFrame,
    by: Sequence[str] = (),
    selector: str = "selector",
    baselines: Sequence[str] = BASELINES,
    n_resamples: int = 2000,
    seed: int = 0,
    replays: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """``selector`` minus each baseline, in percentage points, per benchmark and pooled (within
    each ``by`` group), with 95% intervals and p-values from the cluster-robust t over problems
    (the folds of one problem move together; none below the cluster floor; ``n_resamples`` and
    ``seed`` are unused since the cluster t replaced the bootstrap) and, given the
    repeated-replay rows (``replays``), the distinct calls each row rests on (``n_calls``)."""
    del n_resamples, seed
    out = []
    for labels, rows in _groups(per_fold, by):
        long = _long(rows, [selector, *baselines])
        stats = {
            b: linear_contrast({selector: 1.0, b: -1.0}, by="policy", value="value", label=b)
            for b in baselines
        }
        results = cluster_t_many(long, stats, "problem_id")
        for baseline in baselines:
            r = results[baseline]
            out.append(
                {
                    **labels,
                    "policy": selector,
                    "baseline": baseline,
                    "gain_pp": 100 * r.estimate,
                    "low_pp": 100 * r.low,
                    "high_pp": 100 * r.high,
                    "interval": r.note,
                    "p_value": r.p_value,
                    "problems": r.n_clusters,
                    "folds": len(rows),
                    "n_clusters": r.n_clusters,
                    **_n_calls(replays, rows),
                }
            )
    return withhold_inference(pd.DataFrame(out))
