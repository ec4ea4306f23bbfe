"""The decision call's prompt, rendered with holder-tag modes (reading the answer:
:mod:`deliberation.inference.answer_parsing`).

The prompt holds the task description, the criteria, the options and the memory only
(:func:`deliberation.experiments.memory.prompts.decision_prompt`). Holder tags have three modes:

- ``keep``: each note shows the agents who stated it, ``[A1,A3] text``;
- ``remove``: no holder tag anywhere in the prompt (the notes header does not mention agents);
- ``shuffle``: the same tag sets reassigned at random among the lines, line order fixed
  (seeded by task, policy, capacity and seed).

The answer is requested as structured output (a choice among the options);
:func:`~deliberation.inference.answer_parsing.parse_choice` reads free text as real models write it when no
structure was enforced (importable from here too, where callers have always found it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol

import numpy as np

from deliberation.experiments.memory.prompts import decision_prompt
from deliberation.inference.answer_parsing import mentioned_options, parse_choice
from deliberation.memory_policies.registry import Memory
from deliberation.seeds import stable_seed

__all__ = [
    "TAG_MODES",
    "memory_lines",
    "mentioned_options",
    "parse_choice",
    "render_decision_prompt",
    "shuffle_rng",
]

_TagMode = Literal["keep", "remove", "shuffle"]
TAG_MODES: tuple[_TagMode, ...] = ("keep", "remove", "shuffle")


class _DecisionTask(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def criteria(self) -> Sequence[str]: ...

    @property
    def options(self) -> Sequence[str]: ...


def shuffle_rng(task_id: str, memory: Memory, seed: int) -> np.random.Generator:
    capacity = None if memory.capacity is None else (memory.capacity.unit, memory.capacity.limit)
    return np.random.default_rng(stable_seed("tag-shuffle", task_id, memory.policy, capacity, seed))


def memory_lines(
    memory: Memory, tag_mode: _TagMode, rng: np.random.Generator | None = None
) -> list[str]:
    """The note lines of an item memory under ``tag_mode`` (line order never changes)."""
    if tag_mode not in TAG_MODES:
        raise ValueError(f"unknown tag mode {tag_mode!r}; expected one of {TAG_MODES}")
    texts = [c.text for c in memory.items]
    if tag_mode == "remove":
        return texts
    tags = [c.tag for c in memory.items]
    if tag_mode == "shuffle":
        if rng is None:
            raise ValueError("tag mode 'shuffle' needs a random generator")
        tags = [tags[i] for i in rng.permutation(len(tags))]
    return [f"{tag} {text}" for tag, text in zip(tags, texts, strict=True)]


def render_decision_prompt(
    task: _DecisionTask, memory: Memory, tag_mode: _TagMode, seed: int = 0
) -> str:
    """The decision prompt for ``task`` reading ``memory`` under ``tag_mode``."""
    if memory.summary is not None:
        return decision_prompt(
            task.description,
            task.criteria,
            task.options,
            None,
            tagged=False,
            summary=memory.summary,
        )
    rng = shuffle_rng(task.id, memory, seed) if tag_mode == "shuffle" else None
    lines = memory_lines(memory, tag_mode, rng)
    return decision_prompt(
        task.description, task.criteria, task.options, lines, tagged=tag_mode != "remove"
    )
