"""DHD building blocks: synthetic problems, message format, pool store, replay designs, labels."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from deliberation.experiments.dhd import synthetic
from deliberation.experiments.dhd.labels import (
    helpful_share,
    leave_one_out_effects,
    single_message_effects,
    six_cells,
    trajectory_values,
)
from deliberation.experiments.dhd.messages import (
    MASK_PLACEHOLDER,
    Hypothesis,
    parse_hypothesis,
    render_for_integrator,
)
from deliberation.experiments.dhd.pool import (
    Pool,
    PoolExistsError,
    PoolStore,
    Role,
    message_from_reply,
)
from deliberation.experiments.dhd.replay import (
    leave_one_out_design,
    render_view,
    repeated_design,
    single_message_design,
)
from deliberation.inference.tokens import count_tokens
from deliberation.io import paths
from deliberation.stats.permutation import _permuted, max_statistic_test

SHARED = paths.shared_data_dir() or Path("/nonexistent")
SMOKE_POOL = SHARED / "dhd_reference" / "data" / "fixtures" / "smoke_pool.jsonl"


def test_synthetic_bank_is_reproducible_and_solvable_from_its_text():
    bank = synthetic.synthetic_bank(60, seed=3)
    assert bank == synthetic.synthetic_bank(60, seed=3)
    assert bank != synthetic.synthetic_bank(60, seed=4)
    assert len({item.id for item in bank}) == 60
    for item in bank:
        steps = synthetic.solve("Please solve this.\n" + item.question + "\nThanks")
        assert steps is not None and steps[-1].value == int(item.gold) > 0
    assert synthetic.solve("What is the capital of France?") is None


def test_stated_steps_and_final_answer_read_messages_as_written():
    text = "First boxes = 6 x 12 = 72; then items = 72 x 18 = 1,296.\nkept=1200, noise = 5"
    assert synthetic.stated_steps(text, {"boxes", "items", "kept"}) == [
        ("boxes", 72),
        ("items", 1296),
        ("kept", 1200),
    ]
    assert synthetic.final_answer("Final answer: 3\n... **Final answer:** 1,234") == 1234
    item = synthetic.synthetic_bank(1)[0]
    assert synthetic.grade(item, f"work...\nFinal answer: {item.gold}") == 1.0
    assert synthetic.grade(item, f"Final answer: {int(item.gold) + 1}") == 0.0
    assert synthetic.grade(item, "I am not sure.") == 0.0


def _hypothesis(answer: str = "24") -> Hypothesis:
    return Hypothesis(
        role_name="Decomposer",
        proposed_answer=answer,
        reasoning_direction="area = 8 x 3",
        key_idea="multiply the sides",
        critical_assumption="it is a rectangle",
        what_to_check="the units",
        confidence="high",
    )


def test_reply_format_round_trips_and_tolerates_markdown():
    hypothesis = _hypothesis()
    assert parse_hypothesis(hypothesis.render()).hypothesis == hypothesis
    markdown = "Here is my work.\n\n" + "\n".join(
        f"- **{line.split(':', 1)[0]}:** {line.split(':', 1)[1].strip()}"
        for line in hypothesis.render().splitlines()
    )
    assert parse_hypothesis(markdown).hypothesis == hypothesis


def test_reply_missing_a_field_does_not_parse_and_says_which():
    text = "\n".join(
        line for line in _hypothesis().render().splitlines() if not line.startswith("Key idea")
    )
    result = parse_hypothesis(text)
    assert result.hypothesis is None and "Key idea" in result.error


@pytest.mark.skipif(not SMOKE_POOL.exists(), reason=f"{SMOKE_POOL} not present")
def test_authors_smoke_pool_records_fit_the_format():
    for line in SMOKE_POOL.read_text().splitlines():
        for record in json.loads(line)["hypotheses"]:
            hypothesis = Hypothesis.from_dict(record)
            assert parse_hypothesis(hypothesis.render()).hypothesis == hypothesis


def test_masking_hides_exactly_the_named_component():
    hypothesis = _hypothesis(answer="9731")
    whole = render_for_integrator(1, "Decomposer", hypothesis, hypothesis.render())
    no_answer = render_for_integrator(1, "Decomposer", hypothesis, "", mask=("answer",))
    no_reasoning = render_for_integrator(1, "Decomposer", hypothesis, "", mask=("reasoning",))
    assert "9731" in whole and "9731" not in no_answer and "8 x 3" in no_answer
    assert "9731" in no_reasoning and "8 x 3" not in no_reasoning
    assert no_reasoning.count(MASK_PLACEHOLDER) == 4
    with pytest.raises(ValueError, match="unknown"):
        render_for_integrator(1, "x", hypothesis, "", mask=("confidence",))


def _pool(problem: str = "p1", n: int = 5, failed: tuple[int, ...] = ()) -> Pool:
    messages = tuple(
        message_from_reply(
            i,
            Role(f"role {i}", "focus"),
            _hypothesis(answer=str(i)).render(),
            key=f"k{i}",
            error="HTTP 500" if i in failed else None,
        )
        for i in range(1, n + 1)
    )
    return Pool(problem, "synthetic", messages, recruiter_key="r")


def test_pool_store_writes_once_and_never_edits(tmp_path):
    store = PoolStore(tmp_path)
    pool = _pool()
    path = store.put(pool)
    assert store.get("synthetic", "p1") == pool
    assert store.put(pool) == path  # the identical pool again: a no-op
    edited = Pool("p1", "synthetic", pool.messages[:4], recruiter_key="r")
    with pytest.raises(PoolExistsError, match="never edited"):
        store.put(edited)
    assert store.get("synthetic", "p1") == pool
    path.write_text("{not json")
    with pytest.raises(ValueError, match=str(path)):
        store.get("synthetic", "p1")


def test_unparsed_reply_is_kept_as_it_came_back():
    message = message_from_reply(1, Role("r", "f"), "I think it is 7.", key="k", error=None)
    assert message.present and message.hypothesis is None and "missing" in message.parse_error
    failed = message_from_reply(2, Role("r", "f"), "", key="k2", error="timeout")
    assert not failed.present and failed.proposed_answer is None


def test_designs_cover_each_message_once_per_k():
    pool = _pool()
    single = single_message_design(pool)
    assert [r.arm for r in single].count("solo") == 1
    assert sorted(r.message for r in single if r.arm == "single") == [1, 2, 3, 4, 5]
    loo = leave_one_out_design(pool)
    for k in (2, 3, 4, 5):
        full = [r for r in loo if r.arm == "full" and r.k == k]
        assert len(full) == 1 and [i for i, _ in full[0].shown] == list(range(1, k + 1))
        dropped = [r.message for r in loo if r.arm == "loo" and r.k == k]
        assert sorted(dropped) == list(range(1, k + 1))
    # A failed call removes every prefix that would contain it.
    assert {r.k for r in leave_one_out_design(_pool(failed=(3,)))} == {2}


def test_repeated_design_gives_every_call_its_block_and_a_distinct_draw():
    replays = repeated_design(_pool(), blocks=3)
    assert len(replays) == 3 * (2 + 5)
    views = {}
    for replay in replays:
        key = (replay.shown, replay.replicate)
        assert key not in views, "two replays of one view share a draw"
        views[key] = replay
        assert replay.block in (0, 1, 2)


def test_neutral_replacement_is_about_as_long_and_says_nothing():
    pool = _pool()
    whole = render_view(pool, [(1, "whole")])
    neutral = render_view(pool, [(1, "neutral")])
    assert abs(count_tokens(whole) - count_tokens(neutral)) <= 3
    assert "area" not in neutral and "1" not in neutral.splitlines()[-1]


def _rows(records: list[dict]) -> pd.DataFrame:
    base = {"benchmark": "synthetic", "k": 0, "message": np.nan, "block": np.nan, "valid": 1}
    return pd.DataFrame([{**base, **r} for r in records])


def test_single_and_loo_effects_are_labelled_by_hand():
    rows = _rows(
        [
            {"problem": "p", "arm": "solo", "correct": 0},
            {"problem": "p", "arm": "single", "k": 1, "message": 1, "correct": 1},
            {"problem": "p", "arm": "single", "k": 1, "message": 2, "correct": 0},
            {"problem": "p", "arm": "single", "k": 1, "message": 3, "valid": 0, "correct": np.nan},
            {"problem": "p", "arm": "full", "k": 2, "correct": 0},
            {"problem": "p", "arm": "loo", "k": 2, "message": 1, "correct": 1},
            {"problem": "p", "arm": "loo", "k": 2, "message": 2, "correct": 0},
        ]
    )
    single = single_message_effects(rows).set_index("message")["category"]
    assert single.to_dict() == {1: "helpful", 2: "neutral", 3: "unscored"}
    loo = leave_one_out_effects(rows).set_index("message")["category"]
    assert loo.to_dict() == {1: "harmful", 2: "neutral"}
    proposals = pd.DataFrame(
        {"problem": "p", "message": [1, 2, 3], "proposal_correct": [0, 1, np.nan]}
    )
    cells = six_cells(single_message_effects(rows), proposals).set_index("proposal")
    assert cells.loc["wrong", "helpful"] == 1 and cells.loc["correct", "neutral"] == 1
    assert cells.loc["unreadable", "unscored"] == 1
    share = helpful_share(cells.reset_index())
    wrong = share[(share["benchmark"] == "pooled") & (share["proposal"] == "wrong")].iloc[0]
    assert wrong["helpful_share"] == 1.0 and 0 < wrong["share_low"] < 1


def test_a_failed_call_never_shifts_a_repeated_pairing():
    records = []
    # Block 0: full calls 1, 1; message 1 removed -> 0 (effect +1).
    # Block 1: full calls 0 and FAILED; message 1 removed -> 0 (effect 0).
    # Block 2: full 1, 1; removal of message 1 FAILED: the block is dropped for message 1.
    for block, fulls, removal in ((0, (1, 1), 0), (1, (0, None), 0), (2, (1, 1), None)):
        for slot, value in enumerate(fulls):
            records.append(
                {
                    "problem": "p",
                    "arm": "full",
                    "k": 2,
                    "block": block,
                    "replicate": 2 * block + slot,
                    "valid": int(value is not None),
                    "correct": value,
                }
            )
        records.append(
            {
                "problem": "p",
                "arm": "drop-1",
                "k": 2,
                "message": 1,
                "block": block,
                "replicate": block,
                "valid": int(removal is not None),
                "correct": removal,
            }
        )
    values = trajectory_values(_rows(records)).set_index("message")
    assert values.loc[1, "blocks"] == 2
    assert values.loc[1, "value"] == pytest.approx((1 + 0) / 2)


def test_within_block_permutation_keeps_each_block_intact():
    rng = np.random.default_rng(0)
    values = np.arange(12.0)
    strata = np.array([0, 1, 2] * 4)
    for row in _permuted(values, 50, rng, strata):
        for code in range(3):
            assert sorted(row[strata == code]) == sorted(values[strata == code])


def test_blocked_max_statistic_finds_a_planted_removal_effect_and_not_a_null_one():
    blocks = np.repeat(np.arange(20), 3)
    arm = np.tile(["full", "drop-1", "drop-2"], 20)
    planted = np.where(arm == "drop-1", 0.0, 1.0)  # removing message 1 always fails
    frame = pd.DataFrame({"arm": arm, "correct": planted, "block": blocks})
    result = max_statistic_test(frame, reference="full", block="block", n_permutations=2000)
    by_arm = result.arms.set_index("arm")
    assert by_arm.loc["drop-1", "p_adjusted"] < 0.01
    assert by_arm.loc["drop-2", "p_adjusted"] > 0.5


@pytest.mark.skipif(
    not (SHARED / "dhd_reference").exists(), reason="../shared/data/dhd_reference not present"
)
def test_reference_flip_shares_recomputed_from_released_counts_match_the_paper():
    from deliberation.experiments.dhd import reference

    table = reference.flip_direction(SHARED / "dhd_reference")
    assert (table["helpful_share"] - table["reported_share"]).abs().max() < 1e-9
    loo_wrong = table[
        (table["metric"] == "In-pool LOO") & (table["proposal_correctness"] == "wrong")
    ]
    shares = dict(zip(loo_wrong["model"], loo_wrong["helpful_share"], strict=True))
    expected = reference.expected_headline(SHARED / "dhd_reference")
    assert shares["OSS"] == pytest.approx(expected["OSS|wrong"], abs=1e-6)
    assert shares["Gemma"] == pytest.approx(expected["Gemma|wrong"], abs=1e-6)
    # The released counts do not say which problems the flips come from: with the clusters
    # unknown, the Wilson bounds (flips as independent) are withheld, and the note says why.
    assert table[["share_low", "share_high"]].isna().all().all()
    assert table["n_clusters"].isna().all() and table["interval"].str.contains("unknown").all()
    bench = reference.by_benchmark(SHARED / "dhd_reference")
    assert bench[["share_low", "share_high"]].isna().all().all()
    by_k = reference.loo_by_k(SHARED / "dhd_reference")
    assert (by_k["rate"] - by_k["reported_rate"]).abs().max() < 1e-9
