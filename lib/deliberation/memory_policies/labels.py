"""Reading a labeller's answer: relevance labels (R1-rel) and balance labels (balance audit).

The labelling prompts (``deliberation.experiments.memory.prompts``) number the statements 1..n in
first-mention order and ask for JSON. A reading returns the labels by fact id and an error text when
the answer was unreadable or incomplete: the runner records that error on every row that used the
labels and counts it; a statement left unlabelled counts as not relevant / "neither".
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from deliberation.inference.answer_parsing import parse_choice
from deliberation.memory_policies.registry import BalanceLabel

_DIRECTIONS = {"for": 1, "against": -1, "neither": 0, "none": 0}


@dataclass(frozen=True)
class _LabelReading:
    labels: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


def json_object(text: str) -> dict[str, Any] | None:
    """The JSON object in an answer: the whole text, a fenced block, or the outermost braces."""
    stripped = text.strip()
    fenced = re.search(r"```(?:json)?\s*(.*?)```", stripped, re.DOTALL)
    attempts = [stripped, fenced.group(1) if fenced else None]
    if "{" in stripped and "}" in stripped:
        attempts.append(stripped[stripped.index("{") : stripped.rindex("}") + 1])
    for attempt in attempts:
        if attempt is None:
            continue
        try:
            value = json.loads(attempt)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def _statement_index(value: Any, n: int) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    return value - 1 if isinstance(value, int) and 1 <= value <= n else None


def read_relevance(text: str, fact_ids: Sequence[str]) -> _LabelReading:
    """``{"relevant": [numbers]}`` -> {fact id: relevant?} for every statement."""
    value = json_object(text or "")
    numbers = None if value is None else value.get("relevant")
    if not isinstance(numbers, list):
        return _LabelReading({f: False for f in fact_ids}, "relevance labels unreadable")
    indices = [_statement_index(v, len(fact_ids)) for v in numbers]
    chosen = {i for i in indices if i is not None}
    error = None
    if None in indices:
        error = f"relevance labels: {indices.count(None)} entries are not statement numbers"
    return _LabelReading({f: k in chosen for k, f in enumerate(fact_ids)}, error)


def _match_option(name: Any, options: Sequence[str]) -> str | None | bool:
    """The option a label names, read as decisions and votes are read (:func:`parse_choice`:
    "not X" names none), None for "none", False if it names no single option."""
    if not isinstance(name, str):
        return False
    if name.strip().lower() in ("none", "neither", "", "null"):
        return None
    return parse_choice(name, options) or False


def read_balance(text: str, fact_ids: Sequence[str], options: Sequence[str]) -> _LabelReading:
    """``{"labels": [{"statement", "option", "direction"}]}`` -> {fact id: BalanceLabel}.
    Statements without a usable label are left out (the audit treats them as "neither")."""
    value = json_object(text or "")
    entries = None if value is None else value.get("labels")
    if not isinstance(entries, list):
        return _LabelReading({}, "balance labels unreadable")
    labels: dict[str, BalanceLabel] = {}
    bad = 0
    for entry in entries:
        if not isinstance(entry, dict):
            bad += 1
            continue
        index = _statement_index(entry.get("statement"), len(fact_ids))
        option = _match_option(entry.get("option"), options)
        direction = _DIRECTIONS.get(str(entry.get("direction", "")).strip().lower())
        if index is None or option is False or direction is None:
            bad += 1
            continue
        labels[fact_ids[index]] = BalanceLabel(option, direction if option else 0)
    missing = len(fact_ids) - len(labels)
    problems = []
    if bad:
        problems.append(f"{bad} unreadable entries")
    if missing:
        problems.append(f"{missing} of {len(fact_ids)} statements unlabelled")
    return _LabelReading(labels, "balance labels: " + ", ".join(problems) if problems else None)
