"""SciBench (textbook split): 580 college science problems in ten ``<source>.json`` files.

In full: ``docs/benchmarks.md``, section "SciBench (benchmarks/problems/scibench.py)".
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from deliberation.benchmarks.problems.extract import (
    normalize_numeric_text,
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

NAME = "scibench"
SOURCES = (
    "atkins",
    "calculus",
    "chemmc",
    "class",
    "diff",
    "fund",
    "matter",
    "quan",
    "stat",
    "thermo",
)
_RELATIVE_TOLERANCE = 0.05
_FIELDS = ("problem_text", "answer_number", "unit", "source", "problemid")
_POWER = re.compile(r"10\s*\^\s*\{?\s*([+-]?\s*\d+)\s*\}?")


def files(root: Path) -> list[Path]:
    return [_file(root, source) for source in SOURCES]


def _file(root: Path, source: str) -> Path:
    """``<root>/<source>.json`` (shared copy) or ``<root>/dataset/original/<source>.json`` (upstream)."""
    flat = root / f"{source}.json"
    nested = root / "dataset" / "original" / f"{source}.json"
    return flat if flat.exists() or not nested.exists() else nested


def unit_exponent(unit: str) -> int:
    """The k of a ``10^k`` factor written in a SciBench unit (0 when there is none)."""
    match = _POWER.search(unit.translate(str.maketrans({"\u2212": "-"})))
    return int(match.group(1).replace(" ", "")) if match else 0


def prompt_unit(unit: str) -> str:
    """The unit as the benchmark's prompt states it: without its ``10^k`` factor (LaTeX kept)."""
    if unit.strip() == "$":  # dollars (diff.json), not a math delimiter
        return "$"
    text = _POWER.sub("", unit.replace("\r", " ").replace("\n", " "), count=1)
    text = re.sub(r"\\mathrm\{\s*\}", "", text)
    text = re.sub(r"\$\s*\$", "", text)
    text = re.sub(r"\s+", " ", text).strip()
    return "" if not text.strip("$ ") else text


def _gold_value(item: Item) -> float:
    """The gold as a plain number in the unprefixed unit (``answer_number * 10^k``)."""
    return float(normalize_numeric_text(item.gold)) * 10.0 ** unit_exponent(item.unit)


def _item(record: object, path: Path, position: int, source: str, duplicated: set[str]) -> Item:
    if not isinstance(record, dict):
        raise DatasetFormatError(path, "expected a JSON object", position)
    missing = [f for f in _FIELDS if f not in record]
    if missing:
        raise DatasetFormatError(path, f"missing field(s) {missing}", position)
    gold = required_text(record["answer_number"], path, "answer_number", position)
    try:
        float(normalize_numeric_text(gold))
    except ValueError:
        raise DatasetFormatError(
            path, f"field 'answer_number': not a number: {gold!r}", position
        ) from None
    unit = str(record["unit"]).strip()
    spoken_unit = prompt_unit(unit)
    question = required_text(record["problem_text"], path, "problem_text", position)
    if spoken_unit:
        question = f"{question} The unit of the answer is {spoken_unit}."
    problem_id = str(record["problemid"]).strip()
    item_id = f"{NAME}:{source}:{problem_id}"
    if problem_id in duplicated:
        item_id += f"#{position}"
    return Item(
        id=item_id,
        benchmark=NAME,
        subject=source,
        question=question,
        gold=gold,
        answer_type=AnswerType.NUMERIC,
        unit=unit,
        source_file=path.name
        if path.parent.name != "original"
        else f"dataset/original/{path.name}",
        record=position,
        meta=make_meta(
            {"problemid": problem_id, "answer_latex": str(record.get("answer_latex", "")).strip()}
        ),
    )


def _load_file(path: Path, source: str) -> list[Item]:
    records = read_json(path)
    if not isinstance(records, list):
        raise DatasetFormatError(path, "expected a JSON list of problems")
    counts = Counter(str(r.get("problemid", "")).strip() for r in records if isinstance(r, dict))
    duplicated = {pid for pid, n in counts.items() if n > 1}
    return [_item(record, path, i, source, duplicated) for i, record in enumerate(records)]


def load(root: Path, subset: Sequence[str] | None = None) -> list[Item]:
    """The 580 test problems, or those of the textbook sources named in subset (e.g. ["quan"])."""
    unknown = set(subset or ()) - set(SOURCES)
    if unknown:
        raise ValueError(f"unknown SciBench source(s) {sorted(unknown)}; known: {list(SOURCES)}")
    items: list[Item] = []
    for source in subset or SOURCES:
        items.extend(_load_file(_file(root, source), source))
    return items


@grades_timeouts_as_failures
def grade(item: Item, prediction: str) -> Grade:
    """1.0 if the reply's number is within 5% of the (unit-scaled) gold, else 0.0."""
    found = read_answer(prediction, parse_number)
    if found is None:
        return Grade(0.0)
    value, where = found
    correct = math.isclose(value, _gold_value(item), rel_tol=_RELATIVE_TOLERANCE)
    return Grade(1.0 if correct else 0.0, where.text)


def render_answer(item: Item) -> str:
    """The gold written as a model told the unprefixed unit would write it."""
    k = unit_exponent(item.unit)
    number = item.gold if k == 0 else f"{item.gold} \\times 10^{{{k}}}"
    unit = prompt_unit(item.unit)
    return f"The answer is \\boxed{{{number}}} {unit}".rstrip()
