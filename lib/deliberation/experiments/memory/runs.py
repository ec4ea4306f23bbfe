"""``deliberation run crossprofile|hiddenbench``: the library functions behind the commands.

Results frames have one row per decision call. CrossProfile's columns, in order, and what each
means: :data:`deliberation.benchmarks.crossprofile.memory.CROSSPROFILE_COLUMNS`.

Three outcomes, then: answered (``valid`` 1), answered but invalid (``valid`` 0, counted
wrong as paper 1 counts it) and failed (``valid`` empty: left out of every accuracy's
numerator and denominator, retried by the next run). ``deliberation run`` writes these columns
with ``key`` named ``request_key`` and adds ``profile``, ``model``, ``gold`` (the correct
option) and ``outcome`` (``answered``, ``invalid`` or ``failed``); see
:func:`deliberation.experiments.memory.summary.command_rows`.

HiddenBench frames have ``task, policy, budget, item_limit, tags, kept_facts, kept_tokens,
budget_tokens, answer, answer_position, n_options, correct, valid, error, key`` with the same
meanings.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from deliberation.benchmarks import memory_benchmark
from deliberation.benchmarks.crossprofile.memory import (
    CROSSPROFILE_COLUMNS,
    TemplateSet,
    crossprofile_rows,
    crossprofile_tasks,
    decoy_option,
    verified_bank,
)
from deliberation.benchmarks.hiddenbench.memory import (
    HIDDENBENCH_COLUMNS,
    hiddenbench_rows,
)
from deliberation.benchmarks.memory_benchmark import MemoryBenchmark, failed_rows
from deliberation.experiments.memory.grid import Grid
from deliberation.experiments.memory.options import MemoryGridOptions
from deliberation.experiments.memory.pipeline import RunReport, decide, prepare
from deliberation.inference.client import Client
from deliberation.io.atomic import atomic_path


@dataclass(frozen=True)
class RunResult:
    frame: pd.DataFrame
    report: RunReport
    gold: dict[str, str] = field(default_factory=dict)  # task id -> correct option


def _benchmark(benchmark: str | MemoryBenchmark) -> MemoryBenchmark:
    return memory_benchmark(benchmark) if isinstance(benchmark, str) else benchmark


def run_memory_experiment(
    benchmark: str | MemoryBenchmark,
    tasks: Sequence[Any],
    grid: Grid,
    profile,
    client: Client,
    *,
    progress: bool = True,
) -> RunResult:
    """Run ``grid`` on ``tasks`` of ``benchmark`` (a registered name or a benchmark object):
    one row per decision call (columns in the module docstring)."""
    benchmark = _benchmark(benchmark)
    if not benchmark.has_truth and "truth" in grid.needs():
        raise ValueError(f"oracle policies need true roles; {benchmark.title} has none")
    report = RunReport(synthetic=bool(getattr(profile, "synthetic", False)))
    seed = profile.seed
    prepared = prepare(
        tasks,
        grid,
        stage_prefix=benchmark.name,
        profile=profile,
        client=client,
        seed=seed,
        truth=benchmark.truth,
        report=report,
    )
    decisions = decide(
        prepared,
        grid,
        stage_prefix=benchmark.name,
        profile=profile,
        client=client,
        seed=seed,
        report=report,
        progress=progress,
    )
    rows = benchmark.rows(decisions)
    return RunResult(rows, report, {task.id: task.correct for task in tasks})


def profile_grid(
    benchmark: str | MemoryBenchmark,
    profile,
    *,
    policies: Sequence[str] | None = None,
    budgets: Sequence[float] | None = None,
    tags: Sequence[str] | None = None,
    item_limit: int | None = None,
) -> tuple[Grid, dict]:
    """The grid the profile's ``experiments.<benchmark>`` section names, with the given
    overrides (every policy the benchmark supports when neither names one; the section's
    defaults for a benchmark the profile model has no section for; ``item_limit=0`` drops the
    fixed-count rows), built once, and its task selection (``templates``, the set; ``names``,
    the template ids the profile lists or None; ``limit``, ``option_order``)."""
    benchmark = _benchmark(benchmark)
    section = getattr(profile.experiments, benchmark.name, None) or MemoryGridOptions()
    grid = Grid(
        policies=tuple(policies or section.policies or benchmark.policies),
        budgets=tuple(budgets or section.budgets),
        item_limit=(section.item_limit if item_limit is None else item_limit) or None,
        tags=tuple(tags or section.tags),
    )
    listed = isinstance(section.templates, tuple)  # template ids: a set name comes per run
    selection = {
        "limit": section.limit,
        "templates": "main" if listed else section.templates,
        "names": section.templates if listed else None,
    }
    return grid, {**selection, "option_order": section.option_order}


def profile_tasks(
    benchmark: str | MemoryBenchmark,
    profile,
    *,
    templates: TemplateSet | None = None,
    limit: int | None = None,
) -> list:
    """The tasks the profile's ``experiments.<benchmark>`` section selects (its template set or
    listed ids, its ``limit``, its option order), ``templates`` and ``limit`` overriding the set
    and the count: every run and analysis of a profile's tasks asks here, so none can miss a
    selection option (the listed ids within the set asked for)."""
    benchmark = _benchmark(benchmark)
    _, selection = profile_grid(benchmark, profile)
    return benchmark.tasks(  # checks the limit
        profile.seed,
        templates=templates or selection["templates"],
        limit=limit if limit is not None else selection["limit"],
        option_order=selection["option_order"],
        # only when the profile lists templates: a benchmark that has none needs no such argument
        **({"names": selection["names"]} if selection["names"] is not None else {}),
    )


def run_from_profile(
    benchmark: str | MemoryBenchmark,
    profile,
    *,
    policies: Sequence[str] | None = None,
    budgets: Sequence[float] | None = None,
    tags: Sequence[str] | None = None,
    item_limit: int | None = None,
    templates: TemplateSet | None = None,
    limit: int | None = None,
    cache_file: Path | None = None,
    client: Client | None = None,
    progress: bool = True,
) -> RunResult:
    """What ``deliberation run <benchmark>`` does: the profile's grid with the given overrides
    (``item_limit=0`` drops the fixed-count rows), its tasks, and the run through the cache."""
    benchmark = _benchmark(benchmark)
    grid, _ = profile_grid(
        benchmark, profile, policies=policies, budgets=budgets, tags=tags, item_limit=item_limit
    )
    tasks = profile_tasks(benchmark, profile, templates=templates, limit=limit)
    if client is None:
        from deliberation.inference import make_client

        client = make_client(profile, cache_file=cache_file, progress=progress)
    return run_memory_experiment(benchmark, tasks, grid, profile, client, progress=progress)


def write_rows(frame: pd.DataFrame, path: Path) -> Path:
    """The frame as CSV, atomically (empty cells for missing values)."""
    with atomic_path(path) as tmp:
        frame.to_csv(tmp, index=False)
    return Path(path)


__all__ = [
    "crossprofile_rows",
    "failed_rows",
    "hiddenbench_rows",
    "verified_bank",
    "profile_grid",
    "profile_tasks",
    "run_from_profile",
    "write_rows",
    "CROSSPROFILE_COLUMNS",
    "HIDDENBENCH_COLUMNS",
    "RunResult",
    "crossprofile_tasks",
    "decoy_option",
    "run_memory_experiment",
]
