"""Memory benchmarks: what a memory run loads and how it scores, registered by name.

CrossProfile and HiddenBench share the whole pipeline (scripted discussion, memory policies,
decision calls) and differ only in what satisfies :class:`MemoryBenchmark`: the tasks they
load, whether the true roles are known (oracle policies), and the results frame's columns. A
new benchmark is one module here with a class satisfying the protocol and one line in
:data:`BUILT_IN` (or a :func:`register_memory_benchmark` call); ``deliberation run <name>``,
the stage tags (``<name>.decision``, ...) and the profile's ``experiments.<name>`` grid follow
from its name.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    import pandas as pd

    from deliberation.experiments.memory.pipeline import Decision


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
    sim_behaviours: tuple[str, ...]  # modules registering its sim behaviours (its sim)

    def tasks(
        self, seed: int, *, templates: str | None, limit: int | None, option_order: str = "rotate"
    ) -> list[Any]:
        """The tasks a run asks about (``templates`` only when ``selects_templates``), options
        listed as ``option_order`` says (``rotate``: counterbalanced; ``template``: as stored)."""
        ...

    def truth(self, task: Any) -> Mapping[str, Any] | None:
        """fact id -> its true role, option and polarity (None without true roles)."""
        ...

    def rows(self, decisions: Sequence[Decision]) -> pd.DataFrame:
        """One row per decision, in ``columns``."""
        ...


# name -> "module:attribute" of the benchmark object, imported on first use.
BUILT_IN: dict[str, str] = {
    "crossprofile": "deliberation.experiments.memory.benchmarks.crossprofile:CROSSPROFILE",
    "hiddenbench": "deliberation.experiments.memory.benchmarks.hiddenbench:HIDDENBENCH",
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
        module, _, attribute = entry.partition(":")
        entry = getattr(importlib.import_module(module), attribute)
        _REGISTRY[name] = entry
    if not isinstance(entry, MemoryBenchmark):
        raise TypeError(f"memory benchmark {name!r} does not satisfy MemoryBenchmark")
    return entry


def memory_benchmarks() -> list[str]:
    """Registered names, built-ins first."""
    return list(_REGISTRY)
