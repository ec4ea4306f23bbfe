"""Omni-MATH: Olympiad problems with LaTeX final answers (JSON Lines, no id field).

In full: ``docs/benchmarks.md``, section "Omni-MATH (benchmarks/problems/omnimath.py)".
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path

from deliberation.benchmarks.problems import symbolic
from deliberation.benchmarks.problems.extract import (
    join_digit_groups,
    plain_powers,
    read_answer,
)
from deliberation.benchmarks.problems.items import (
    AnswerType,
    DatasetFormatError,
    DatasetNotFoundError,
    Grade,
    Item,
    grades_timeouts_as_failures,
    make_meta,
    required_text,
)

NAME = "omnimath"
_SUBSET_FILES: dict[str, tuple[str, ...]] = {
    "rule": ("omni_math_rule.jsonl",),
    "full": ("Omni-MATH.jsonl", "Omni-Math.jsonl"),
    "omni2": ("Omni-MATH-2.jsonl", "omni_math_2.jsonl"),
}
_FIELDS = ("problem", "answer")


class JudgeRequired(RuntimeError):
    """Raised by :func:`grade` for an item only a judge model can grade."""


def _subset_path(root: Path, subset: str) -> Path | None:
    if subset not in _SUBSET_FILES:
        raise ValueError(f"unknown Omni-MATH subset {subset!r}; known: {list(_SUBSET_FILES)}")
    for name in _SUBSET_FILES[subset]:
        if (root / name).is_file():
            return root / name
    return None


def files(root: Path) -> list[Path]:
    return [root / _SUBSET_FILES["rule"][0]]


def _records(path: Path) -> list[tuple[int, dict]]:
    records = []
    with path.open(encoding="utf-8") as handle:
        for line_number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            position = len(records)
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise DatasetFormatError(
                    path, f"invalid JSON on line {line_number}: {error}", position
                ) from None
            if not isinstance(record, dict):
                raise DatasetFormatError(path, "expected a JSON object", position)
            missing = [f for f in _FIELDS if f not in record]
            if missing:
                raise DatasetFormatError(path, f"missing field(s) {missing}", position)
            for field in _FIELDS:
                record[field] = required_text(record[field], path, field, position)
            records.append((position, record))
    return records


def _repair_braces(latex: str) -> str:
    """Close braces left open at the end of a gold answer (four rule-subset records end early)."""
    depth = 0
    for i, char in enumerate(latex):
        if char in "{}" and i > 0 and latex[i - 1] == "\\":
            continue
        depth += {"{": 1, "}": -1}.get(char, 0)
    return latex + "}" * depth if depth > 0 else latex


def _subject(record: dict) -> str:
    domains = record.get("domain") or []
    if isinstance(domains, list) and domains:
        parts = [p.strip() for p in str(domains[0]).split("->")]
        return parts[1] if len(parts) > 1 else parts[0]
    return ""


def _normalize_problem(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def load(root: Path, subset: Sequence[str] | None = None) -> list[Item]:
    """Problems of the named subsets ("rule" by default; "full", "omni2" when their file exists)."""
    chosen = tuple(subset) if subset else ("rule",)
    rule_path = _subset_path(root, "rule")
    rule_problems: set[str] = set()
    if rule_path is not None and set(chosen) - {"rule"}:
        rule_problems = {_normalize_problem(str(r["problem"])) for _, r in _records(rule_path)}
    items: list[Item] = []
    for name in chosen:
        path = _subset_path(root, name)
        if path is None:
            raise DatasetNotFoundError(
                f"Omni-MATH subset {name!r}: none of {list(_SUBSET_FILES[name])} in {root}"
            )
        for position, record in _records(path):
            rule_checkable = (
                name == "rule" or _normalize_problem(str(record["problem"])) in rule_problems
            )
            record_id = record.get("id")
            written = str(record["answer"]).strip()
            gold = _repair_braces(written)
            items.append(
                Item(
                    id=f"{NAME}:{name}:{record_id if record_id is not None else position}",
                    benchmark=NAME,
                    subject=_subject(record),
                    question=str(record["problem"]).strip(),
                    gold=gold,
                    answer_type=AnswerType.MATH_EXPRESSION
                    if rule_checkable
                    else AnswerType.MATH_JUDGE,
                    source_file=path.name,
                    record=position,
                    meta=make_meta(
                        {
                            "subset": name,
                            "difficulty": record.get("difficulty"),
                            "source": record.get("source"),
                            "answer_as_written": written if gold != written else None,
                        }
                    ),
                )
            )
    return items


def _needs_judge(item: Item) -> bool:
    return item.answer_type is AnswerType.MATH_JUDGE


_SCIENTIFIC = re.compile(
    r"(?P<mantissa>[+-]?\d+(?:\.\d+)?)\s*"
    r"(?:(?:\\times|\\cdot)\s*10\s*\^\s*\{?\s*(?P<exp>[+-]?\d{1,4})\s*\}?|[eE](?P<e>[+-]?\d{1,4}))"
)
_MATH_SIGN = re.compile(r"[\d\\^_=+\-/()\[\]{}<>|]")
_SUPERSCRIPTS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺\u2212", "0123456789-+-")
_SUPERSCRIPT_RUN = re.compile(r"[⁻⁺]?[⁰¹²³⁴⁵⁶⁷⁸⁹]+")


def _math_span(span: str) -> str | None:
    """An answer span ready for math-verify, or None when it is prose ("independent of n").

    Digit groups (``18 900``, ``115\\,440``, ``29\\,40``) are joined, unicode superscripts and
    Python powers (``2**10``, ``10^(-3)``) become ``^{...}`` and the unicode minus ``-``, as
    math-verify reads none of these.
    """
    if not _MATH_SIGN.search(span) and len(span.split()) > 3:
        return None
    span = _SUPERSCRIPT_RUN.sub(lambda m: "^{" + m.group().translate(_SUPERSCRIPTS) + "}", span)
    span = plain_powers(join_digit_groups(span).translate(_SUPERSCRIPTS))
    span = span.replace("×", "\\times ")
    return _plain_decimal(span) or span


def _plain_decimal(span: str) -> str | None:
    """``1.1544 \\times 10^{5}`` / ``1.1544e5`` as the exact decimal ``115440`` (math-verify
    leaves a float times a power of ten unevaluated, so it would not equal ``115440``)."""
    match = _SCIENTIFIC.fullmatch(span.strip().strip("$").strip())
    if not match:
        return None
    exponent = int(match.group("exp") or match.group("e"))
    value = Decimal(match.group("mantissa")).scaleb(exponent)
    return format(value.normalize(), "f") if abs(exponent) <= 400 else None


def _same_text(gold: str, span: str) -> bool:
    """Identical up to spacing and ``$``: equal without asking sympy (most right answers)."""
    return re.sub(r"[\s$]", "", gold) == re.sub(r"[\s$]", "", span)


_PLAIN_DECIMAL = re.compile(r"[+-]?\d+(?:\.\d+)?")


def _plainly_different(gold: str, span: str) -> bool:
    """Two plain decimals that differ beyond math-verify's rounding: unequal without sympy."""
    gold, span = gold.strip().strip("$ "), span.strip().strip("$ ")
    if not (_PLAIN_DECIMAL.fullmatch(gold) and _PLAIN_DECIMAL.fullmatch(span)):
        return False
    a, b = Decimal(gold), Decimal(span)
    return abs(a - b) > Decimal("1e-6") * max(Decimal(1), abs(a))


@grades_timeouts_as_failures
def grade(item: Item, prediction: str) -> Grade:
    """1.0 when math-verify finds the reply's final answer equivalent to the gold, else 0.0.

    Raises :class:`JudgeRequired` for a ``MATH_JUDGE`` item whose reply states an answer that
    math-verify does not confirm (a confirmed match needs no judge; a non-match might still be
    equivalent); a reply with no answer scores 0.0 either way. A comparison that passes the
    symbolic time limit gives a failed :class:`Grade` (see :mod:`~deliberation.benchmarks.problems.symbolic`).
    """
    found = read_answer(prediction, _math_span)
    if found is None:
        return Grade(0.0)
    span, where = found
    gold = _plain_decimal(item.gold) or item.gold  # compared in the same form as the reply
    if _same_text(gold, span) or (
        not _plainly_different(gold, span) and symbolic.equivalent(gold, span)
    ):
        return Grade(1.0, where.text)
    if _needs_judge(item):
        raise JudgeRequired(
            f"{item.id}: not rule-checkable; use deliberation.experiments.dhd.judge"
        )
    return Grade(0.0, where.text)


def render_answer(item: Item) -> str:
    """The gold written the way a model would end its reply."""
    return f"So the final answer is $\\boxed{{{item.gold}}}$."
