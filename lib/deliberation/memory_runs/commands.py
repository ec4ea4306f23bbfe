"""CLI: ``deliberation run crossprofile|hiddenbench --profile P [grid overrides] --out rows.csv``."""

from __future__ import annotations

import argparse
from pathlib import Path

from deliberation.memory_runs.grid import parse_budgets, parse_list


def register(subparsers: argparse._SubParsersAction) -> None:
    from deliberation.cli import command_group

    group = command_group(subparsers, "run")
    for benchmark, what in (
        ("crossprofile", "CrossProfile tasks (templates x 8 ownership variants)"),
        ("hiddenbench", "HiddenBench tasks (atomic facts)"),
    ):
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
        if benchmark == "crossprofile":
            parser.add_argument(
                "--templates", choices=("main", "pilot", "all"), help="which templates"
            )
        parser.add_argument(
            "--limit",
            type=int,
            help="only the first N templates (CrossProfile, all variants) or tasks (HiddenBench)",
        )
        parser.add_argument("--cache", type=Path, help="cache file (default: the profile's)")
        parser.add_argument("--out", type=Path, required=True, help="rows.csv to write")
        parser.add_argument("--no-progress", action="store_true", help="no progress bars")
        parser.set_defaults(func=run_command, benchmark=benchmark)


def run_command(args: argparse.Namespace) -> int:
    from deliberation.memory_runs.runs import run_from_profile, write_rows
    from deliberation.params import load_profile

    profile = load_profile(args.profile)
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
            cache_file=args.cache,
            progress=not args.no_progress,
        )
    except (KeyError, ValueError) as error:
        print(f"deliberation run {args.benchmark}: {error}")
        return 2
    write_rows(result.frame, args.out)
    for line in result.report.lines():
        print(line)
    print(f"{len(result.frame)} rows -> {args.out}")
    return 0
