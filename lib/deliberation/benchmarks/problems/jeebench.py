"""JEEBench (dair-iitd): 515 JEE-Advanced problems in ``dataset.json``.

Grading follows the benchmark's ``compute_metrics.py::compute_score``:

- ``MCQ``: the set of chosen letters must equal the gold set (one letter) -> 1 or 0.
- ``MCQ(multiple)``: 1 for the exact set; if every chosen letter is correct but some are missing,
  0.25 per chosen letter; 0 if any chosen letter is wrong (or none is chosen). A reply that
  judges the options one by one and states no answer after that is read whole (the options it
  calls correct: :func:`~deliberation.benchmarks.problems.extract.collected_choice`), as a careful reader
  would, not by its last verdict alone.
- ``Integer`` and ``Numeric``: correct when ``|gold - answer| <= 0.01`` (we add 1e-9 of slack so
  that binary floating point does not turn 2.31 vs 2.30 into a miss).

Ids follow the DHD reference: ``jeebench:<description>:<index>``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from deliberation.benchmarks.problems.extract import (
    collected_choice,
    letters_in,
    parse_number,
    read_answer,
)
from deliberation.benchmarks.problems.items import (
    AnswerType,
    DatasetFormatError,
    Grade,
    Item,
    grades_timeouts_as_failures,
    make_meta,
    read_json,
    required_text,
)

NAME = "jeebench"
_FILE = "dataset.json"
_TOLERANCE = 0.01
_FLOAT_SLACK = 1e-9
_TYPES = {
    "MCQ": AnswerType.MCQ_SINGLE,
    "MCQ(multiple)": AnswerType.MCQ_MULTIPLE,
    "Integer": AnswerType.INTEGER,
    "Numeric": AnswerType.NUMERIC,
}
_SUBJECTS = ("phy", "chem", "math")
_FIELDS = ("description", "index", "subject", "type", "question", "gold")


def files(root: Path) -> list[Path]:
    return [root / _FILE]


def _item(record: object, path: Path, position: int) -> Item:
    if not isinstance(record, dict):
        raise DatasetFormatError(path, "expected a JSON object", position)
    missing = [f for f in _FIELDS if f not in record]
    if missing:
        raise DatasetFormatError(path, f"missing field(s) {missing}", position)
    kind = record["type"]
    if kind not in _TYPES:
        raise DatasetFormatError(path, f"field 'type': unknown type {kind!r}", position)
    if record["subject"] not in _SUBJECTS:
        raise DatasetFormatError(path, f"field 'subject': unknown {record['subject']!r}", position)
    gold = required_text(record["gold"], path, "gold", position)
    question = required_text(record["question"], path, "question", position)
    answer_type = _TYPES[kind]
    if answer_type in (AnswerType.MCQ_SINGLE, AnswerType.MCQ_MULTIPLE):
        if not gold or set(gold) - set("ABCD"):
            raise DatasetFormatError(path, f"field 'gold': not option letters: {gold!r}", position)
    else:
        try:
            float(gold)
        except ValueError:
            raise DatasetFormatError(
                path, f"field 'gold': not a number: {gold!r}", position
            ) from None
    return Item(
        id=f"{NAME}:{record['description']}:{record['index']}",
        benchmark=NAME,
        subject=record["subject"],
        question=question,
        gold=gold,
        answer_type=answer_type,
        source_file=_FILE,
        record=position,
        meta=make_meta({"type": kind, "paper": record["description"], "index": record["index"]}),
    )


def load(root: Path, subset: Sequence[str] | None = None) -> list[Item]:
    """All questions, or those whose subject (phy/chem/math) or type (MCQ, Numeric, ...) is in subset."""
    path = root / _FILE
    records = read_json(path)
    if not isinstance(records, list):
        raise DatasetFormatError(path, "expected a JSON list of questions")
    items = [_item(record, path, i) for i, record in enumerate(records)]
    if subset:
        wanted = set(subset)
        items = [it for it in items if it.subject in wanted or it.meta_value("type") in wanted]
    return items


def score_letters(gold: str, chosen: frozenset[str] | None, multiple: bool) -> float:
    """The official MCQ / MCQ(multiple) score of a chosen letter set against gold letters."""
    if not chosen:
        return 0.0
    gold_set = frozenset(gold)
    if chosen == gold_set:
        return 1.0
    if multiple and chosen < gold_set:
        return 0.25 * len(chosen)
    return 0.0


@grades_timeouts_as_failures
def grade(item: Item, prediction: str) -> Grade:
    """Official JEEBench score of a model reply (see the module docstring)."""
    if item.answer_type in (AnswerType.MCQ_SINGLE, AnswerType.MCQ_MULTIPLE):
        found = read_answer(prediction, lambda span: letters_in(span, "ABCD"))
        multiple = item.answer_type is AnswerType.MCQ_MULTIPLE
        if multiple:  # an analysis option by option, with no answer stated after it
            found = collected_choice(prediction, "ABCD", found)
        if found is None:
            return Grade(0.0)
        chosen, where = found
        return Grade(score_letters(item.gold, chosen, multiple), where.text)
    found = read_answer(prediction, parse_number)
    if found is None:
        return Grade(0.0)
    value, where = found
    correct = abs(float(item.gold) - value) <= _TOLERANCE + _FLOAT_SLACK
    return Grade(1.0 if correct else 0.0, where.text)


def render_answer(item: Item) -> str:
    """The gold answer written the way a model would end its reply."""
    if item.answer_type in (AnswerType.MCQ_SINGLE, AnswerType.MCQ_MULTIPLE):
        return f"Proposed final answer: {', '.join(f'({letter})' for letter in item.gold)}"
    return f"Therefore the answer is \\boxed{{{item.gold}}}."
