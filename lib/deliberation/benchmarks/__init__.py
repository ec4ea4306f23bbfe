"""Benchmarks, one folder each, and the one registry of memory benchmarks.

- :mod:`.crossprofile`: the CrossProfile template bank with its authoring tools (schema,
  verifier, audit), its tasks, its scoring, its sim reading and its memory-run view.
- :mod:`.hiddenbench`: the public HiddenBench tasks (atomic facts), its sim reading, its view.
- :mod:`.problems`: the DHD math and science problem sets (one module each, one item type).

A memory benchmark (what memory runs and natural discussions read) is an object satisfying
:class:`~.memory_benchmark.MemoryBenchmark`: its tasks, their gold (``task.correct``, the true
roles when known), the results frame's columns (its scoring), its sim (a statement reader), its
notebooks and its smoke size. CrossProfile and HiddenBench share the whole pipeline and differ
only in that object. A new benchmark is one folder with such an object and one line in
:data:`BUILT_IN` (or a :func:`register_memory_benchmark` call); ``deliberation run <name>``,
its stage tags (``<name>.decision``, ...), their sim behaviours, the profile's
``experiments.<name>`` grid, its notebooks and the smoke profile's grid follow from it.

Nothing here imports an experiment: the memory experiment reads the registry, not the reverse.
"""

from __future__ import annotations

from deliberation.benchmarks.crossprofile.memory import CROSSPROFILE
from deliberation.benchmarks.hiddenbench.memory import HIDDENBENCH
from deliberation.benchmarks.memory_benchmark import MemoryBenchmark

BUILT_IN: tuple[MemoryBenchmark, ...] = (CROSSPROFILE, HIDDENBENCH)
_REGISTRY: dict[str, MemoryBenchmark] = {b.name: b for b in BUILT_IN}


def register_memory_benchmark(benchmark: MemoryBenchmark) -> None:
    """Register a benchmark object under its ``name``."""
    if not isinstance(benchmark, MemoryBenchmark):
        raise TypeError(f"{benchmark!r} does not satisfy MemoryBenchmark")
    if benchmark.name in _REGISTRY:
        raise ValueError(f"memory benchmark {benchmark.name!r} registered twice")
    _REGISTRY[benchmark.name] = benchmark


def memory_benchmark(name: str) -> MemoryBenchmark:
    """The registered benchmark ``name``; an unknown name is an error listing the known ones."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(
            f"unknown benchmark {name!r}; expected {' or '.join(memory_benchmarks())}"
        ) from None


def memory_benchmarks() -> list[str]:
    """Registered names, built-ins first."""
    return list(_REGISTRY)
