"""HiddenBench (Li et al., arXiv 2505.11556): loader for the public JSON, with atomic facts.

In full: ``docs/experiments.md``, section "HiddenBench tasks and atomic facts
(benchmarks/hiddenbench/tasks.py)".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from deliberation.benchmarks.problems.items import (
    DatasetFormatError,
    DatasetNotFoundError,
    read_json,
)
from deliberation.io import paths
from deliberation.seeds import stable_seed

OptionOrder = Literal["rotate", "template"]
FILE_NAME = "benchmark_all_clean.json"
NAME = "hiddenbench"

_BULLET = re.compile(r"^\s*(?:[-*•])\s+")
_ABBREVIATIONS = {
    "mr", "mrs", "ms", "dr", "st", "jr", "sr", "prof", "vs", "etc", "no", "inc", "ltd", "co",
    "e.g", "i.e", "u.s", "u.k", "a.m", "p.m", "approx", "dept", "mt", "ft",
}  # fmt: skip
_SENTENCE_END = re.compile(r"[.!?](?=\s+[A-Z0-9\"“‘'(])")


@dataclass(frozen=True)
class _HiddenBenchFact:
    id: str
    text: str
    holders: tuple[str, ...]
    source: str  # "shared" or "hidden": where the file lists it (not used by any policy)


@dataclass(frozen=True)
class HiddenBenchTask:
    """One HiddenBench task with atomic facts; options and facts in seeded order."""

    id: str
    number: int
    name: str
    description: str
    options: tuple[str, ...]
    correct: str
    facts: tuple[_HiddenBenchFact, ...]
    agents: tuple[str, ...]
    seed: int
    criteria: tuple[str, ...] = ()


def _collapse(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def split_sentences(text: str) -> list[str]:
    """Prose split into sentences (rule 2 of the module docstring)."""
    text = _collapse(text)
    pieces, start = [], 0
    for match in _SENTENCE_END.finditer(text):
        word = re.search(r"([\w.]+)$", text[start : match.start()])
        if word and word.group(1).lower().rstrip(".") in _ABBREVIATIONS:
            continue
        pieces.append(text[start : match.end()].strip())
        start = match.end()
    tail = text[start:].strip()
    if tail:
        pieces.append(tail)
    return pieces


def split_atomic(entry: str) -> list[str]:
    """One entry of ``shared_information`` or ``hidden_information`` as atomic facts."""
    lines = [line for line in entry.splitlines() if line.strip()]
    if not any(_BULLET.match(line) for line in lines):
        return split_sentences(entry)
    facts: list[str] = []
    heading: str | None = None
    for index, line in enumerate(lines):
        if _BULLET.match(line):
            item = _collapse(_BULLET.sub("", line))
        else:
            following = lines[index + 1] if index + 1 < len(lines) else ""
            if line.rstrip().endswith(":") or _BULLET.match(following):
                heading = _collapse(line).rstrip(":").strip()
                continue
            item = _collapse(line)
        facts.append(f"{heading}: {item}" if heading else item)
    return facts


def _require(record: Any, field: str, kind: type, path: Path, number: int) -> Any:
    value = record.get(field) if isinstance(record, dict) else None
    if not isinstance(value, kind) or (kind is list and not all(isinstance(v, str) for v in value)):
        raise DatasetFormatError(path, f"field {field!r} missing or not a {kind.__name__}", number)
    return value


def presented_options(
    options: list[str], correct: str, number: int, seed: int, option_order: OptionOrder
) -> tuple[str, ...]:
    """The file's options rotated so the key sits at (number + seed) mod k (``rotate``), or
    as the file lists them (``template``)."""
    if option_order not in ("rotate", "template"):
        raise ValueError(f"option_order must be rotate or template; got {option_order!r}")
    if option_order == "template":
        return tuple(options)
    offset = options.index(correct) - (number + seed) % len(options)
    return tuple(options[(j + offset) % len(options)] for j in range(len(options)))


def build_task(
    record: dict[str, Any],
    seed: int = 0,
    path: Path | str = FILE_NAME,
    option_order: OptionOrder = "rotate",
) -> HiddenBenchTask:
    """One task from its JSON record (see the module docstring for every rule)."""
    path = Path(path)
    number = record.get("id") if isinstance(record, dict) else None
    if not isinstance(number, int):
        raise DatasetFormatError(path, "field 'id' missing or not an integer")
    shared = _require(record, "shared_information", list, path, number)
    hidden = _require(record, "hidden_information", list, path, number)
    options = _require(record, "possible_answers", list, path, number)
    correct = _require(record, "correct_answer", str, path, number)
    description = _require(record, "description", str, path, number)
    name = _require(record, "name", str, path, number)
    if correct not in options:
        raise DatasetFormatError(
            path, f"correct_answer {correct!r} not in possible_answers", number
        )
    if not hidden:
        raise DatasetFormatError(path, "hidden_information is empty", number)
    agents = tuple(f"A{k}" for k in range(1, len(hidden) + 1))

    texts: dict[str, tuple[str, str]] = {}  # text -> (id, source)
    holders: dict[str, set[str]] = {}
    sources = [("s", i, e, agents) for i, e in enumerate(shared, 1)] + [
        ("h", i, e, (agents[i - 1],)) for i, e in enumerate(hidden, 1)
    ]
    for prefix, entry_number, entry, who in sources:
        for part, text in enumerate(split_atomic(entry), 1):
            origin = "shared" if prefix == "s" else "hidden"
            texts.setdefault(text, (f"{prefix}{entry_number}.{part}", origin))
            holders.setdefault(text, set()).update(who)
    facts = [
        _HiddenBenchFact(
            id=fact_id,
            text=text,
            holders=tuple(a for a in agents if a in holders[text]),
            source=origin,
        )
        for text, (fact_id, origin) in texts.items()
    ]
    task_id = f"hb{number:02d}"
    rng = np.random.default_rng(stable_seed("hiddenbench-order", task_id, seed))
    rng.permutation(len(options))  # drawn (and unused) so fact orders stay as they were
    fact_order = rng.permutation(len(facts))
    return HiddenBenchTask(
        id=task_id,
        number=number,
        name=name,
        description=description.strip(),
        options=presented_options(options, correct, number, seed, option_order),
        correct=correct,
        facts=tuple(facts[i] for i in fact_order),
        agents=agents,
        seed=seed,
    )


def default_path() -> Path:
    """``data/external/hiddenbench/<file>`` (``make data``), else the shared test copy."""
    fetched = paths.external_data_dir() / NAME / FILE_NAME
    if fetched.is_file():
        return fetched
    shared = paths.shared_data_dir()
    if shared is not None and (shared / NAME / FILE_NAME).is_file():
        return shared / NAME / FILE_NAME
    return fetched


def load_hiddenbench(
    path: Path | str | None = None, seed: int = 0, option_order: OptionOrder = "rotate"
) -> list[HiddenBenchTask]:
    """Every task of the file, in file order (options as ``option_order`` lists them)."""
    path = Path(path) if path is not None else default_path()
    if not path.is_file():
        raise DatasetNotFoundError(f"{NAME}: no file {path} (run `make data`)")
    records = read_json(path)
    if not isinstance(records, list):
        raise DatasetFormatError(path, "expected a JSON list of task objects")
    tasks = [build_task(record, seed, path, option_order) for record in records]
    ids = [t.number for t in tasks]
    if len(set(ids)) != len(ids):
        raise DatasetFormatError(path, "duplicate task ids")
    return tasks
