"""Decision prompts: what they hold, and the three holder-tag modes."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

import pytest
from helpers.memory_task import OPTIONS, pool

from deliberation.experiments.memory import prompts
from deliberation.experiments.memory.decision import TAG_MODES, memory_lines, render_decision_prompt
from deliberation.memory_policies import Capacity, build_memory

TAG = re.compile(r"\[A\d+(?:,A\d+)*\]")


@dataclass(frozen=True)
class Task:
    id: str = "toy/SP-DS-IP"
    description: str = "A town picks a supplier among Alpha, Beta and Gamma."
    criteria: tuple[str, ...] = ("safety", "cost")
    options: tuple[str, ...] = OPTIONS


def memory(policy="all", capacity=None):
    return build_memory(policy, pool(), capacity)


def note_lines(prompt: str) -> list[str]:
    block = prompt.split("\n\n")[-2]
    return block.splitlines()[1:]


def test_prompt_holds_description_criteria_options_and_memory_only():
    text = render_decision_prompt(Task(), memory(), "keep")
    assert text.startswith(Task.description)
    assert "Decision criteria: safety; cost." in text
    for option in OPTIONS:
        assert f"- {option}\n" in text or text.endswith(f"- {option}") or f"- {option}\n\n" in text
    for candidate in memory().items:
        assert f"{candidate.tag} {candidate.text}" in text
    assert text.endswith(prompts.DECISION_QUESTION)


def test_remove_leaves_no_holder_tag_anywhere():
    text = render_decision_prompt(Task(), memory(), "remove")
    assert not TAG.search(text)
    assert "agents who stated" not in text
    assert note_lines(text) == [c.text for c in memory().items]


@pytest.mark.parametrize("seed", range(5))
def test_shuffle_keeps_line_order_and_the_multiset_of_tag_sets(seed):
    kept = memory()
    text = render_decision_prompt(Task(), kept, "shuffle", seed=seed)
    lines = note_lines(text)
    tags = [TAG.match(line).group(0) for line in lines]
    texts = [TAG.sub("", line, count=1).strip() for line in lines]
    assert texts == [c.text for c in kept.items]
    assert Counter(tags) == Counter(c.tag for c in kept.items)


def test_shuffle_is_seeded_and_actually_moves_tags():
    kept = memory()
    same = {render_decision_prompt(Task(), kept, "shuffle", seed=1) for _ in range(3)}
    assert len(same) == 1
    keep = render_decision_prompt(Task(), kept, "keep")
    assert any(render_decision_prompt(Task(), kept, "shuffle", seed=s) != keep for s in range(5))


def test_tag_modes_never_change_the_kept_items():
    kept = memory("R1", Capacity.tokens(29))
    bodies = {
        mode: [
            TAG.sub("", line).strip()
            for line in note_lines(render_decision_prompt(Task(), kept, mode))
        ]
        for mode in TAG_MODES
    }
    assert bodies["keep"] == bodies["remove"] == bodies["shuffle"]


def test_empty_memory_and_summary():
    empty = render_decision_prompt(Task(), memory("empty"), "keep")
    assert prompts.NO_NOTES in empty and not TAG.search(empty)
    summary = build_memory("B3", pool(summary="Alpha is safest."), Capacity.tokens(20))
    text = render_decision_prompt(Task(), summary, "keep")
    assert f"{prompts.SUMMARY_HEADER}\nAlpha is safest." in text


def test_unknown_tag_mode():
    with pytest.raises(ValueError, match="tag mode"):
        memory_lines(memory(), "hide")  # type: ignore[arg-type]


def test_no_criteria_line_when_the_task_states_none():
    text = render_decision_prompt(Task(criteria=()), memory(), "keep")
    assert prompts.CRITERIA_HEADER not in text
