"""The natural discussion end to end on the sim: what each agent is shown, the rows, the cache,
invalid votes, the paraphrases the sim writes, and the command."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from helpers.natural_profiles import RecordingClient, sim_profile

from deliberation.cli import main
from deliberation.discussion.disclosure import disclosure
from deliberation.experiments.memory.runs import crossprofile_tasks
from deliberation.experiments.natural import prompts as natural_prompts
from deliberation.experiments.natural import report
from deliberation.experiments.natural import sim as sim_natural
from deliberation.experiments.natural.discussion import read_vote
from deliberation.experiments.natural.runs import (
    DISCLOSURE_COLUMNS,
    ROW_COLUMNS,
    run_natural_experiment,
)
from deliberation.inference.base import ChatResponse
from deliberation.profiles.profile import load_profile

POLICIES = ("R1", "B3", "R1-rel", "empty")


@pytest.fixture(scope="module")
def tasks():
    return crossprofile_tasks("main", 1, seed=0)  # one template, 8 ownership variants


def run(tmp_path, profile, tasks, client=None, **kwargs):
    client = client or RecordingClient(profile, tmp_path / f"{profile.name}.sqlite")
    result = run_natural_experiment(
        "crossprofile", tasks, profile, client, policies=POLICIES, progress=False, **kwargs
    )
    return result, client


def test_each_agent_sees_its_own_facts_and_the_others_latest_messages(tmp_path, tasks):
    profile = sim_profile(tmp_path, "seen")
    result, client = run(tmp_path, profile, tasks[:2], variants=("plain",))
    discussion = result.discussions[0]
    task = discussion.task
    initial = client.prompts("natural.crossprofile.vote.initial")
    assert len(initial) == 2 * len(task.agents)
    for agent, prompt in zip(discussion.order, initial, strict=False):
        assert natural_prompts.AGENT_MARKER.format(agent=agent) in prompt
        for fact in task.facts:
            assert (fact.text in prompt) == (agent in fact.holders)
        assert natural_prompts.FACTS_HEADER in prompt  # numbered, order carries no meaning
    # Round 1: the k-th speaker reads the k-1 messages before it; round 2: everyone else's.
    first, second = discussion.order[0], discussion.order[1]
    round1 = client.prompts("natural.crossprofile.round.1")
    round2 = client.prompts("natural.crossprofile.round.2")
    by_agent = {m.agent: m for m in discussion.messages if m.round == 1}
    assert natural_prompts.NO_MESSAGES in round1[0]
    # Requests go one batch per speaking position: [discussion 0, discussion 1] each time.
    assert f"{first}: {by_agent[first].text}" in round1[2]  # speaker 2 of discussion 0
    assert f"{second}: {by_agent[second].text}" not in round1[2]
    last_speaker_round2 = round2[2 * (len(task.agents) - 1)]
    own = by_agent[discussion.order[-1]].text
    assert f"{natural_prompts.OWN_HEADER}\n{own}" in last_speaker_round2
    later = {m.agent: m for m in discussion.messages if m.round == 2}
    for agent in discussion.order[:-1]:  # everyone before it has spoken again in round 2
        assert f"{agent}: {later[agent].text}" in last_speaker_round2
    # The final vote reads every message of both rounds.
    final = client.prompts("natural.crossprofile.vote.final")[0]
    assert all(m.text in final for m in discussion.messages)


def test_rows_columns_counts_and_a_rerun_sends_nothing(tmp_path, tasks):
    profile = sim_profile(tmp_path, "rows")
    result, client = run(tmp_path, profile, tasks)
    rows, n_discussions = result.rows, 2 * len(tasks)
    assert list(rows.columns) == list(ROW_COLUMNS)
    assert list(result.disclosure.columns) == list(DISCLOSURE_COLUMNS)
    votes = rows[rows["kind"] == "vote"]
    assert len(votes) == n_discussions * 4 * 2
    assert set(votes["stage"]) == {"initial", "final"}
    decisions = rows[rows["kind"] == "decision"]
    assert decisions.groupby(["task", "prompt"]).size().eq(2 + len(POLICIES)).all()
    assert set(decisions["policy"]) == {"transcript", "every-fact", *POLICIES}
    assert decisions.loc[decisions["policy"] == "R1", "budget"].eq(0.6).all()
    assert len(result.disclosure) == n_discussions * 12
    assert set(result.disclosure["label"]) <= {"full", "partial", "none"}
    # The two variants of a task were discussed with different seeds.
    assert rows.groupby("prompt")["seed"].nunique().eq(1).all()
    assert rows["seed"].nunique() == 2
    # Identical prompts are sent once (the empty-memory prompt is the same for every variant).
    empty = decisions[decisions["policy"] == "empty"]
    assert empty["key"].nunique() < len(empty)

    again, client2 = run(tmp_path, profile, tasks)
    assert all(s.sent == 0 for s in again.report.stages)
    pd.testing.assert_frame_equal(again.rows, rows)


def test_disclosure_tables_count_the_message_calls_the_labels_were_read_from(tmp_path, tasks):
    """A disclosure label is read from a discussion's messages: each rate says how many distinct
    message calls it rests on (the discussion's round calls), beside its rows."""
    from deliberation.experiments.natural import report

    profile = sim_profile(tmp_path, "calls")
    result, _ = run(tmp_path, profile, tasks[:2], variants=("plain",))
    calls = [{m.key for m in d.messages} for d in result.discussions]
    assert all(len(keys) == 2 * 4 for keys in calls)  # 2 rounds x 4 agents, each its own call
    with_private = [
        keys
        for d, keys in zip(result.discussions, calls, strict=True)
        if any(len(f.holders) == 1 for f in d.task.facts)
    ]
    assert 0 < len(with_private) < len(calls)  # the fixture's first variant has no private fact
    table = report.disclosure_table(result.disclosure, n_resamples=20)
    private = table[(table["private"] == 1) & (table["disclosure"] == "full")].iloc[0]
    assert private["n_calls"] == len(set().union(*with_private))
    assert private["n_rows"] == int((result.disclosure["private"] == 1).sum())
    everything = table[(table["private"] == 0) & (table["disclosure"] == "none")].iloc[0]
    assert everything["n_calls"] == len(set().union(*calls)) == 2 * 2 * 4
    measures = report.accuracy_table(result.rows, result.disclosure, n_resamples=20)
    full = measures[measures["measure"] == report.FULL_PRIVATE].iloc[0]
    assert full["n_calls"] == len(set().union(*with_private))
    assert full["n_rows"] == len(with_private)  # one rate per discussion


def test_decisions_that_are_the_same_calls_say_so_and_votes_are_not_compared(tmp_path, tasks):
    """Two memories that came out identical send the same decision prompt: one cached call,
    one observation, however many rows show it."""
    profile = sim_profile(tmp_path, "same")
    result, _ = run(tmp_path, profile, tasks[:2], variants=("plain",))
    rows = result.rows
    copied = rows[(rows["kind"] == "decision") & (rows["policy"] == "R1")].assign(policy="copy")
    measures = report.accuracy_table(pd.concat([rows, copied]), result.disclosure, n_resamples=20)
    same = measures.set_index("measure")["same_calls_as"]
    assert same["decision: copy"] == "decision: R1" and same["decision: R1"] == ""
    # a share and a majority of the same votes are two measures, not one observation twice
    assert (same[same.index.str.startswith("group")] == "").all()


def test_the_paired_prompt_effect_counts_the_calls_of_both_prompts(tmp_path, tasks):
    from deliberation.experiments.natural import report

    profile = sim_profile(tmp_path, "paired")
    result, _ = run(tmp_path, profile, tasks[:2])
    effect = report.paired_effect(result.rows, result.disclosure, n_resamples=20)
    transcript = effect[effect["measure"] == "decision: transcript"].iloc[0]
    rows = result.rows
    decided = rows[(rows["kind"] == "decision") & (rows["policy"] == "transcript")]
    assert set(decided["prompt"]) == {"plain", "evidence-first"}
    assert transcript["n_calls"] == decided["key"].nunique() == 2 * 2
    assert transcript["n_rows"] == 2  # one difference per task
    # one prompt only (the reduced SmolLM2 grid): no row, but the header a table with
    # inference needs (its clusters and calls), so the published scan passes it
    from deliberation.stats.small_samples import inference_leaks

    plain = result.rows[result.rows["prompt"] == "plain"]
    disclosure = result.disclosure[result.disclosure["prompt"] == "plain"]
    empty = report.paired_effect(plain, disclosure, n_resamples=20)
    assert empty.empty and list(empty.columns) == list(effect.columns)
    none = report.policy_contrasts(plain, [("R1", "missing")], n_resamples=20)
    some = report.policy_contrasts(plain, [("R1", "B3")], n_resamples=20)
    assert none.empty and list(none.columns) == list(some.columns)
    assert inference_leaks(empty) == [] and "n_calls" in none


def test_invalid_votes_are_recorded_counted_and_scored_wrong(tmp_path, tasks):
    profile = sim_profile(tmp_path, "invalid", natural_invalid_vote=0.4)
    result, _ = run(tmp_path, profile, tasks, variants=("plain",))
    votes = result.rows[result.rows["kind"] == "vote"]
    invalid = votes[votes["valid"] == 0]
    assert len(votes) == len(tasks) * 4 * 2  # none dropped
    assert 0.2 < len(invalid) / len(votes) < 0.6
    assert (invalid["answer"] == "").all() and (invalid["correct"] == 0).all()
    assert invalid["error"].str.contains("no single option").all()
    counted = report.invalid_table(result.rows).set_index(["kind", "what"])
    assert counted.loc[("vote", "initial"), "invalid"] + counted.loc[
        ("vote", "final"), "invalid"
    ] == len(invalid)
    assert f"invalid votes: {len(invalid)} (counted wrong)" in "\n".join(result.lines())
    groups = report.group_votes(result.rows)
    final = votes[votes["stage"] == "final"]
    assert groups.loc[groups["stage"] == "final", "share_correct"].mean() == pytest.approx(
        final.groupby("task")["correct"].mean().mean()
    )


def test_read_vote():
    options = ("Alpha", "Beta")
    ok = ChatResponse(text='{"vote": "Beta", "rationale": "r"}', parsed={"vote": "Beta"})
    assert read_vote(ok, options)[0] == "Beta"
    off = ChatResponse(text='{"vote": "Gamma", "rationale": "r"}')
    assert read_vote(off, options) == (None, "r", "vote names no single option")
    assert read_vote(ChatResponse(text="I vote for Alpha."), options)[0] == "Alpha"
    assert read_vote(ChatResponse(text="", error="boom"), options)[2] == "call failed: boom"


def test_sim_paraphrases_are_partial_disclosures(tasks):
    rng = np.random.default_rng(0)
    labels = [
        disclosure(f.text, [("A1", sim_natural.paraphrase(f.text, 0.6, rng))]).label
        for f in tasks[0].facts
    ]
    assert labels == ["partial"] * len(labels)
    assert disclosure(tasks[0].facts[0].text, [("A1", sim_natural.paraphrase(
        tasks[0].facts[0].text, 0.2, rng))]).label == "none"  # fmt: skip


def test_group_majority_needs_a_strict_lead():
    base = {"profile": "p", "kind": "vote", "benchmark": "b", "template": "t", "variant": "", "prompt": "plain",
            "replicate": 0, "stage": "final"}  # fmt: skip
    votes = [("X", 1), ("X", 1), ("Y", 0), ("Y", 0)]
    rows = pd.DataFrame(
        [base | {"task": "tie", "answer": a, "correct": c, "valid": 1} for a, c in votes]
        + [base | {"task": "lead", "answer": a, "correct": c, "valid": 1} for a, c in votes[:3]]
        + [base | {"task": "wrong", "answer": a, "correct": c, "valid": int(a != "")}
           for a, c in [("", 0), ("", 0), ("Y", 0)]]
    )  # fmt: skip
    groups = report.group_votes(rows).set_index("task")
    assert groups.loc["tie", "majority_correct"] == 0
    assert groups.loc["lead", "majority_correct"] == 1
    assert groups.loc["wrong", "majority_correct"] == 0
    assert groups.loc["wrong", "invalid"] == 2
    assert groups.loc["lead", "share_correct"] == pytest.approx(2 / 3)


def test_every_natural_sim_parameter_is_declared_and_shipped():
    shipped = load_profile("sim").options.parameters
    natural = {k for k in shipped if k.startswith("natural_")}
    assert natural == set(sim_natural.PARAMETERS)


def test_the_command_writes_rows_and_disclosure(tmp_path, capsys):
    out = tmp_path / "rows.csv"
    code = main(["run", "natural", "--profile", "smoke", "--benchmarks", "crossprofile",
                 "--limit", "1", "--cache", str(tmp_path / "c.sqlite"), "--out", str(out),
                 "--no-progress"])  # fmt: skip
    assert code == 0
    rows = pd.read_csv(out, keep_default_na=False)
    added = {"model", "gold", "outcome"}
    assert [c for c in rows.columns if c not in added] == [
        "request_key" if c == "key" else c for c in ROW_COLUMNS
    ]
    assert (rows["outcome"] != "failed").all() and (rows["gold"] != "").all()
    assert len(rows[rows["kind"] == "vote"]) == 8 * 2 * 4 * 2
    assert (tmp_path / "rows_disclosure.csv").is_file()
    assert (tmp_path / "rows.csv.provenance.json").is_file()
    printed = capsys.readouterr().out
    assert "synthetic" in printed and "accuracy (%) by policy and budget" in printed
    assert "initial" in printed and "final" in printed  # the votes' accuracy
    assert main(["run", "natural", "--profile", "smoke", "--benchmarks", "nope",
                 "--out", str(out)]) == 2  # fmt: skip


def test_vote_prompts_show_the_json_answer_with_single_braces():
    """The vote texts are not format strings: doubled braces reached the model, which copied
    them, and its vote JSON then failed to parse."""
    for prompt in (
        natural_prompts.vote_prompt("Pick.", ["cost"], ["A", "B"], "A1", 2, ["fact"]),
        natural_prompts.vote_prompt("Pick.", ["cost"], ["A", "B"], "A1", 2, ["fact"], []),
    ):
        assert ' {"vote": "<one option name>"' in prompt
        assert "{{" not in prompt and "}}" not in prompt
