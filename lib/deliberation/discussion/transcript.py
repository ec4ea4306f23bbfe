"""The transcript model: who stated what, and the memory candidates derived from it.

A memory candidate is a unique statement with its *holder tag* (the agents who stated it, e.g.
``[A1,A3]``), listed in first-mention order. Memory policies choose among candidates; the
decision prompt shows the kept ones.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property

from deliberation.inference.tokens import count_tokens


def holder_tag(holders: Sequence[str]) -> str:
    """``("A1", "A3") -> "[A1,A3]"`` (holders in the order given)."""
    return "[" + ",".join(holders) + "]"


@dataclass(frozen=True)
class Statement:
    """One fact stated by one agent. ``fact_id`` identifies the statement across agents."""

    agent: str
    fact_id: str
    text: str


@dataclass(frozen=True)
class Turn:
    """One agent's turn: the statements it made, in order."""

    agent: str
    statements: tuple[Statement, ...]


@dataclass(frozen=True)
class Transcript:
    """A whole discussion of one task: turns in the order they were taken."""

    task_id: str
    agents: tuple[str, ...]
    turns: tuple[Turn, ...]

    def statements(self) -> Iterator[Statement]:
        for turn in self.turns:
            yield from turn.statements


@dataclass(frozen=True)
class MemoryCandidate:
    """A unique statement: its text, the agents who stated it (in the task's agent order) and
    the position of its first mention (0-based) among the unique statements."""

    fact_id: str
    text: str
    holders: tuple[str, ...]
    first_mention: int

    @cached_property
    def tokens(self) -> int:
        """What the statement costs in a budget: its text only (never the tag), so a tag mode
        cannot change which items are kept."""
        return count_tokens(self.text)

    @property
    def tag(self) -> str:
        return holder_tag(self.holders)

    @property
    def n_holders(self) -> int:
        return len(self.holders)


def memory_candidates(transcript: Transcript) -> tuple[MemoryCandidate, ...]:
    """Unique statements (by ``fact_id``) in first-mention order, each with every agent who
    stated it. Two statements with one ``fact_id`` but different texts are an error."""
    texts: dict[str, str] = {}
    holders: dict[str, set[str]] = {}
    for statement in transcript.statements():
        known = texts.setdefault(statement.fact_id, statement.text)
        if known != statement.text:
            raise ValueError(
                f"task {transcript.task_id}: fact {statement.fact_id!r} stated with two texts:"
                f" {known!r} and {statement.text!r}"
            )
        holders.setdefault(statement.fact_id, set()).add(statement.agent)
    order = {agent: index for index, agent in enumerate(transcript.agents)}
    return tuple(
        MemoryCandidate(
            fact_id=fact_id,
            text=text,
            holders=tuple(sorted(holders[fact_id], key=lambda a: order.get(a, len(order)))),
            first_mention=position,
        )
        for position, (fact_id, text) in enumerate(texts.items())
    )
