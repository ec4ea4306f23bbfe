"""DHD cross-fitted selection: outcomes per block, every policy by hand, no held-out leakage,
and recovery on the sim (the selector beats the correctness heuristic only when wrong messages
carry help)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from deliberation.experiments.dhd import selection, synthetic
from deliberation.experiments.dhd.pool import PoolStore
from deliberation.experiments.dhd.protocol import build_pools, proposal_rows, run_replays
from deliberation.experiments.dhd.replay import repeated_design
from deliberation.inference.cache import ResponseCache
from deliberation.inference.client import CachedClient
from deliberation.inference.sim import SimBackend
from deliberation.profiles.profile import load_profile

PROFILE = load_profile("sim")


def _block_rows(problem: str, block: int, full: tuple, drops: dict, benchmark="b1") -> list[dict]:
    """Rows of one repeated block: two full calls and one removal per message (None = failed)."""
    rows = []
    for slot, value in enumerate(full):
        rows.append(
            {
                "problem": problem,
                "benchmark": benchmark,
                "arm": "full",
                "message": pd.NA,
                "block": block,
                "replicate": 2 * block + slot,
                "valid": int(value is not None),
                "correct": value,
            }
        )
    for message, value in drops.items():
        rows.append(
            {
                "problem": problem,
                "benchmark": benchmark,
                "arm": f"drop-{message}",
                "message": message,
                "block": block,
                "replicate": block,
                "valid": int(value is not None),
                "correct": value,
            }
        )
    return rows


def _frame(records: list[dict]) -> pd.DataFrame:
    frame = pd.DataFrame(records)
    for column in ("message", "block", "correct"):
        frame[column] = frame[column].astype("Int64")
    return frame


def _proposals(problem: str, correct: list) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "problem": problem,
            "message": range(1, len(correct) + 1),
            "proposal_correct": pd.array(correct, dtype="Int64"),
        }
    )


def test_policies_are_scored_on_the_held_out_block_by_hand():
    # Message 2 helps (dropping it fails) and message 3 harms (dropping it succeeds), every block
    # but the last; the full pool succeeds once of its two calls.
    records = []
    for block in range(4):
        records += _block_rows("p", block, (1, 0), {1: 1, 2: 0, 3: 1})
    records += _block_rows("p", 4, (0, 0), {1: 0, 2: 1, 3: 0})
    rows = _frame(records)
    per_fold = selection.cross_fitted_selection(rows, _proposals("p", [1, 0, 1]), model="sim")
    assert list(per_fold.columns) == selection.PER_FOLD_COLUMNS + ["fold"]
    assert len(per_fold) == 5 and (per_fold["model"] == "sim").all()
    first = per_fold.set_index("held_out_block").loc[0]
    # Training values: full 0.375, drop-1 0.75, drop-2 0.25, drop-3 0.75 -> drop message 1.
    assert first["selected_action"] == 1 and first["selected_action_label"] == "remove_h0"
    assert first["selector_value"] == 1 and first["full_value"] == 0.5
    assert first["random_all6_value"] == pytest.approx((0.5 + 1 + 0 + 1) / 4)
    assert first["random_removal_value"] == pytest.approx(2 / 3)
    # The heuristic drops the first wrong proposal (message 2), the helpful one.
    assert first["correctness_heuristic_action"] == 2
    assert first["correctness_heuristic_value"] == 0
    assert first["hindsight_action"] == 1 and first["hindsight_value"] == 1
    assert first["selector_fullA_value"] == 1 and first["proposal_correctness"] == "[1, 0, 1]"
    last = per_fold.set_index("held_out_block").loc[4]
    assert last["hindsight_action"] == 2 and last["selector_value"] == 0


def test_ties_go_to_the_full_pool_and_unreadable_answers_are_not_dropped():
    records = []
    for block in range(3):
        records += _block_rows("p", block, (1, 1), {1: 1, 2: 1})
    per_fold = selection.cross_fitted_selection(_frame(records), _proposals("p", [None, 1]))
    assert (per_fold["selected_action"] == 0).all()
    assert (per_fold["hindsight_action"] == 0).all()
    assert (per_fold["correctness_heuristic_action"] == 0).all()
    assert json.loads(per_fold["proposal_correctness"].iloc[0]) == [None, 1]


def test_a_held_out_block_never_informs_its_own_selection():
    """Each block has a different winning removal. With the held-out block in training, the
    selector would pick that block's winner and score 1; cross-fitted, the training blocks
    all point elsewhere, so it must score 0 in every fold."""
    records = []
    for block in range(5):
        drops = {m: int(m == block + 1) for m in range(1, 6)}
        records += _block_rows("p", block, (0, 0), drops)
    rows = _frame(records)
    per_fold = selection.cross_fitted_selection(rows, _proposals("p", [1] * 5))
    assert (per_fold["hindsight_value"] == 1).all()
    assert (per_fold["selector_value"] == 0).all()
    assert (per_fold["selected_action"] != per_fold["held_out_block"] + 1).all()


def test_changing_a_held_out_block_changes_no_selection_made_for_it():
    rng = np.random.default_rng(5)
    records = []
    for problem in ("p", "q", "r"):
        for block in range(4):
            full = tuple(int(v) for v in rng.integers(0, 2, 2))
            drops = {m: int(rng.integers(0, 2)) for m in range(1, 6)}
            records += _block_rows(problem, block, full, drops)
    rows = _frame(records)
    proposals = pd.concat([_proposals(p, [1, 0, 1, 0, 1]) for p in ("p", "q", "r")])
    before = selection.cross_fitted_selection(rows, proposals).set_index(
        ["problem_id", "held_out_block"]
    )
    action_columns = ["selected_action", "selector_fullA_action", "selector_fullB_action"]
    for block in range(4):
        flipped = rows.copy()
        in_block = flipped["block"] == block
        flipped.loc[in_block, "correct"] = 1 - flipped.loc[in_block, "correct"]
        after = selection.cross_fitted_selection(flipped, proposals).set_index(
            ["problem_id", "held_out_block"]
        )
        held = after.xs(block, level="held_out_block")[action_columns]
        assert held.equals(before.xs(block, level="held_out_block")[action_columns])
        others = after.drop(index=block, level="held_out_block")[action_columns]
        if not others.equals(before.drop(index=block, level="held_out_block")[action_columns]):
            changed_elsewhere = True
            break
    else:
        changed_elsewhere = False
    assert changed_elsewhere, "flipping a block should move selections of the other folds"


def test_a_failed_call_drops_only_its_block_from_scoring():
    records = []
    for block in range(4):
        records += _block_rows("p", block, (1, 1), {1: 1, 2: 0})
    rows = _frame(records)
    failed = (rows["block"] == 2) & (rows["arm"] == "drop-1")
    rows.loc[failed, "valid"] = 0
    rows.loc[failed, "correct"] = pd.NA
    per_fold = selection.cross_fitted_selection(rows, _proposals("p", [1, 1]))
    assert sorted(per_fold["held_out_block"]) == [0, 1, 3]


def test_grouped_folds_hold_out_several_blocks_at_once():
    records = []
    for block in range(6):
        records += _block_rows("p", block, (1, 0), {1: block % 2, 2: 1})
    per_fold = selection.cross_fitted_selection(_frame(records), _proposals("p", [0, 0]), folds=3)
    assert len(per_fold) == 6 and per_fold["fold"].nunique() == 3
    assert per_fold.groupby("fold")["held_out_block"].nunique().eq(2).all()


def test_gains_and_accuracy_tables_match_the_per_fold_means():
    rng = np.random.default_rng(0)
    n = 40
    per_fold = pd.DataFrame(
        {
            "benchmark": np.repeat(["a", "b"], n * 2),
            "problem_id": np.repeat([f"p{i}" for i in range(2 * n)], 2),
            **{
                c: rng.integers(0, 2, 4 * n).astype(float) for c in selection.POLICY_VALUES.values()
            },
        }
    )
    accuracy = selection.policy_accuracy(per_fold, n_resamples=200)
    gains = selection.selector_gains(per_fold, n_resamples=200)
    assert set(accuracy["benchmark"]) == {"a", "b", "pooled"}
    pooled = gains[gains["benchmark"] == "pooled"].set_index("baseline")
    for baseline in selection.BASELINES:
        expected = 100 * (
            per_fold["selector_value"].mean() - per_fold[selection.POLICY_VALUES[baseline]].mean()
        )
        assert pooled.loc[baseline, "gain_pp"] == pytest.approx(expected)
        assert pooled.loc[baseline, "low_pp"] <= expected <= pooled.loc[baseline, "high_pp"]
        assert pooled.loc[baseline, "problems"] == 2 * n
    row = accuracy[(accuracy["benchmark"] == "a") & (accuracy["policy"] == "full")].iloc[0]
    assert row["accuracy_pct"] == pytest.approx(100 * per_fold["full_value"][: 2 * n].mean())


def test_no_two_blocks_of_a_repeated_design_share_a_draw():
    """A draw shared across blocks (same sample index) would let the held-out block's draw
    inform the values it is selected on: the sim's integrator, for one, draws its own
    knowledge per (problem, draw)."""
    from deliberation.experiments.dhd.pool import Pool, Role, message_from_reply

    messages = tuple(
        message_from_reply(i, Role(f"r{i}", "f"), f"reply {i}", key=f"k{i}", error=None)
        for i in range(1, 6)
    )
    replays = repeated_design(Pool("p", "synthetic", messages, recruiter_key="r"), blocks=6)
    draws: dict[int, set[int]] = {}
    for replay in replays:
        draws.setdefault(replay.block, set()).add(replay.replicate)
    for block, samples in draws.items():
        for other, other_samples in draws.items():
            if other != block:
                assert not samples & other_samples, f"blocks {block} and {other} share a draw"


# The sim world of the recovery test: every proposed answer is wrong; the integrator knows each
# step alone with probability 0.5 and takes up every valid step it reads; steps are rarely
# stated twice. Planted: wrong messages state their steps validly (wrong-helpful). None: their
# steps are all invalid and never mislead, so no message changes the outcome.
WORLD = {
    "dhd_answer_skill": 0.0,
    "dhd_integrator_self_skill": 0.5,
    "dhd_uptake": 1.0,
    "dhd_error_uptake": 0.0,
    "dhd_step_coverage": 0.3,
    "dhd_caveat_error": 0.0,
    "dhd_answer_pull_per_vote": 0.0,
}


def _sim_gains(tmp_path, **parameters) -> pd.DataFrame:
    client = CachedClient(
        SimBackend(parameters={**WORLD, **parameters}),
        ResponseCache(tmp_path / "cache.sqlite"),
        profile="t",
        progress=False,
    )
    items = synthetic.synthetic_bank(80, seed=3)
    by_id = {item.id: item for item in items}
    pools, _ = build_pools(PROFILE, client, items, PoolStore(tmp_path / "pools"))
    replays = [r for pool in pools.values() for r in repeated_design(pool, blocks=4)]
    rows = run_replays(PROFILE, client, by_id, pools, replays)
    per_fold = selection.cross_fitted_selection(rows, proposal_rows(by_id, pools))
    assert len(per_fold) == 4 * 80
    gains = selection.selector_gains(per_fold, n_resamples=1000)
    return gains[gains["benchmark"] == "pooled"].set_index("baseline")


@pytest.mark.experiments
def test_selector_beats_the_correctness_heuristic_only_when_wrong_messages_carry_help(tmp_path):
    """Also a leakage check: in the world where no message matters, a held-out block that
    shared draws with its training blocks biased the selector below the heuristic."""
    planted = _sim_gains(tmp_path / "planted", dhd_step_skill_when_wrong=1.0)
    none = _sim_gains(tmp_path / "none", dhd_step_skill_when_wrong=0.0)
    assert planted.loc["correctness_heuristic", "low_pp"] > 0
    for baseline in ("correctness_heuristic", "full", "random_removal"):
        row = none.loc[baseline]
        assert row["low_pp"] <= 0 <= row["high_pp"], baseline
    assert planted.loc["hindsight", "high_pp"] < 0 and none.loc["hindsight", "high_pp"] < 0


def test_selection_tables_count_the_repeated_replay_calls_of_their_problems():
    """Every fold's values are read from its problems' repeated blocks: given the replay rows,
    each accuracy and gain row says how many distinct calls that is (a non-repeated call, or one
    of another problem, is not counted)."""
    records = []
    for problem, benchmark in (("p1", "a"), ("p2", "a"), ("p3", "b")):
        for block in (0, 1):
            records += _block_rows(problem, block, (1, 0), {1: 1, 2: 0}, benchmark=benchmark)
    rows = _frame(records)
    rows["key"] = [f"{r.problem}-{r.arm}-{r.replicate}" for r in rows.itertuples()]
    single = rows.iloc[[0]].assign(block=pd.NA, arm="single", key="p1-single")
    replays = pd.concat([rows, single], ignore_index=True)
    proposals = pd.concat([_proposals(p, [1, 0]) for p in ("p1", "p2", "p3")], ignore_index=True)
    per_fold = selection.cross_fitted_selection(replays[replays["block"].notna()], proposals)
    accuracy = selection.policy_accuracy(per_fold, n_resamples=20, replays=replays)
    gains = selection.selector_gains(per_fold, n_resamples=20, replays=replays)
    per_problem = 2 * (2 + 2)  # two blocks of two full calls and two removals
    for table in (accuracy, gains):
        calls = table.groupby("benchmark")["n_calls"].unique().map(list).to_dict()
        assert calls == {"a": [2 * per_problem], "b": [per_problem], "pooled": [3 * per_problem]}
    assert "n_calls" not in selection.policy_accuracy(per_fold, n_resamples=20)
