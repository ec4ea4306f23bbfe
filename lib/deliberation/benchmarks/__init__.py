"""Benchmarks, one folder each, and the one registry of memory benchmarks.

- :mod:`.crossprofile`: the CrossProfile template bank with its authoring tools (schema,
  verifier, audit), its tasks, its scoring, its sim reading and its memory-run view.
- :mod:`.hiddenbench`: the public HiddenBench tasks (atomic facts), its sim reading, its view.
- :mod:`.problems`: the DHD math and science problem sets (one module each, one item type).

A memory benchmark (what memory runs and natural discussions read) is an object satisfying
:class:`MemoryBenchmark`: its tasks, their gold (``task.correct``, the true roles when known),
the results frame's columns (its scoring), its sim (a statement reader, :class:`Reading`), its
notebooks and its smoke size. CrossProfile and HiddenBench share the whole pipeline and differ
only in that object. A new benchmark is one folder with such an object and one line in
:data:`BUILT_IN` (or a :func:`register_memory_benchmark` call); ``deliberation run <name>``,
its stage tags (``<name>.decision``, ...), their sim behaviours, the profile's
``experiments.<name>`` grid, its notebooks and the smoke profile's grid follow from it.

Nothing here imports an experiment: the memory experiment reads the registry, not the reverse.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class Reading:
    """What a statement means to the sim: the option it bears on, its polarity on the criteria
    (+1/-1; 0 for a statement about something else) and its tone (+1/-1/0)."""

    option: str
    polarity: int = 0
    tone: int = 0


# A benchmark's sim: reader(statement text, the prompt's options) -> Reading, or None when the
# statement bears on nothing the sim knows (it then adds nothing).
Reader = Callable[[str, Sequence[str]], "Reading | None"]


@runtime_checkable
class MemoryBenchmark(Protocol):
    """A task set for memory runs. ``name`` is the CLI subcommand, the stage prefix of every
    request (so it is part of each cache key) and the profile section holding its grid."""

    name: str
    title: str  # for people: "CrossProfile"
    description: str  # one line for ``deliberation run --help``
    columns: Sequence[str]  # the results frame's columns, in order
    policies: tuple[str, ...]  # the default grid: every policy the benchmark supports
    has_truth: bool  # true roles known, so oracle policies can run
    selects_templates: bool  # tasks come in template sets (main, pilot, all)
    sim_reader: str  # "module:function" of its Reader: how the sim reads a statement
    notebooks: Mapping[str, Mapping[str, Any]]  # notebook -> options of its memory run
    smoke: Mapping[str, Any]  # its grid in the smoke profile (e.g. {"limit": 2})

    def tasks(
        self, seed: int, *, templates: str | None, limit: int | None, option_order: str = "rotate"
    ) -> list[Any]:
        """The tasks a run asks about (``templates`` only when ``selects_templates``), options
        listed as ``option_order`` says (``rotate``: counterbalanced; ``template``: as stored).
        Each task has ``id``, ``options``, ``correct`` (its gold), ``agents`` and ``facts``."""
        ...

    def truth(self, task: Any) -> Mapping[str, Any] | None:
        """fact id -> its true role, option and polarity (None without true roles)."""
        ...

    def rows(self, decisions: Sequence[Any]) -> pd.DataFrame:
        """One row per decision of the memory pipeline, in ``columns``
        (:func:`.memory_rows.common_row` gives the columns every benchmark shares)."""
        ...


# name -> "module:attribute" of the benchmark object, imported on first use.
BUILT_IN: dict[str, str] = {
    "crossprofile": "deliberation.benchmarks.crossprofile.memory:CROSSPROFILE",
    "hiddenbench": "deliberation.benchmarks.hiddenbench.memory:HIDDENBENCH",
}
_REGISTRY: dict[str, str | MemoryBenchmark] = dict(BUILT_IN)


def register_memory_benchmark(benchmark: MemoryBenchmark | str, name: str | None = None) -> None:
    """Register a benchmark object, or ``"module:attribute"`` naming one (then ``name``)."""
    key = name if isinstance(benchmark, str) else benchmark.name
    if key is None:
        raise ValueError("a benchmark registered by its import path needs a name")
    if key in _REGISTRY:
        raise ValueError(f"memory benchmark {key!r} registered twice")
    _REGISTRY[key] = benchmark


def memory_benchmark(name: str) -> MemoryBenchmark:
    """The registered benchmark ``name``; an unknown name is an error listing the known ones."""
    try:
        entry = _REGISTRY[name]
    except KeyError:
        raise ValueError(
            f"unknown benchmark {name!r}; expected {' or '.join(memory_benchmarks())}"
        ) from None
    if isinstance(entry, str):
        entry = _load(entry)
        _REGISTRY[name] = entry
    if not isinstance(entry, MemoryBenchmark):
        raise TypeError(f"memory benchmark {name!r} does not satisfy MemoryBenchmark")
    return entry


def memory_benchmarks() -> list[str]:
    """Registered names, built-ins first."""
    return list(_REGISTRY)


def _load(path: str) -> Any:
    module, _, attribute = path.partition(":")
    return getattr(importlib.import_module(module), attribute)


_READERS: dict[str, Reader] = {}


def sim_reader(name: str) -> Reader:
    """The registered benchmark ``name``'s sim reader (imported once)."""
    if name not in _READERS:
        _READERS[name] = _load(memory_benchmark(name).sim_reader)
    return _READERS[name]
