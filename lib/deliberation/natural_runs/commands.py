"""CLI: ``deliberation run natural --profile P [--benchmarks ...] [--limit N] --out rows.csv``."""

from __future__ import annotations

import argparse
from pathlib import Path

from deliberation.memory_runs.grid import parse_list


def register(subparsers: argparse._SubParsersAction) -> None:
    from deliberation.cli import command_group

    group = command_group(subparsers, "run")
    parser = group.add_parser(
        "natural",
        help="free two-round discussions, votes, disclosure and memory on their transcripts",
        description=(
            "Natural discussions (initial vote, two speaking rounds, final vote) under the plain "
            "and evidence-first prompts, then decisions reading the full transcript, every fact "
            "or a memory policy's notes. Settings come from the profile's experiments.natural "
            "section. Every request goes through the response cache; identical prompts are sent "
            "once. Writes one row per (task, agent, vote stage) and per decision, and the "
            "disclosure label of every fact beside it."
        ),
    )
    parser.add_argument("--profile", default="sim", help="profile name or path (default sim)")
    parser.add_argument(
        "--benchmarks", help="comma-separated: crossprofile,hiddenbench (default: the profile's)"
    )
    parser.add_argument("--limit", type=int, help="only the first N templates or tasks")
    parser.add_argument("--cache", type=Path, help="cache file (default: the profile's)")
    parser.add_argument("--out", type=Path, required=True, help="rows.csv to write")
    parser.add_argument(
        "--disclosure-out",
        type=Path,
        help="disclosure rows (default: <out stem>_disclosure.csv beside --out)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.set_defaults(func=run_command)


def run_command(args: argparse.Namespace) -> int:
    from deliberation.memory_runs.runs import write_rows
    from deliberation.natural_runs.runs import run_from_profile
    from deliberation.params import load_profile

    profile = load_profile(args.profile)
    try:
        result = run_from_profile(
            profile,
            benchmarks=parse_list(args.benchmarks),
            limit=args.limit,
            cache_file=args.cache,
            progress=not args.no_progress,
        )
    except (KeyError, ValueError) as error:
        print(f"deliberation run natural: {error}")
        return 2
    disclosure_out = args.disclosure_out or args.out.with_name(f"{args.out.stem}_disclosure.csv")
    write_rows(result.rows, args.out)
    write_rows(result.disclosure, disclosure_out)
    for line in result.lines():
        print(line)
    print(f"{len(result.rows)} rows -> {args.out}; {len(result.disclosure)} -> {disclosure_out}")
    return 0
