"""The record every benchmark loader returns, the result every grader returns, and the error a
malformed file raises."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any


class AnswerType(StrEnum):
    """How a gold answer is written and therefore how it is checked."""

    MCQ_SINGLE = "mcq_single"  # one option letter
    MCQ_MULTIPLE = "mcq_multiple"  # a set of option letters (JEEBench MCQ(multiple), MaScQA MSQ)
    INTEGER = "integer"  # JEEBench Integer
    NUMERIC = "numeric"  # a number, compared within the benchmark's tolerance
    NUMERIC_RANGE = "numeric_range"  # MaScQA NUM: one or more closed ranges
    MATH_EXPRESSION = "math_expression"  # Omni-MATH, rule-checkable by symbolic equivalence
    MATH_JUDGE = "math_judge"  # Omni-MATH, needs a judge model


@dataclass(frozen=True)
class Item:
    """One benchmark question with its gold answer and where it came from.

    ``id`` is unique within a benchmark and stable across runs (it feeds caches and joins).
    ``options`` holds lettered options only where the loader builds them (LAB-Bench); for
    JEEBench and MaScQA the options are written inside ``question``. ``context`` is material the
    question refers to (the ProtocolQA protocol). ``source_file`` is relative to the benchmark
    root and ``record`` is the 0-based position of the record in that file. ``meta`` holds
    benchmark-specific fields as sorted (key, value) pairs so the record stays hashable.
    """

    id: str
    benchmark: str
    subject: str
    question: str
    gold: str
    answer_type: AnswerType
    options: tuple[str, ...] = ()
    unit: str = ""
    source_file: str = ""
    record: int = 0
    context: str = ""
    meta: tuple[tuple[str, Any], ...] = ()

    def meta_value(self, key: str, default: Any = None) -> Any:
        for name, value in self.meta:
            if name == key:
                return value
        return default

    @property
    def letters(self) -> str:
        """Option letters in order (``"ABCDE"`` for five lettered options)."""
        return "".join(chr(ord("A") + i) for i in range(len(self.options)))


@dataclass(frozen=True)
class Grade:
    """What grading one reply gives: a score, the answer it read, or why grading failed.

    ``score`` is 1.0 (correct), 0.0 (wrong, or no answer stated) or a benchmark's partial credit;
    ``answer`` is the span read as the reply's final answer (None when it states none).
    When the grader could not decide, ``score`` is None and ``failure`` gives the reason (an
    answer too costly to compare symbolically, decided from the expression alone, or, as a last
    resort, a comparison that passed :data:`deliberation.benchmarks.problems.symbolic._TIMEOUT_S`).

    How callers count a failed grade: never as wrong and never dropped. Report the number of
    failures beside every accuracy, compute the accuracy over the graded replies only (failures
    out of numerator and denominator), and re-grade failures (a timeout, with a longer limit) before
    a figure is final; a run with failures says so.
    """

    score: float | None
    answer: str | None = None
    failure: str | None = None

    @property
    def failed(self) -> bool:
        return self.score is None


def grades_timeouts_as_failures(grader: Callable[..., Grade]) -> Callable[..., Grade]:
    """Wrap a grader so an undecided symbolic check becomes a failed :class:`Grade` with its reason."""
    from deliberation.benchmarks.problems.symbolic import SymbolicUndecided

    @functools.wraps(grader)
    def wrapper(*args, **kwargs) -> Grade:
        try:
            return grader(*args, **kwargs)
        except SymbolicUndecided as error:
            return Grade(score=None, failure=str(error))

    return wrapper


def make_meta(values: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    """Freeze a dict of benchmark-specific fields (None values dropped) for ``Item.meta``."""
    return tuple(sorted((k, v) for k, v in values.items() if v is not None))


class DatasetFormatError(ValueError):
    """A benchmark file that cannot be read as expected; names the file and record."""

    def __init__(
        self, path: str | Path, message: str, record: int | None = None, label: str = "record"
    ) -> None:
        where = str(path) if record is None else f"{path}, {label} {record}"
        super().__init__(f"{where}: {message}")
        self.path = str(path)
        self.record = record


def required_text(
    value: object, path: str | Path, field: str, record: int | None, label: str = "record"
) -> str:
    """A text field that must hold text: null, non-text or blank is an error naming file and record.

    (``str(None)`` would otherwise turn a missing question into the question "None".)
    """
    if value is None or not isinstance(value, str | int | float) or isinstance(value, bool):
        kind = "null" if value is None else type(value).__name__
        raise DatasetFormatError(path, f"field {field!r}: expected text, got {kind}", record, label)
    text = str(value).strip()
    if not text:
        raise DatasetFormatError(path, f"field {field!r}: empty", record, label)
    return text


def read_json(path: Path) -> Any:
    """A whole JSON file; invalid JSON is a :class:`DatasetFormatError` naming the file."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise DatasetFormatError(path, f"invalid JSON: {error}") from None


class DatasetNotFoundError(FileNotFoundError):
    """The benchmark's files are not where the loader looked (run ``make data``)."""
