"""Scripted discussion and memory candidates on a small hand-made task."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from deliberation.discussion import memory_candidates, scripted_discussion
from deliberation.discussion.scripted import turn_order


@dataclass(frozen=True)
class Fact:
    id: str
    text: str
    holders: tuple[str, ...]


@dataclass(frozen=True)
class Task:
    id: str
    facts: tuple[Fact, ...]
    agents: tuple[str, ...] = ("A1", "A2", "A3", "A4")


# Fact order deliberately not grouped by role or id: the discussion must keep it.
TASK = Task(
    id="toy/SP-DS-IP",
    facts=(
        Fact("i2", "Gamma's office has plants.", ("A1", "A2", "A3", "A4")),
        Fact("s1", "Alpha passed the audit.", ("A2",)),
        Fact("d1", "Beta won awards.", ("A1", "A2", "A3", "A4")),
        Fact("s2", "Alpha cut costs.", ("A4",)),
        Fact("i1", "Beta's logo is blue.", ("A3",)),
    ),
)


def test_every_agent_states_every_fact_it_holds_in_task_order():
    transcript = scripted_discussion(TASK, seed=0)
    assert sorted(t.agent for t in transcript.turns) == sorted(TASK.agents)
    order = [f.id for f in TASK.facts]
    for turn in transcript.turns:
        said = [s.fact_id for s in turn.statements]
        held = [f.id for f in TASK.facts if turn.agent in f.holders]
        assert said == held  # every held fact, in the task's order
        assert said == sorted(said, key=order.index)


def test_turn_order_is_seeded_by_task_and_seed():
    first = turn_order(TASK.id, TASK.agents, 0)
    assert first == turn_order(TASK.id, TASK.agents, 0)
    assert len({turn_order(TASK.id, TASK.agents, s) for s in range(10)}) > 1
    assert len({turn_order(f"t{k}", TASK.agents, 0) for k in range(10)}) > 1


def test_candidates_are_unique_with_holder_tags_in_first_mention_order():
    transcript = scripted_discussion(TASK, seed=0)
    speakers = [t.agent for t in transcript.turns]
    candidates = memory_candidates(transcript)
    assert sorted(c.fact_id for c in candidates) == sorted(f.id for f in TASK.facts)
    expected_order = list(dict.fromkeys(s.fact_id for s in transcript.statements()))
    assert [c.fact_id for c in candidates] == expected_order
    assert [c.first_mention for c in candidates] == list(range(len(candidates)))
    by_id = {c.fact_id: c for c in candidates}
    assert by_id["d1"].tag == "[A1,A2,A3,A4]"
    assert by_id["s1"].tag == "[A2]" and by_id["s1"].n_holders == 1
    # The first speaker's facts come first, shared ones included.
    first = [f.id for f in TASK.facts if speakers[0] in f.holders]
    assert [c.fact_id for c in candidates[: len(first)]] == first


def test_same_fact_with_two_texts_is_an_error():
    from deliberation.discussion.transcript import Statement, Transcript, Turn

    bad = Transcript(
        "t",
        ("A1", "A2"),
        (
            Turn("A1", (Statement("A1", "x", "one text"),)),
            Turn("A2", (Statement("A2", "x", "another text"),)),
        ),
    )
    with pytest.raises(ValueError, match="two texts"):
        memory_candidates(bad)


def test_fact_held_by_an_unknown_agent_is_an_error():
    task = Task(id="t", facts=(Fact("a", "text", ("A9",)),))
    with pytest.raises(ValueError, match="unknown agents"):
        scripted_discussion(task)


def test_serves_crossprofile_tasks_in_their_fact_order():
    from deliberation.benchmarks.crossprofile import load_bank
    from deliberation.benchmarks.crossprofile.tasks import derive_tasks

    templates = load_bank()[:2]
    for task in derive_tasks(templates):
        transcript = scripted_discussion(task, seed=3)
        candidates = memory_candidates(transcript)
        assert len(candidates) == len(task.facts)
        for turn in transcript.turns:
            ids = [s.fact_id for s in turn.statements]
            task_order = [f.id for f in task.facts]
            assert ids == [i for i in task_order if i in ids]
        for c in candidates:
            fact = next(f for f in task.facts if f.id == c.fact_id)
            assert c.holders == fact.holders and c.text == fact.text
