"""What a memory benchmark is (:class:`MemoryBenchmark`, registered in
:mod:`deliberation.benchmarks`), how the sim reads its statements (:class:`Reading`), and the
columns every memory benchmark's results frame shares: those of one decision (the benchmark adds
its own), their types, and which rows failed. Columns are documented in
:mod:`deliberation.experiments.memory.runs`; a decision is the memory pipeline's
``deliberation.experiments.memory.pipeline.Decision`` (read by its fields only, so no benchmark
imports the experiment)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import pandas as pd


@dataclass(frozen=True)
class Reading:
    """What a statement means to the sim: the option it bears on, its polarity on the criteria
    (+1/-1; 0 for a statement about something else) and its tone (+1/-1/0)."""

    option: str
    polarity: int = 0
    tone: int = 0


# A benchmark's sim: reader(statement text, the prompt's options) -> Reading, or None when the
# statement bears on nothing the sim knows (it then adds nothing).
Reader = Callable[[str, Sequence[str]], "Reading | None"]


@runtime_checkable
class MemoryBenchmark(Protocol):
    """A task set for memory runs. ``name`` is the CLI subcommand, the stage prefix of every
    request (so it is part of each cache key) and the profile section holding its grid."""

    name: str
    title: str  # for people: "CrossProfile"
    description: str  # one line for ``deliberation run --help``
    columns: Sequence[str]  # the results frame's columns, in order
    policies: tuple[str, ...]  # the default grid: every policy the benchmark supports
    has_truth: bool  # true roles known, so oracle policies can run
    selects_templates: bool  # tasks come in template sets (main, pilot, all)
    sim_reader: Reader  # how the sim reads a statement
    notebooks: Mapping[str, Mapping[str, Any]]  # notebook -> options of its memory run
    smoke: Mapping[str, Any]  # its grid in the smoke profile (e.g. {"limit": 2})

    def tasks(
        self,
        seed: int,
        *,
        templates: str | None,
        limit: int | None,
        option_order: str = "rotate",
        names: Sequence[str] | None = None,
    ) -> list[Any]:
        """The tasks a run asks about (``templates`` only when ``selects_templates``; ``names``,
        the template ids a profile lists, is passed only when it lists some), options listed as
        ``option_order`` says (``rotate``: counterbalanced; ``template``: as stored).
        Each task has ``id``, ``options``, ``correct`` (its gold), ``agents`` and ``facts``."""
        ...

    def truth(self, task: Any) -> Mapping[str, Any] | None:
        """fact id -> its true role, option and polarity (None without true roles)."""
        ...

    def rows(self, decisions: Sequence[Any]) -> pd.DataFrame:
        """One row per decision of the memory pipeline, in ``columns``
        (:func:`common_row` gives the columns every benchmark shares)."""
        ...


_NULLABLE_INT = (
    "item_limit", "budget_tokens", "net_lead", "irrelevant_tone", "tone_lead", "answer_position",
)  # fmt: skip
_EMPTY_WHEN_FAILED = ("kept_tokens", "correct", "chose_decoy", "valid")


def answer_position(options: Sequence[str], answer: str | None) -> int | None:
    """Where the chosen option was listed in the prompt (1 = first), None for no single option:
    what the answer-position bias table (:mod:`deliberation.stats.position_bias`) counts."""
    if answer is None or answer not in options:
        return None
    return list(options).index(answer) + 1


def common_row(decision: Any, correct: str) -> dict:
    """The columns every benchmark has, for one decision whose key is ``correct``."""
    memory = decision.memory
    failed = decision.failed
    return {
        "task": decision.task.id,
        "policy": decision.cell.policy,
        "budget": decision.cell.budget,
        "item_limit": decision.cell.item_limit,
        "tags": decision.tags,
        "kept_facts": "" if memory.summary is not None else ";".join(memory.fact_ids),
        "kept_tokens": None if decision.input_failed else memory.kept_tokens,
        "budget_tokens": decision.budget_tokens,
        "answer": decision.answer or "",
        "answer_position": answer_position(decision.task.options, decision.answer),
        "n_options": len(decision.task.options),
        "correct": None if failed else int(decision.answer == correct),
        "valid": None if failed else int(decision.answer is not None),
        "error": decision.error,
        "key": decision.key,
    }


def typed_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """Nullable integer columns where a value may be missing; plain ones otherwise."""
    for column in _NULLABLE_INT:
        if column in frame:
            frame[column] = frame[column].astype("Int64")
    # Empty only in failed rows: nullable then, plain integers otherwise (unchanged tables).
    for column in _EMPTY_WHEN_FAILED:
        if column in frame and frame[column].isna().any():
            frame[column] = frame[column].astype("Int64")
    frame["budget"] = frame["budget"].astype("Float64")
    return frame


def failed_rows(frame: pd.DataFrame) -> pd.Series:
    """Rows without a usable reply (``valid`` empty): never counted in an accuracy."""
    return frame["valid"].isna()
