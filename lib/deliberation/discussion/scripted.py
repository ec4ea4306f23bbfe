"""The scripted discussion of paper 1: every agent states every fact it holds.

Scripting makes the inventory known, so a memory policy chooses from exactly the facts the
task assigns (not from what a free-running model happened to say). Each agent takes one turn
and states its facts in the task's fact order: that order is the task's own (CrossProfile tasks
present facts in a seeded order; HiddenBench tasks are shuffled by their loader), never
re-sorted by role here. The order in which agents take turns is drawn from (task id, seed).

The same function serves CrossProfile and HiddenBench tasks: anything with an ``id``, its
``agents`` and ``facts`` that have an ``id``, a ``text`` and ``holders``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from deliberation.discussion.transcript import Statement, Transcript, Turn
from deliberation.seeds import stable_seed


class DiscussionFact(Protocol):
    id: str
    text: str
    holders: tuple[str, ...]


class DiscussionTask(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def agents(self) -> tuple[str, ...]: ...

    @property
    def facts(self) -> Sequence[DiscussionFact]: ...


def turn_order(task_id: str, agents: Sequence[str], seed: int) -> tuple[str, ...]:
    """The order agents speak in: a permutation seeded by task and seed."""
    rng = np.random.default_rng(stable_seed("scripted-turns", task_id, seed))
    return tuple(agents[i] for i in rng.permutation(len(agents)))


def scripted_discussion(task: DiscussionTask, seed: int = 0) -> Transcript:
    """One turn per agent (seeded order); each turn states the agent's facts in task order.

    A fact whose holder is not one of the task's agents is an error (it could never be stated).
    """
    agents = tuple(task.agents)
    unknown = {h for f in task.facts for h in f.holders} - set(agents)
    if unknown:
        raise ValueError(f"task {task.id}: facts held by unknown agents {sorted(unknown)}")
    turns = tuple(
        Turn(
            agent=agent,
            statements=tuple(
                Statement(agent=agent, fact_id=f.id, text=f.text)
                for f in task.facts
                if agent in f.holders
            ),
        )
        for agent in turn_order(task.id, agents, seed)
    )
    return Transcript(task_id=task.id, agents=agents, turns=turns)
