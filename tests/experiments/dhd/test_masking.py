"""DHD component masking: the arms, the answer-leak guard, the sim's reading of masked messages,
and recovery of planted reasoning help on the sim."""

from __future__ import annotations

import pandas as pd
import pytest

from deliberation.experiments.dhd import labels, masking, synthetic
from deliberation.experiments.dhd.messages import Hypothesis
from deliberation.experiments.dhd.pool import Pool, PoolStore, Role, message_from_reply
from deliberation.experiments.dhd.protocol import (
    INTEGRATOR,
    build_pools,
    problem_text,
    proposal_rows,
    run_replays,
)
from deliberation.experiments.dhd.replay import Replay, integrator_messages, repeated_design
from deliberation.inference.cache import ResponseCache
from deliberation.inference.client import CachedClient
from deliberation.inference.generation import stage_request
from deliberation.inference.sim import SimBackend
from deliberation.profiles.profile import load_profile

PROFILE = load_profile("sim")


def _client(tmp_path, **parameters) -> CachedClient:
    return CachedClient(
        SimBackend(parameters=parameters),
        ResponseCache(tmp_path / "cache.sqlite"),
        profile="t",
        progress=False,
    )


def _hypothesis(answer: str, key_idea: str = "split the count into boxes") -> Hypothesis:
    return Hypothesis(
        role_name="Decomposer",
        proposed_answer=answer,
        reasoning_direction="boxes = 6 x 12 = 72; items = boxes x 18 = 1,296",
        key_idea=key_idea,
        critical_assumption="every crate is full",
        what_to_check="the unit of each count",
        confidence="high",
    )


def _pool(hypotheses: list[Hypothesis], problem: str = "p1") -> Pool:
    messages = tuple(
        message_from_reply(i, Role(f"role {i}", "f"), h.render(), key=f"k{i}", error=None)
        for i, h in enumerate(hypotheses, start=1)
    )
    return Pool(problem, "synthetic", messages, recruiter_key="r")


def test_mentions_matches_whole_normalised_answers_only():
    assert masking.mentions("items = 1,296 in all", "1296") == 1
    assert masking.mentions("we get 1272 and 7.2", "72") == 0
    assert masking.mentions("so x = 72.", "72") == 1
    assert masking.mentions("Option (B) it is", "b") == 1
    assert masking.mentions("anything", " ") == 0


def test_a_message_whose_reasoning_states_its_answer_is_flagged_not_masked():
    leaking = _hypothesis("1296")  # its reasoning direction ends on 1,296
    clean = _hypothesis("1300")
    stated = _hypothesis("5", key_idea="the answer is 5 cartons")
    assert masking.answer_leaks(leaking) == ["reasoning_direction"]
    assert masking.answer_leaks(clean) == []
    assert masking.answer_leaks(stated) == ["key_idea"]
    pools = {"p1": _pool([leaking, clean, stated])}
    cases = pd.DataFrame(
        {"problem": "p1", "benchmark": "synthetic", "message": [1, 2, 3], "cell": "wrong-helpful"}
    )
    flagged = masking.flag_answer_leaks(pools, cases)
    assert flagged["answer_leak"].tolist() == ["reasoning_direction", "", "key_idea"]
    replays = masking.masking_replays(pools, cases, replicates=2)  # checks the pool itself
    answer_masked = {r.message for r in replays if r.arm == "masking-answer"}
    assert answer_masked == {2}
    assert masking.cases_summary(flagged)["flagged"].tolist() == [2]


def test_a_message_that_did_not_parse_cannot_be_a_masking_case():
    pool = Pool(
        "p1",
        "synthetic",
        (message_from_reply(1, Role("r", "f"), "I think 7.", key="k", error=None),),
        recruiter_key="r",
    )
    cases = pd.DataFrame({"problem": ["p1"], "message": [1]})
    with pytest.raises(ValueError, match="did not parse"):
        masking.flag_answer_leaks({"p1": pool}, cases)


def test_arms_are_interleaved_share_a_draw_and_show_what_they_claim():
    pool = _pool([_hypothesis(str(900 + i)) for i in range(5)])
    replays = masking.masking_design(pool, message=3, replicates=5, seed=1)
    assert len(replays) == 5 * 6
    orders = set()
    for replicate in range(5):
        block = replays[replicate * 6 : (replicate + 1) * 6]
        orders.add(tuple(r.arm for r in block))
        by_arm = {r.arm: r for r in block}
        assert set(by_arm) == set(masking.ARMS)
        full = by_arm["masking-full"]
        assert by_arm["masking-repeat"].shown == full.shown
        assert by_arm["masking-repeat"].replicate == full.replicate + 1
        shared = {r.replicate for r in block if r.arm != "masking-repeat"}
        assert shared == {full.replicate} and full.replicate >= masking.MASKING_SAMPLE_BASE
        assert [i for i, _ in by_arm["masking-removal"].shown] == [1, 2, 4, 5]
        for arm, transform in (
            ("masking-neutral", "neutral"),
            ("masking-answer", "mask-answer"),
            ("masking-reasoning", "mask-reasoning"),
        ):
            assert by_arm[arm].shown[2] == (3, transform)
            assert all(t == "whole" for i, t in by_arm[arm].shown if i != 3)
    assert len(orders) > 1, "arms should be interleaved in a different order per replicate"
    draws = {(r.shown, r.replicate) for r in replays}
    assert len(draws) == len(replays), "two replays of one view share a draw"


def test_a_masked_answer_adds_no_mention_of_it_to_the_prompt(tmp_path):
    """Over sim pools: the answer-masked prompt mentions the case's answer exactly as often as
    the prompt without the message (other messages may state it too), whenever not flagged."""
    items = synthetic.synthetic_bank(12, seed=4)
    by_id = {item.id: item for item in items}
    pools, _ = build_pools(PROFILE, _client(tmp_path), items, PoolStore(tmp_path / "pools"))
    checked = flagged = 0
    for pool in pools.values():
        text = problem_text(by_id[pool.problem_id])
        for message in pool.messages:
            hypothesis = message.hypothesis
            if hypothesis is None:
                continue
            design = {r.arm: r for r in masking.masking_design(pool, message.index, 1)}
            prompts = {
                arm: integrator_messages(text, pool, design[arm])[1]
                for arm in ("masking-answer", "masking-removal", "masking-full")
            }
            answer = hypothesis.proposed_answer
            if masking.answer_leaks(hypothesis):
                flagged += 1
                continue
            checked += 1
            counts = {arm: masking.mentions(p, answer) for arm, p in prompts.items()}
            assert counts["masking-answer"] == counts["masking-removal"]
            assert counts["masking-full"] > counts["masking-answer"]
    assert checked > 20 and flagged > 0


def _integrator_reply(backend: SimBackend, item, pool: Pool, replay: Replay) -> str:
    system, user = integrator_messages(problem_text(item), pool, replay)
    request = stage_request(PROFILE, INTEGRATOR, user, system=system, sample=replay.replicate)
    return backend.answer(request).text


@pytest.mark.experiments
def test_the_sim_integrator_loses_exactly_the_masked_component(tmp_path):
    """Steps it works with: masking the answer leaves them as with the whole message; masking
    the reasoning leaves them as without the message. Nothing else changes."""
    parameters = {"dhd_integrator_self_skill": 0.4, "dhd_answer_pull_per_vote": 0.0}
    items = synthetic.synthetic_bank(10, seed=6)
    by_id = {item.id: item for item in items}
    pools, _ = build_pools(
        PROFILE, _client(tmp_path, **parameters), items, PoolStore(tmp_path / "p")
    )
    backend = SimBackend(parameters=parameters)
    differs = 0
    for pool in pools.values():
        for message in pool.messages:
            if message.hypothesis is None:
                continue
            for replay_set in (masking.masking_design(pool, message.index, 2),):
                by = {}
                for replay in replay_set:
                    reply = _integrator_reply(backend, by_id[pool.problem_id], pool, replay)
                    by[(replay.arm, replay.replicate // 2)] = reply.split("\n")[0]
                for replicate in {key[1] for key in by}:
                    work = {arm: by[(arm, replicate)] for arm, _ in by if _ == replicate}
                    assert work["masking-answer"] == work["masking-full"]
                    assert work["masking-reasoning"] == work["masking-removal"]
                    differs += work["masking-full"] != work["masking-removal"]
    assert differs > 5, "the check is vacuous if hiding a message never changes the steps"


@pytest.mark.experiments
def test_masking_the_reasoning_of_planted_helpful_messages_removes_their_help(tmp_path):
    """Every proposed answer is wrong and every stated step valid (planted wrong-helpful
    messages); the integrator knows each step alone with probability 0.5. Chosen as
    wrong-helpful from repeated replays, such messages lose their help when their reasoning is
    hidden, and keep it when only their (wrong) answer is hidden."""
    parameters = {
        "dhd_answer_skill": 0.0,
        "dhd_step_skill_when_wrong": 1.0,
        "dhd_integrator_self_skill": 0.5,
        "dhd_uptake": 1.0,
        "dhd_error_uptake": 0.0,
        "dhd_step_coverage": 0.3,
    }
    client = _client(tmp_path, **parameters)
    items = synthetic.synthetic_bank(60, seed=1)
    by_id = {item.id: item for item in items}
    pools, _ = build_pools(PROFILE, client, items, PoolStore(tmp_path / "pools"))
    repeated = [r for pool in pools.values() for r in repeated_design(pool, blocks=3)]
    rows = run_replays(PROFILE, client, by_id, pools, repeated)
    values = labels.trajectory_values(rows)
    cases = masking.choose_cases(values, proposal_rows(by_id, pools), per_cell=10)
    assert (cases["cell"] == "wrong-helpful").sum() == 10
    assert (cases.loc[cases["cell"] == "wrong-helpful", "value"] >= 0.5).all()
    masked, cases = masking.run_masking(PROFILE, client, by_id, pools, cases, replicates=5)
    assert set(masked["cell"]) == set(cases["cell"])
    table = masking.masking_table(masked, n_resamples=1000).set_index(["cell", "arm"])
    helpful = table.loc["wrong-helpful"]
    assert helpful.loc["masking-full", "events"] == 5 * helpful.loc["masking-full", "cases"]
    reasoning = helpful.loc["masking-reasoning"]
    assert reasoning["minus_full_high"] < 0, "hiding the reasoning should remove the help"
    answer = helpful.loc["masking-answer"]
    assert abs(answer["minus_full"]) <= 0.1, "hiding a wrong answer should change little"
    assert reasoning["minus_full"] < answer["minus_full"] - 0.2


def test_cases_are_chosen_by_cell_strongest_first_across_benchmarks():
    values = pd.DataFrame(
        {
            "problem": ["a1", "a2", "a3", "b1", "b2", "c1", "c2"],
            "benchmark": ["A", "A", "A", "B", "B", "C", "C"],
            "message": [1, 1, 1, 2, 2, 3, 3],
            "value": [1.0, 0.75, 0.5, 0.6, -1.0, 0.25, -0.5],
            "blocks": 4,
        }
    )
    proposals = pd.DataFrame(
        {
            "problem": values["problem"],
            "message": values["message"],
            "proposal_correct": pd.array([0, 0, 0, 0, 1, 0, None], dtype="Int64"),
        }
    )
    cases = masking.choose_cases(values, proposals, per_cell=3)
    helpful = cases[cases["cell"] == "wrong-helpful"]
    # Strongest of each benchmark first (a1, then b1), then A's next strongest.
    assert helpful["problem"].tolist() == ["a1", "b1", "a2"]
    assert cases.loc[cases["cell"] == "correct-harmful", "problem"].tolist() == ["b2"]
    assert "c1" not in set(cases["problem"]), "below min_value: no cell"
    assert "c2" not in set(cases["problem"]), "unreadable proposal: no cell"
    assert list(cases.columns) == masking.CASE_COLUMNS
    tests = pd.DataFrame(
        {"problem": ["a1", "b1", "a2"], "message": [1, 2, 1], "p_adjusted": [0.01, 0.2, 0.04]}
    )
    repeatable = masking.choose_cases(values, proposals, per_cell=3, tests=tests, max_p=0.05)
    assert repeatable["problem"].tolist() == ["a1", "a2"]


def test_masking_table_compares_each_arm_with_full_on_the_cases_that_ran_it():
    records = []
    for problem, answer_runs in (("p", True), ("q", False)):
        for _ in range(4):
            outcomes = {
                "masking-full": 1,
                "masking-answer": 0,
                "masking-reasoning": int(problem == "q"),
            }
            for arm, correct in outcomes.items():
                if arm == "masking-answer" and not answer_runs:
                    continue
                records.append(
                    {
                        "problem": problem,
                        "message": 1,
                        "cell": "wrong-helpful",
                        "arm": arm,
                        "valid": 1,
                        "correct": correct,
                    }
                )
    records.append(
        {
            "problem": "q",
            "message": 1,
            "cell": "wrong-helpful",
            "arm": "masking-full",
            "valid": 0,
            "correct": None,
        }
    )
    table = masking.masking_table(pd.DataFrame(records), n_resamples=200).set_index("arm")
    assert table.loc["masking-full", "invalid"] == 1 and table.loc["masking-full", "events"] == 8
    assert table.loc["masking-answer", "cases"] == 1
    assert table.loc["masking-answer", "minus_full"] == pytest.approx(-1.0)
    assert table.loc["masking-reasoning", "success"] == pytest.approx(0.5)
    assert table.loc["masking-reasoning", "minus_full"] == pytest.approx(-0.5)
    assert table.loc["masking-full", "condition"] == "full"


def test_the_masking_table_of_no_case_keeps_its_header():
    """No masking case (no pool drawn): a table with its columns, never a file without any."""
    from deliberation.experiments.dhd.masking import MASKING_TABLE_COLUMNS, masking_table

    rows = pd.DataFrame(columns=["arm", "valid", "correct", "problem", "message", "cell"])
    table = masking_table(rows, n_resamples=20)
    assert table.empty and list(table.columns) == MASKING_TABLE_COLUMNS
