"""CLI: ``deliberation run crossprofile|hiddenbench --profile P [grid overrides] --out rows.csv``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from deliberation.experiments.memory.grid import parse_budgets, parse_list

if TYPE_CHECKING:
    from deliberation.params import Profile


def register(subparsers: argparse._SubParsersAction) -> None:
    from deliberation.cli import command_group, positive_int
    from deliberation.experiments.memory.benchmarks import memory_benchmark, memory_benchmarks

    group = command_group(subparsers, "run")
    for benchmark in memory_benchmarks():
        what = memory_benchmark(benchmark).description
        parser = group.add_parser(
            benchmark,
            help=f"memory policies x budgets x tag modes on {what}; one row per decision",
            description=(
                "Scripted discussion, memory policies under a token budget, and the decision "
                "call, for every task and grid cell. The grid comes from the profile's "
                f"experiments.{benchmark} section; the options below override it. Every "
                "request goes through the response cache; identical prompts are sent once."
            ),
        )
        parser.add_argument("--profile", default="sim", help="profile name or path (default sim)")
        parser.add_argument("--policies", help="comma-separated policies, e.g. R1,B4,Random")
        parser.add_argument("--budgets", help="comma-separated budget fractions, e.g. 0.4,0.6")
        parser.add_argument("--tags", help="comma-separated tag modes: keep,remove,shuffle")
        parser.add_argument(
            "--item-limit", type=int, help="fixed item count of the control rows (0: none)"
        )
        if memory_benchmark(benchmark).selects_templates:
            parser.add_argument(
                "--templates", choices=("main", "pilot", "all"), help="which templates"
            )
        parser.add_argument(
            "--limit",
            type=positive_int,
            help="only the first N templates (CrossProfile, all variants) or tasks (HiddenBench)",
        )
        parser.add_argument("--cache", type=Path, help="cache file (default: the profile's)")
        parser.add_argument(
            "--out",
            type=Path,
            help="rows.csv to write (default build/runs/<profile>/<experiment>_rows.csv)",
        )
        parser.add_argument("--no-progress", action="store_true", help="no progress bars")
        parser.set_defaults(func=run_command, benchmark=benchmark)


def run_command(args: argparse.Namespace) -> int:
    """Run, write the rows and their sidecar, print the counts and the results table; exit
    :data:`~deliberation.inference.failures.EXIT_FAILED_CALLS` (3) when any call failed."""
    from deliberation.inference.model_server import model_server
    from deliberation.params import load_profile

    profile = load_profile(args.profile)
    with model_server(profile):  # starts the profile's server if a call must be sent
        return _run(args, profile)


def _run(args: argparse.Namespace, loaded: Profile) -> int:
    from deliberation.experiments.memory.runs import run_from_profile
    from deliberation.experiments.memory.summary import (
        command_rows,
        format_summary,
        summary_table,
        write_command_rows,
    )
    from deliberation.inference import open_run
    from deliberation.inference.failures import EXIT_FAILED_CALLS

    # open_run: a run against a serve-sim endpoint is labelled synthetic whatever the profile.
    profile, client = open_run(loaded, cache_file=args.cache, progress=not args.no_progress)
    try:
        result = run_from_profile(
            args.benchmark,
            profile,
            policies=parse_list(args.policies),
            budgets=parse_budgets(parse_list(args.budgets)),
            tags=parse_list(args.tags),
            item_limit=args.item_limit,
            templates=getattr(args, "templates", None),
            limit=args.limit,
            client=client,
            progress=not args.no_progress,
        )
    except (KeyError, ValueError) as error:
        print(f"deliberation run {args.benchmark}: {error}")
        return 2
    from deliberation import paths

    args.out = args.out or paths.run_rows(profile.name, args.benchmark)
    rows = command_rows(result.frame, profile, result.gold)
    sidecar = write_command_rows(
        rows, args.out, profile, command=f"run {args.benchmark}", failed=result.report.failed
    )
    for line in result.report.lines():
        print(line)
    print(f"{len(rows)} rows -> {args.out} (provenance: {sidecar.name})")
    if len(rows):
        print("")
        print(format_summary(summary_table(result.frame)))
    failures = client.failed.lines(f"deliberation run {args.benchmark}")
    if failures or result.report.failed:
        print("")
        for line in failures or [f"FAILED: {result.report.failed} rows failed"]:
            print(line)
        return EXIT_FAILED_CALLS
    return 0
