"""The toy benchmark: its tasks and gold, its rows (scoring), its sim reader, its notebook."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from deliberation.benchmarks.memory_benchmark import Reading, common_row, typed_frame


@dataclass(frozen=True)
class ToyFact:
    id: str
    text: str
    holders: tuple[str, ...]


@dataclass(frozen=True)
class ToyTask:
    id: str
    description: str
    criteria: tuple[str, ...]
    options: tuple[str, ...]
    correct: str  # the gold answer
    agents: tuple[str, ...]
    facts: tuple[ToyFact, ...]


def _task(number: int, right: str, wrong: str) -> ToyTask:
    return ToyTask(
        id=f"toy-{number}",
        description="Pick a supplier.",
        criteria=("reliability",),
        options=tuple(sorted((right, wrong))),
        correct=right,
        agents=("A1", "A2"),
        facts=(
            ToyFact("f1", f"{wrong} has a friendly website.", ("A1", "A2")),
            ToyFact("f2", f"{right} is reliable: 99 of 100 orders came on time.", ("A1",)),
            ToyFact("f3", f"{wrong} is unreliable: it lost several shipments.", ("A2",)),
        ),
    )


TASKS = (_task(1, "Alpha", "Beta"), _task(2, "Delta", "Gamma"))
COLUMNS = [
    "task", "policy", "budget", "item_limit", "tags", "kept_facts", "kept_tokens",
    "budget_tokens", "answer", "correct", "valid", "error", "key",
]  # fmt: skip


def read_statement(text: str, options: Sequence[str]) -> Reading | None:
    """The sim's reading: the one option named, +1 for "reliable", -1 for "unreliable"."""
    named = [option for option in options if option in text]
    if len(named) != 1:
        return None
    polarity = -1 if "unreliable" in text else 1 if "reliable" in text else 0
    return Reading(option=named[0], polarity=polarity)


class ToyBench:
    name = "toybench"
    title = "ToyBench"
    description = "two hand-made supplier choices (tests/toy_benchmark)"
    columns = COLUMNS
    policies = ("B4", "Random", "all", "empty")
    has_truth = False
    selects_templates = False
    sim_reader = staticmethod(read_statement)
    notebooks = {"91_toybench.ipynb": {"tags": ["keep"], "item_limit": 0}}
    smoke = {"limit": 1, "n_resamples": 200}

    def tasks(
        self, seed: int, *, templates: str | None, limit: int | None, option_order: str = "rotate"
    ) -> list[ToyTask]:
        return list(TASKS)[:limit]  # options stored sorted: nothing to counterbalance

    def truth(self, task: ToyTask) -> None:
        return None

    def rows(self, decisions: Sequence[Any]) -> pd.DataFrame:
        rows = [common_row(d, d.task.correct) for d in decisions]
        return typed_frame(pd.DataFrame(rows, columns=self.columns))


TOYBENCH = ToyBench()
