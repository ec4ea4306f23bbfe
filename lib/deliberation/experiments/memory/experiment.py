"""The memory experiment's records: one :class:`~deliberation.experiments.record.Experiment` per
registered memory benchmark (``deliberation run crossprofile|hiddenbench``, notebooks 02-05), its
flags (grid overrides) and its summary (rows, counts, the results table)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from deliberation.benchmarks import memory_benchmark, memory_benchmarks
from deliberation.experiments.memory.analyses.grid_needs import grid_needs
from deliberation.experiments.memory.analyses.notebook_runs import notebook_experiment
from deliberation.experiments.memory.grid import parse_budgets, parse_list
from deliberation.experiments.memory.options import MemoryGridOptions
from deliberation.experiments.memory.runs import profile_grid, run_from_profile
from deliberation.experiments.memory.sim import mechanism
from deliberation.experiments.memory.summary import (
    command_rows,
    format_summary,
    summary_table,
    write_command_rows,
)
from deliberation.experiments.record import Experiment, NotebookCall
from deliberation.inference.sim_registry import StageBehaviour
from deliberation.memory_policies import PRIMARY_FRACTION

if TYPE_CHECKING:
    from deliberation.profiles.profile import Profile

# Its sim: each memory stage of a benchmark answered by the mechanism with the benchmark's
# reader, seeded without the option order.
_STEPS = {
    "decision": mechanism.benchmark_decision,
    "relevance": mechanism.benchmark_relevance,
    "balance": mechanism.benchmark_balance,
    "summary": mechanism.benchmark_summary,
}


# The smallest try on any memory benchmark: one task (template), one policy, the primary
# budget, no fixed-item-count rows, tags kept; the notebooks' needs widen it (grid_needs).
STARTER = {
    "limit": 1,
    "budgets": [0.6],
    "item_limit": 0,
    "policies": ["R1"],
    "tags": ["keep"],
    "n_resamples": 2000,
}


def _benchmark_stages(benchmark: str) -> dict[str, StageBehaviour]:
    """``<benchmark>.decision``, ``.relevance``, ``.balance``, ``.summary``."""
    return {
        f"{benchmark}.{step}": StageBehaviour(behaviour, mechanism.order_free_request)
        for step, behaviour in _STEPS.items()
    }


def _memory_experiment(benchmark: str) -> Experiment:
    """The memory experiment on the registered memory benchmark ``benchmark``."""
    found = memory_benchmark(benchmark)
    notebooks = {
        notebook: NotebookCall(notebook_experiment, {"benchmark": benchmark, **options})
        for notebook, options in found.notebooks.items()
    }
    return Experiment(
        name=benchmark,
        summary=(
            f"memory policies x budgets x tag modes on {found.description}; one row per decision"
        ),
        description=(
            "Scripted discussion, memory policies under a token budget, and the decision "
            "call, for every task and grid cell. The grid comes from the profile's "
            f"experiments.{benchmark} section; the options below override it. Every "
            "request goes through the response cache; identical prompts are sent once."
        ),
        options=MemoryGridOptions,
        runner=run,
        arguments=add_arguments,
        report=report,
        quick_try=quick_try,
        stages=(f"{benchmark}.",),
        sim_behaviours=(mechanism,),
        sim_stages=_benchmark_stages(benchmark),
        notebooks=notebooks,
        smoke=dict(found.smoke),
        starter=STARTER,
        grid_needs=grid_needs,
        bound={"benchmark": benchmark},
    )


def memory_experiments() -> tuple[Experiment, ...]:
    """One record per registered memory benchmark (a benchmark registered later gets its own)."""
    return tuple(_memory_experiment(name) for name in memory_benchmarks())


def add_arguments(parser: argparse.ArgumentParser, name: str) -> None:
    from deliberation.cli import add_list, positive_int

    add_list(parser, "--policies", help="policies, e.g. R1 B4 Random (or R1,B4,Random)")
    add_list(parser, "--budgets", help="budget fractions, e.g. 0.4 0.6 (or 0.4,0.6)")
    add_list(parser, "--tags", help="tag modes: keep remove shuffle (or keep,remove,shuffle)")
    parser.add_argument(
        "--item-limit", type=int, help="fixed item count of the control rows (0: none)"
    )
    if memory_benchmark(name).selects_templates:
        parser.add_argument("--templates", choices=("main", "pilot", "all"), help="which templates")
    parser.add_argument(
        "--limit",
        type=positive_int,
        help="only the first N templates (CrossProfile, all variants) or tasks (HiddenBench);"
        " a quick try: the grid flags not given narrowed to one value each (the first line says)",
    )


def quick_try(
    profile: Profile, name: str, options: dict[str, Any]
) -> tuple[dict[str, Any], str | None]:
    """``--limit`` without a grid flag: one policy (the grid's first), one budget (the primary
    r = .6 when the grid has it, without the fixed-item-count control) and one tag mode (keep),
    so a first try on a slow model sends tens of calls, not the grid's thousands. A flag given
    keeps its values; the returned line names what was narrowed (None when nothing was)."""
    grid, _ = profile_grid(name, profile)
    narrowed = dict(options)
    said = []
    if options.get("policies") is None and len(grid.policies) > 1:
        narrowed["policies"] = grid.policies[0]
        said.append(f"policy {grid.policies[0]}")
    if options.get("budgets") is None and (len(grid.budgets) > 1 or grid.item_limit):
        budget = PRIMARY_FRACTION if PRIMARY_FRACTION in grid.budgets else grid.budgets[0]
        narrowed["budgets"] = f"{budget:g}"
        control = options.get("item_limit") is None and bool(grid.item_limit)
        if control:
            narrowed["item_limit"] = 0  # the fixed-item-count control is a second "budget"
        said.append(f"budget {budget:g}" + (" (no fixed-item-count rows)" if control else ""))
    if options.get("tags") is None and len(grid.tags) > 1:
        tag = "keep" if "keep" in grid.tags else grid.tags[0]
        narrowed["tags"] = tag
        said.append(f"tags {tag}")
    if not said:
        return options, None
    listed = ", ".join(said[:-1]) + (" and " if len(said) > 1 else "") + said[-1]
    return narrowed, (
        f"a quick try (--limit {options['limit']}): only {listed}; give --policies, --budgets,"
        " --tags (--item-limit) for more of the profile's grid"
    )


def run(
    profile: Profile,
    client: Any,
    *,
    benchmark: str,
    policies: str | Sequence[str] | None = None,
    budgets: str | Sequence[str] | None = None,
    tags: str | Sequence[str] | None = None,
    progress: bool = True,
    **options: Any,
) -> Any:
    """One benchmark's grid (overrides as the CLI takes them: lists, or comma-separated)."""
    return run_from_profile(
        benchmark,
        profile,
        policies=parse_list(policies),
        budgets=parse_budgets(parse_list(budgets)),
        tags=parse_list(tags),
        client=client,
        progress=progress,
        **options,
    )


def report(result: Any, profile: Profile, args: argparse.Namespace) -> str | None:
    """Write the rows and their sidecar, print the counts and the results table."""
    rows = command_rows(result.frame, profile, result.gold)
    sidecar = write_command_rows(
        rows, args.out, profile, command=f"run {args.experiment}", failed=result.report.failed
    )
    for line in result.report.lines():
        print(line)
    print(f"{len(rows)} rows -> {args.out} (provenance: {sidecar.name})")
    if len(rows):
        print("")
        print(format_summary(summary_table(result.frame)))
    return f"FAILED: {result.report.failed} rows failed" if result.report.failed else None
