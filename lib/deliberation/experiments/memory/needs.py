"""The model calls memory policies need before a memory is built, one provider per need.

A policy declares what it reads (``@rank_policy("R1-rel", needs=("relevance",))``); the
pipeline looks each model-based need up here and sends its calls, one batch per need, in
registration order: relevance labels and balance labels (one call per task), and the summary
(one call per task and budget). A provider says how to ask (the prompt, the structured answer,
room for long answers) and how to read the reply into the memory pool. So a new model-based
policy is a policy function plus one :func:`register_need`; the stage tag of its calls is
``<benchmark>.<need>``. Needs no provider serves (``truth``) come from the benchmark.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from deliberation.discussion import MemoryCandidate, Transcript
from deliberation.experiments.memory import prompts
from deliberation.inference.base import StructuredOutput
from deliberation.memory_policies import MemoryPool
from deliberation.memory_policies.labels import read_balance, read_relevance

# JSON labels for every statement of a long HiddenBench task need room; a summary may be as long
# as its budget (up to 0.8 x all statement tokens).
_LONG_ANSWER_TOKENS = 2048


@dataclass(frozen=True)
class NeedReading:
    """What a reply gives the pool (``value``), and a labelling problem worth counting."""

    value: Any
    error: str | None = None


@dataclass(frozen=True)
class MemoryNeed:
    """How to obtain one need. ``prompt(task, pool, transcript, limit)`` is the call's text
    (``limit``: the budget's tokens for a per-budget need, else None); ``read(text, task,
    pool)`` reads the reply. ``per_budget``: one call per budget fraction (the summary)."""

    name: str
    prompt: Callable[[Any, MemoryPool, Transcript, int | None], str]
    read: Callable[[str, Any, MemoryPool], NeedReading]
    structured: Callable[[Any], StructuredOutput | None] = lambda task: None
    max_tokens: int | None = None
    per_budget: bool = False


_NEEDS: dict[str, MemoryNeed] = {}


def register_need(need: MemoryNeed) -> MemoryNeed:
    if need.name in _NEEDS:
        raise ValueError(f"memory need {need.name!r} registered twice")
    _NEEDS[need.name] = need
    return need


def memory_needs(names: set[str] | frozenset[str]) -> list[MemoryNeed]:
    """The providers of ``names`` in registration order (needs without one are skipped)."""
    return [need for name, need in _NEEDS.items() if name in names]


def _statements(candidates: Sequence[MemoryCandidate]) -> list[str]:
    return [c.text for c in candidates]


def _ids(pool: MemoryPool) -> list[str]:
    return [c.fact_id for c in pool.candidates]


def _relevance_read(text: str, task: Any, pool: MemoryPool) -> NeedReading:
    reading = read_relevance(text, _ids(pool))
    return NeedReading(reading.labels, reading.error)


def _balance_read(text: str, task: Any, pool: MemoryPool) -> NeedReading:
    reading = read_balance(text, _ids(pool), task.options)
    return NeedReading(reading.labels, reading.error)


register_need(
    MemoryNeed(
        "relevance",
        prompt=lambda task, pool, transcript, limit: prompts.relevance_prompt(
            task.description, task.criteria, task.options, _statements(pool.candidates)
        ),
        read=_relevance_read,
        structured=lambda task: StructuredOutput(json_schema=prompts.RELEVANCE_SCHEMA),
    )
)
register_need(
    MemoryNeed(
        "balance",
        prompt=lambda task, pool, transcript, limit: prompts.balance_prompt(
            task.description, task.criteria, task.options, _statements(pool.candidates)
        ),
        read=_balance_read,
        structured=lambda task: StructuredOutput(json_schema=prompts.balance_schema(task.options)),
        max_tokens=_LONG_ANSWER_TOKENS,
    )
)
register_need(
    MemoryNeed(
        "summary",
        prompt=lambda task, pool, transcript, limit: prompts.summary_prompt(
            task.description,
            task.criteria,
            task.options,
            [(s.agent, s.text) for s in transcript.statements()],
            limit,
        ),
        read=lambda text, task, pool: NeedReading(text),
        max_tokens=_LONG_ANSWER_TOKENS,
        per_budget=True,
    )
)
