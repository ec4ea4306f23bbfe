"""DHD benchmark loaders and graders: one module per benchmark, one item type, two entry points.

>>> items = load("jeebench")                       # data/external/jeebench (``make data``)
>>> grade(items[0], "... Proposed final answer: (B)").score  # 1.0, 0.0 or partial credit

Benchmarks: ``jeebench``, ``scibench``, ``mascqa``, ``labbench``, ``omnimath``. Each module
documents its official check and where we differ. Replies are read by
:mod:`deliberation.benchmarks.problems.extract` (one documented precedence for all). :func:`grade` returns a
:class:`Grade`; one whose ``failed`` is true (a symbolic comparison passed its time limit) is
neither right nor wrong: see :class:`Grade` for how to count it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from deliberation.benchmarks.problems import jeebench, labbench, mascqa, omnimath, scibench
from deliberation.benchmarks.problems.items import (
    AnswerType,
    DatasetFormatError,
    DatasetNotFoundError,
    Grade,
    Item,
)
from deliberation.io import paths

BENCHMARKS: dict[str, ModuleType] = {
    module.NAME: module for module in (jeebench, scibench, mascqa, labbench, omnimath)
}
_ALIASES = {"lab-bench": "labbench", "omni-math": "omnimath", "omni_math": "omnimath"}

__all__ = [
    "BENCHMARKS",
    "AnswerType",
    "DatasetFormatError",
    "DatasetNotFoundError",
    "Grade",
    "Item",
    "grade",
    "load",
    "question_text",
    "render_answer",
]


def _benchmark_module(name: str) -> ModuleType:
    """The module implementing a benchmark (names are case-insensitive; aliases accepted)."""
    key = _ALIASES.get(name.lower(), name.lower())
    if key not in BENCHMARKS:
        raise KeyError(f"unknown benchmark {name!r}; known: {sorted(BENCHMARKS)}")
    return BENCHMARKS[key]


def _default_root(name: str) -> Path:
    """``data/external/<name>``, where ``make data`` puts the files."""
    return paths.external_data_dir() / _benchmark_module(name).NAME


def load(
    name: str, root: str | Path | None = None, subset: str | Sequence[str] | None = None
) -> list[Item]:
    """Every item of a benchmark (or of a subset: a subject, source, topic or file variant)."""
    module = _benchmark_module(name)
    folder = Path(root) if root is not None else _default_root(module.NAME)
    if not folder.is_dir():
        raise DatasetNotFoundError(f"{module.NAME}: no data folder {folder} (run `make data`)")
    wanted = [subset] if isinstance(subset, str) else (list(subset) if subset else None)
    try:
        return module.load(folder, wanted)
    except FileNotFoundError as error:
        if isinstance(error, DatasetNotFoundError):
            raise
        raise DatasetNotFoundError(f"{module.NAME}: {error} (run `make data`)") from None


def grade(item: Item, prediction: str) -> Grade:
    """Grade a model reply: score 1.0 correct, 0.0 wrong, partial where defined; or a failure."""
    return _benchmark_module(item.benchmark).grade(item, prediction)


def render_answer(item: Item) -> str:
    """The gold answer written as a model would end its reply (``grade`` gives it 1.0)."""
    return _benchmark_module(item.benchmark).render_answer(item)


def question_text(item: Item) -> str:
    """What to show a model: context (if any), the question, and the lettered options (if any)."""
    parts = []
    if item.context:
        parts.append(item.context)
    parts.append(item.question)
    if item.options:
        parts.append(
            "\n".join(
                f"{letter}. {text}" for letter, text in zip(item.letters, item.options, strict=True)
            )
        )
    return "\n\n".join(parts)
