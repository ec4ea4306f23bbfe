"""MaScQA: 650 materials-science GATE questions (649 unique) in ``mascqa-eval.json``.

The questions file has no answers; they come from the scoresheet ``all_questions.xlsx``
(column ``Correct Answer``), joined on ``Question Info`` == qid. ``G-XEC-2016-14`` appears twice
with identical text and answer; :func:`load` keeps it once (so 649 items; :func:`read_records`
returns all 650 rows).

Answer keys and checks (MaScQA publishes no grading script; these are the GATE rules):

- ``MCQS``, ``MATCH``, ``MCQS-NUM``: option letters, compared as sets (order-insensitive), so
  ``MCQS`` keys with several letters ("A,C", "A; B": multiple-select questions) need exactly
  that set. A key "C OR D" accepts either. "MARKS TO ALL" (a cancelled question) gives 1.0 to
  any reply that names an answer; such items carry ``meta['marks_to_all'] = True``.
- ``NUM``: one or more closed ranges written "0.85 to 0.89", "42 TO 43", "15.35 : 15.45",
  "-1600 TO -1500", "0.90 TO 0.94 OR -0.94 TO -0.90", with the typos "T0" (zero for O) and
  "48O" (O for zero) read as meant; a single value means that exact value. The reply's number
  must lie in a range (ends included); a reply that states a range ("0.86–0.88", "0.86 to
  0.88") is right when the whole stated range lies inside one gold range.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from deliberation.benchmarks.problems.extract import (
    collected_choice,
    letters_in,
    parse_number,
    parse_range,
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

logger = logging.getLogger(__name__)

NAME = "mascqa"
_QUESTIONS_FILE = "mascqa-eval.json"
_ANSWERS_FILE = "all_questions.xlsx"
ANSWER_COLUMNS = ("Question Info", "Question Type", "Correct Answer")
_LETTER_TYPES = ("MCQS", "MATCH", "MCQS-NUM")
_QUESTION_TYPES = (*_LETTER_TYPES, "NUM")
_MARKS_TO_ALL = re.compile(r"^\s*marks\s+to\s+all\s*$", re.IGNORECASE)


def files(root: Path) -> list[Path]:
    return [root / _QUESTIONS_FILE, root / _ANSWERS_FILE]


@dataclass(frozen=True)
class _AnswerKey:
    """A parsed ``Correct Answer`` cell: accepted letter sets, accepted ranges, or marks-to-all."""

    letter_sets: tuple[frozenset[str], ...] = ()
    ranges: tuple[tuple[float, float], ...] = ()
    marks_to_all: bool = False


def _parse_key(raw: object, question_type: str) -> _AnswerKey:
    """Read a scoresheet answer cell; raises ValueError when it cannot be read."""
    text = str(raw).strip() if raw is not None else ""
    if not text:
        raise ValueError("empty answer")
    if _MARKS_TO_ALL.match(text):
        return _AnswerKey(marks_to_all=True)
    alternatives = re.split(r"\s+OR\s+", text.upper())
    if question_type in _LETTER_TYPES:
        sets = []
        for alternative in alternatives:
            if not re.fullmatch(r"[A-D](?:\s*[,;]?\s*[A-D])*", alternative.strip()):
                raise ValueError(f"not option letters: {text!r}")
            sets.append(frozenset(re.findall(r"[A-D]", alternative)))
        return _AnswerKey(letter_sets=tuple(sets))
    if question_type != "NUM":
        raise ValueError(f"unknown question type {question_type!r}")
    ranges = []
    for alternative in alternatives:
        cleaned = alternative.translate(str.maketrans({"\u2212": "-"}))
        cleaned = re.sub(r"(?<=\d)O", "0", cleaned)  # "48O" -> "480"
        cleaned = re.sub(r"\bT0\b", "TO", cleaned)  # "350 T0 350"
        parts = [p.strip() for p in re.split(r"\s*(?:\bTO\b|:)\s*", cleaned.strip())]
        try:
            values = [float(p) for p in parts]
        except ValueError:
            raise ValueError(f"not a number range: {text!r}") from None
        if len(values) == 1:
            values = values * 2
        if len(values) != 2:
            raise ValueError(f"not a number range: {text!r}")
        ranges.append((min(values), max(values)))
    return _AnswerKey(ranges=tuple(ranges))


def _answer_type(question_type: str, key: _AnswerKey) -> AnswerType:
    if question_type == "NUM":
        return AnswerType.NUMERIC_RANGE
    if any(len(s) > 1 for s in key.letter_sets):
        return AnswerType.MCQ_MULTIPLE
    return AnswerType.MCQ_SINGLE


def _read_answers(path: Path) -> dict[str, tuple[int, str, object]]:
    """qid -> (spreadsheet row, question type, answer cell)."""
    import openpyxl

    try:
        workbook = openpyxl.load_workbook(path, read_only=True, data_only=True)
    except Exception as error:  # openpyxl raises several types for a broken file
        raise DatasetFormatError(path, f"cannot open workbook: {error}") from None
    try:
        rows = workbook.worksheets[0].iter_rows(values_only=True)
        header = [str(c).strip() if c is not None else "" for c in next(rows, ())]
        missing = [c for c in ANSWER_COLUMNS if c not in header]
        if missing:
            raise DatasetFormatError(path, f"missing column(s) {missing}", 1, label="row")
        qid_col, type_col, answer_col = (header.index(c) for c in ANSWER_COLUMNS)
        answers: dict[str, tuple[int, str, object]] = {}
        for row_number, row in enumerate(rows, start=2):
            if row is None or all(c is None for c in row):
                continue
            qid = str(row[qid_col]).strip() if row[qid_col] is not None else ""
            if not qid:
                raise DatasetFormatError(path, "empty 'Question Info'", row_number, label="row")
            entry = (row_number, str(row[type_col]).strip(), row[answer_col])
            if qid in answers and answers[qid][1:] != entry[1:]:
                raise DatasetFormatError(
                    path, f"qid {qid} appears twice with different answers", row_number, label="row"
                )
            answers.setdefault(qid, entry)
        return answers
    finally:
        workbook.close()


def read_records(root: Path) -> list[tuple[int, str, str, str, str]]:
    """Every question record of ``mascqa-eval.json`` in file order: (record, topic, qid, type, text)."""
    path = root / _QUESTIONS_FILE
    data = read_json(path)
    if not isinstance(data, dict):
        raise DatasetFormatError(path, "expected an object keyed by topic")
    records = []
    for topic, block in data.items():
        lists = [
            block.get(k) if isinstance(block, dict) else None for k in ("qids", "qstr", "questions")
        ]
        if any(not isinstance(v, list) for v in lists) or len({len(v) for v in lists}) != 1:
            raise DatasetFormatError(
                path, f"topic {topic!r}: needs parallel lists 'qids', 'qstr', 'questions'"
            )
        for qid, question_type, text in zip(*lists, strict=True):
            record = len(records)
            qid = required_text(qid, path, f"{topic}.qids", record)
            text = required_text(text, path, f"{topic}.questions ({qid})", record)
            records.append((record, topic, qid, str(question_type), text))
    return records


def load(root: Path, subset: Sequence[str] | None = None) -> list[Item]:
    """The 649 unique questions with their answers, or those whose topic or type is in subset."""
    questions_path = root / _QUESTIONS_FILE
    answers = _read_answers(root / _ANSWERS_FILE)
    items: list[Item] = []
    seen: dict[str, Item] = {}
    for record, topic, qid, question_type, text in read_records(root):
        if question_type not in _QUESTION_TYPES:
            raise DatasetFormatError(
                questions_path, f"unknown question type {question_type!r}", record
            )
        if qid not in answers:
            raise DatasetFormatError(
                questions_path, f"qid {qid} has no row in {_ANSWERS_FILE}", record
            )
        row, answer_type_in_sheet, raw = answers[qid]
        if answer_type_in_sheet != question_type:
            raise DatasetFormatError(
                root / _ANSWERS_FILE,
                f"qid {qid}: type {answer_type_in_sheet!r} but {_QUESTIONS_FILE} says {question_type!r}",
                row,
                label="row",
            )
        try:
            key = _parse_key(raw, question_type)
        except ValueError as error:
            raise DatasetFormatError(
                root / _ANSWERS_FILE, f"qid {qid}: {error}", row, label="row"
            ) from None
        item = Item(
            id=f"{NAME}:{qid}",
            benchmark=NAME,
            subject=topic,
            question=text.strip(),
            gold=str(raw).strip(),
            answer_type=_answer_type(question_type, key),
            source_file=_QUESTIONS_FILE,
            record=record,
            meta=make_meta(
                {
                    "qtype": question_type,
                    "answer_row": row,
                    "marks_to_all": key.marks_to_all or None,
                }
            ),
        )
        if qid in seen:
            if seen[qid].question != item.question:
                raise DatasetFormatError(
                    questions_path, f"qid {qid} repeated with different text", record
                )
            logger.debug("MaScQA %s repeated at record %d; kept once", qid, record)
            continue
        seen[qid] = item
        items.append(item)
    if subset:
        wanted = set(subset)
        items = [it for it in items if it.subject in wanted or it.meta_value("qtype") in wanted]
    return items


def answer_key(item: Item) -> _AnswerKey:
    return _parse_key(item.gold, item.meta_value("qtype"))


def _value_or_range(span: str) -> tuple[float, float] | None:
    """A reply's numeric answer as a closed range: "0.86" -> (0.86, 0.86), "0.85–0.89" as written."""
    written = parse_range(span)
    if written is not None:
        return written
    value = parse_number(span)
    return None if value is None else (value, value)


def _inside(answer: tuple[float, float], ranges: Sequence[tuple[float, float]]) -> bool:
    low, high = answer
    for gold_low, gold_high in ranges:
        slack = 1e-9 * max(1.0, abs(gold_low), abs(gold_high))
        if gold_low - slack <= low and high <= gold_high + slack:
            return True
    return False


@grades_timeouts_as_failures
def grade(item: Item, prediction: str) -> Grade:
    """1.0 for the right letter set / a number (or a stated range) inside a gold range, else 0.0."""
    key = answer_key(item)
    if item.meta_value("qtype") in _LETTER_TYPES:
        found = read_answer(prediction, lambda span: letters_in(span, "ABCD"))
        if item.answer_type is AnswerType.MCQ_MULTIPLE:  # an analysis option by option
            found = collected_choice(prediction, "ABCD", found)
        if found is None:
            return Grade(0.0)
        chosen, where = found
        return Grade(1.0 if key.marks_to_all or chosen in key.letter_sets else 0.0, where.text)
    found = read_answer(prediction, _value_or_range)
    if found is None:
        return Grade(0.0)
    answer, where = found
    return Grade(1.0 if key.marks_to_all or _inside(answer, key.ranges) else 0.0, where.text)


def render_answer(item: Item) -> str:
    """The gold written the way a model would end its reply (a range's midpoint for NUM)."""
    key = answer_key(item)
    if item.meta_value("qtype") in _LETTER_TYPES:
        letters = sorted(key.letter_sets[0]) if key.letter_sets else ["A"]
        if len(letters) == 1:
            return f"Answer: ({letters[0]})"
        return f"The correct options are {', '.join(letters)}."
    if key.marks_to_all:
        return "\\boxed{1}"
    low, high = key.ranges[0]
    return f"Proposed final answer: {(low + high) / 2:.12g}"
