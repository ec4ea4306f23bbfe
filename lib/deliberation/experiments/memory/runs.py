"""``deliberation run crossprofile|hiddenbench``: the library functions behind the commands.

Results frames have one row per decision call. CrossProfile columns, in order:

==================  ============================================================================
``task``            task id, ``<template>/<variant>``
``template``        template id (the bootstrap's cluster)
``domain``          decision domain of the template
``pilot``           1 for the 10 pilot templates, else 0
``variant``         ownership variant, e.g. ``SP-DS-IP``
``support``         ownership of the support facts: ``shared`` or ``private``
``decoy``           ownership of the decoy facts
``irrelevant``      ownership of the irrelevant facts
``policy``          memory policy (``R1``, ``B4``, ``Random``, ``B3``, ``R1-rel``, ...)
``budget``          budget fraction r; empty for references and fixed-count rows
``item_limit``      7 for fixed-count rows, else empty
``tags``            holder-tag mode: ``keep``, ``remove`` or ``shuffle``
``kept_facts``      fact ids in memory order joined by ``;`` (empty for B3: free text)
``kept_tokens``     statement tokens kept (B3: tokens of the summary after the cut)
``budget_tokens``   floor(r x all statement tokens); empty without a token budget
``net_lead``        score(correct) - best competitor's score over the kept facts (empty for B3)
``irrelevant_tone`` summed tone of the kept irrelevant facts, whatever option they concern
                    (empty for B3)
``tone_lead``       tone on the correct option minus the largest tone on a competitor over
                    the kept irrelevant facts (signed like ``net_lead``; empty for B3)
``answer``          the option chosen; empty when the answer named no single option
``answer_position`` where the chosen option was listed in the prompt (1 = first); empty when
                    the answer named no single option
``n_options``       how many options the prompt listed (chance is 1 / ``n_options``)
``correct``         1 if the answer is the key, else 0 (an invalid answer counts as 0); empty
                    for a failed row
``chose_decoy``     1 if the answer is the decoy option (the wrong option two decoys favour), else
                    0; empty if failed, or if the template has no decoy option (bank v5 with the
                    key in slot E: one decoy on each wrong option, one against the key)
``valid``           1 if the answer named exactly one option, else 0; **empty for a failed row**
                    (no usable reply: the decision call failed, or a call its memory needs did,
                    and then the decision was not sent and ``kept_*`` are empty too)
``error``           why a row is invalid or failed, or what went wrong upstream (labels), or empty
``key``             the decision request's cache key (empty when it was not sent)
==================  ============================================================================

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

from deliberation.benchmarks import MemoryBenchmark, memory_benchmark
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
from deliberation.benchmarks.memory_rows import failed_rows
from deliberation.experiments.memory.grid import Grid
from deliberation.experiments.memory.options import MemoryGridOptions
from deliberation.experiments.memory.pipeline import RunReport, decide, prepare
from deliberation.inference.client import Client
from deliberation.io.atomic import atomic_path
from deliberation.profiles.profile import check_limit


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
    fixed-count rows), built once, and its task selection (``templates``, ``limit``,
    ``option_order``)."""
    benchmark = _benchmark(benchmark)
    section = getattr(profile.experiments, benchmark.name, None) or MemoryGridOptions()
    grid = Grid(
        policies=tuple(policies or section.policies or benchmark.policies),
        budgets=tuple(budgets or section.budgets),
        item_limit=(section.item_limit if item_limit is None else item_limit) or None,
        tags=tuple(tags or section.tags),
    )
    selection = {"limit": section.limit, "templates": section.templates}
    return grid, {**selection, "option_order": section.option_order}


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
    grid, selection = profile_grid(
        benchmark, profile, policies=policies, budgets=budgets, tags=tags, item_limit=item_limit
    )
    limit = check_limit(limit if limit is not None else selection.get("limit"))
    tasks = benchmark.tasks(
        profile.seed,
        templates=templates or selection.get("templates"),
        limit=limit,
        option_order=selection["option_order"],
    )
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
    "run_from_profile",
    "write_rows",
    "CROSSPROFILE_COLUMNS",
    "HIDDENBENCH_COLUMNS",
    "RunResult",
    "crossprofile_tasks",
    "decoy_option",
    "run_memory_experiment",
]
