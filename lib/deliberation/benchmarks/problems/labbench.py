"""LAB-Bench multiple choice: SeqQA (600), ProtocolQA (108), CloningScenarios (33).

In full: ``docs/benchmarks.md``, section "LAB-Bench (benchmarks/problems/labbench.py)".
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from deliberation.benchmarks.problems.extract import letters_in, read_answer
from deliberation.benchmarks.problems.items import (
    AnswerType,
    DatasetFormatError,
    DatasetNotFoundError,
    Grade,
    Item,
    make_meta,
    required_text,
)
from deliberation.seeds import stable_seed

NAME = "labbench"
_SUBSETS = ("SeqQA", "ProtocolQA", "CloningScenarios")
_OPTIONAL_SUBSETS = ("DbQA",)  # read when asked for and present; not part of the DHD set
REFUSAL = "Insufficient information to answer the question"
_SHUFFLE_SALT = "deliberation.labbench.options.v1"
_FIELDS = ("id", "question", "ideal", "distractors")

Outcome = Literal["correct", "incorrect", "refused", "unreadable"]


def files(root: Path, subsets: Sequence[str] = _SUBSETS) -> list[Path]:
    found = []
    for subset in subsets:
        folder = root / subset
        paths = sorted(folder.glob("*-public.jsonl"))
        if not paths:
            raise DatasetNotFoundError(f"no LAB-Bench {subset} files (*-public.jsonl) in {folder}")
        found.extend(paths)
    return found


def _option_seed(item_id: str) -> int:
    """A stable 64-bit seed for an item's option order (same on every machine and run)."""
    return stable_seed(_SHUFFLE_SALT, item_id)


def _shuffled_options(
    item_id: str, ideal: str, distractors: Sequence[str]
) -> tuple[tuple[str, ...], int]:
    """(options in their fixed order, how many duplicate distractors were dropped)."""
    candidates = [ideal]
    for text in distractors:
        if text not in candidates:
            candidates.append(text)
    dropped = len(distractors) - (len(candidates) - 1)
    candidates.append(REFUSAL)
    order = np.random.default_rng(_option_seed(item_id)).permutation(len(candidates))
    return tuple(candidates[i] for i in order), dropped


def _letter(index: int) -> str:
    return chr(ord("A") + index)


def _item(record: object, path: Path, position: int, subset: str, root: Path) -> Item:
    if not isinstance(record, dict):
        raise DatasetFormatError(path, "expected a JSON object", position)
    missing = [f for f in _FIELDS if f not in record]
    if missing:
        raise DatasetFormatError(path, f"missing field(s) {missing}", position)
    distractors = record["distractors"]
    if (
        not isinstance(distractors, list)
        or not distractors
        or not all(isinstance(d, str) for d in distractors)
    ):
        raise DatasetFormatError(
            path, "field 'distractors': expected a non-empty list of strings", position
        )
    required_text(record["ideal"], path, "ideal", position)
    ideal = str(record["ideal"])  # kept as written: it is an option's text
    question = required_text(record["question"], path, "question", position)
    item_id = f"lab-bench:{subset}:{record['id']}"
    options, dropped = _shuffled_options(item_id, ideal, distractors)
    return Item(
        id=item_id,
        benchmark=NAME,
        subject=subset,
        question=question,
        gold=_letter(options.index(ideal)),
        answer_type=AnswerType.MCQ_SINGLE,
        options=options,
        source_file=str(path.relative_to(root)),
        record=position,
        context=str(record.get("protocol", "") or "").strip(),
        meta=make_meta(
            {
                "task": path.name.removesuffix("-public.jsonl"),
                "refusal_letter": _letter(options.index(REFUSAL)),
                "dropped_distractors": dropped or None,
            }
        ),
    )


def _load_file(path: Path, subset: str, root: Path) -> list[Item]:
    items = []
    with path.open(encoding="utf-8") as handle:
        for line_number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise DatasetFormatError(
                    path, f"invalid JSON on line {line_number}: {error}", len(items)
                ) from None
            items.append(_item(record, path, len(items), subset, root))
    return items


def load(root: Path, subset: Sequence[str] | None = None) -> list[Item]:
    """The 741 questions of the three DHD subsets, or the subsets named (also "DbQA" if present)."""
    chosen = tuple(subset) if subset else _SUBSETS
    unknown = set(chosen) - set(_SUBSETS) - set(_OPTIONAL_SUBSETS)
    if unknown:
        raise ValueError(f"unknown LAB-Bench subset(s) {sorted(unknown)}; known: {list(_SUBSETS)}")
    items: list[Item] = []
    for name in chosen:
        for path in files(root, (name,)):
            items.extend(_load_file(path, name, root))
    return items


def _normalize(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().rstrip(".").lower()


def _chosen_letters(item: Item, span: str) -> frozenset[str] | None:
    """The options an answer span picks: a lone option letter is that letter (the form the
    prompt asks for, as in LAB-Bench's harness), even where an option's text is one letter too
    (amino-acid codes such as "E" or "C"); otherwise by an option's full text first (a sequence
    such as "GAC" is an option, not letters G, A, C), else by letter."""
    lone = span.strip().strip("().*[]").strip()
    if len(lone) == 1 and lone.upper() in item.letters:
        return frozenset({lone.upper()})
    by_text = [i for i, text in enumerate(item.options) if _normalize(text) == _normalize(span)]
    if by_text:
        return frozenset({_letter(by_text[0])})
    return letters_in(span, item.letters)


def read_choice(item: Item, prediction: str) -> tuple[Outcome, str | None]:
    """(outcome, the answer span read) for one reply."""
    found = read_answer(prediction, lambda span: _chosen_letters(item, span))
    if found is None:
        return "unreadable", None
    chosen, where = found
    if chosen == {item.meta_value("refusal_letter")}:
        return "refused", where.text
    return ("correct" if chosen == {item.gold} else "incorrect"), where.text


def outcome(item: Item, prediction: str) -> Outcome:
    """Whether a reply picked the right option, a wrong one, the refusal, or none readable."""
    return read_choice(item, prediction)[0]


def grade(item: Item, prediction: str) -> Grade:
    """1.0 when the reply picks the ideal answer's letter, else 0.0 (a refusal scores 0)."""
    result, answer = read_choice(item, prediction)
    return Grade(1.0 if result == "correct" else 0.0, answer)


@dataclass(frozen=True)
class _LabBenchScores:
    """LAB-Bench's three headline numbers over a set of replies, counted as its harness does."""

    n: int
    correct: int
    answered: int
    refused: int
    unreadable: int = 0

    @property
    def accuracy(self) -> float:
        return self.correct / self.n if self.n else math.nan

    @property
    def precision(self) -> float:
        return self.correct / self.answered if self.answered else math.nan

    @property
    def coverage(self) -> float:
        return self.answered / self.n if self.n else math.nan


def summarize(items: Sequence[Item], predictions: Sequence[str]) -> _LabBenchScores:
    """Accuracy, precision (correct among answered) and coverage (answered share) of replies.

    As in the harness (``Evaluator.compute_metrics``: ``sure = answer != unsure``), only a reply
    that picks the refusal option is unanswered; an unreadable reply is answered and wrong.
    """
    if len(items) != len(predictions):
        raise ValueError(f"{len(items)} items but {len(predictions)} predictions")
    outcomes = [outcome(item, reply) for item, reply in zip(items, predictions, strict=True)]
    refused = outcomes.count("refused")
    return _LabBenchScores(
        n=len(outcomes),
        correct=outcomes.count("correct"),
        answered=len(outcomes) - refused,
        refused=refused,
        unreadable=outcomes.count("unreadable"),
    )


def render_answer(item: Item) -> str:
    """The gold written the way a model would end its reply."""
    return f"Proposed final answer: {item.gold}"
