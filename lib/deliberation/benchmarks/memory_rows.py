"""What every memory benchmark's results frame shares: the columns of one decision (the
benchmark adds its own), their types, and which rows failed. Columns are documented in
:mod:`deliberation.experiments.memory.runs`; a decision is the memory pipeline's
``deliberation.experiments.memory.pipeline.Decision`` (read by its fields only, so no benchmark
imports the experiment)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

NULLABLE_INT = (
    "item_limit", "budget_tokens", "net_lead", "irrelevant_tone", "tone_lead", "answer_position",
)  # fmt: skip
EMPTY_WHEN_FAILED = ("kept_tokens", "correct", "chose_decoy", "valid")


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
    for column in NULLABLE_INT:
        if column in frame:
            frame[column] = frame[column].astype("Int64")
    # Empty only in failed rows: nullable then, plain integers otherwise (unchanged tables).
    for column in EMPTY_WHEN_FAILED:
        if column in frame and frame[column].isna().any():
            frame[column] = frame[column].astype("Int64")
    frame["budget"] = frame["budget"].astype("Float64")
    return frame


def failed_rows(frame: pd.DataFrame) -> pd.Series:
    """Rows without a usable reply (``valid`` empty): never counted in an accuracy."""
    return frame["valid"].isna()
