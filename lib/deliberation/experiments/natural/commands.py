"""CLI: ``deliberation run natural --profile P [--benchmarks ...] [--limit N] --out rows.csv``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from deliberation.experiments.memory.grid import parse_list

if TYPE_CHECKING:
    from deliberation.params import Profile


def register(subparsers: argparse._SubParsersAction) -> None:
    from deliberation.cli import command_group, positive_int

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
    parser.add_argument("--limit", type=positive_int, help="only the first N templates or tasks")
    parser.add_argument("--cache", type=Path, help="cache file (default: the profile's)")
    parser.add_argument(
        "--out",
        type=Path,
        help="rows.csv to write (default build/runs/<profile>/<experiment>_rows.csv)",
    )
    parser.add_argument(
        "--disclosure-out",
        type=Path,
        help="disclosure rows (default: <out stem>_disclosure.csv beside --out)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.set_defaults(func=run_command)


def run_command(args: argparse.Namespace) -> int:
    """Run, write both row files, print the counts; exit 3 when any call failed."""
    from deliberation.inference.model_server import model_server
    from deliberation.params import load_profile

    profile = load_profile(args.profile)
    with model_server(profile):  # starts the profile's server if a call must be sent
        return _run(args, profile)


def _run(args: argparse.Namespace, loaded: Profile) -> int:
    from deliberation.experiments.memory.runs import write_rows
    from deliberation.experiments.memory.summary import (
        command_rows,
        format_summary,
        summary_table,
        vote_summary,
        write_command_rows,
    )
    from deliberation.experiments.natural.runs import run_from_profile
    from deliberation.inference import open_run
    from deliberation.inference.failures import EXIT_FAILED_CALLS

    # open_run: a run against a serve-sim endpoint is labelled synthetic whatever the profile.
    profile, client = open_run(loaded, cache_file=args.cache, progress=not args.no_progress)
    try:
        result = run_from_profile(
            profile,
            benchmarks=parse_list(args.benchmarks),
            limit=args.limit,
            client=client,
            progress=not args.no_progress,
        )
    except (KeyError, ValueError) as error:
        print(f"deliberation run natural: {error}")
        return 2
    from deliberation import paths

    args.out = args.out or paths.run_rows(profile.name, "natural")
    disclosure_out = args.disclosure_out or args.out.with_name(f"{args.out.stem}_disclosure.csv")
    gold = {d.task.id: d.task.correct for d in result.discussions}
    rows = command_rows(result.rows, profile, gold)
    failed = int(result.rows["valid"].isna().sum())
    sidecar = write_command_rows(rows, args.out, profile, command="run natural", failed=failed)
    write_rows(result.disclosure, disclosure_out)
    for line in result.lines():
        print(line)
    print(
        f"{len(result.rows)} rows -> {args.out} (provenance: {sidecar.name});"
        f" {len(result.disclosure)} -> {disclosure_out}"
    )
    decisions = result.rows[result.rows["kind"] == "decision"]
    if len(decisions):
        print("")
        print(format_summary(summary_table(decisions)))
        print("")
        print(vote_summary(result.rows).to_string(index=False))
    failures = client.failed.lines("deliberation run natural")
    if failures:
        print("")
        for line in failures:
            print(line)
        return EXIT_FAILED_CALLS
    return 0
