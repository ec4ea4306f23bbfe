"""CLI: ``deliberation run dhd --profile P [--benchmarks ...] [--limit N] [--stage ...] --out rows.csv``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

STAGES = ("pool", "replay", "repeated")


if TYPE_CHECKING:
    from deliberation.params import Profile


def register(subparsers: argparse._SubParsersAction) -> None:
    from deliberation.cli import command_group, positive_int

    group = command_group(subparsers, "run")
    parser = group.add_parser(
        "dhd",
        help="Diverse Hypothesis Deliberation: pools, replays, repeated replays; one row per call",
        description=(
            "Recruit five roles and draw five hypothesizer replies per problem (stored once as "
            "the pool), then replay the integrator on views of each pool. The problems and sizes "
            "come from the profile's experiments.dhd section; the options below override them. "
            "Every request goes through the response cache; identical prompts are sent once."
        ),
    )
    parser.add_argument("--profile", default="sim", help="profile name or path (default sim)")
    parser.add_argument(
        "--benchmarks",
        help="comma-separated: synthetic (the sim's bank) or jeebench,scibench,mascqa,labbench,omnimath",
    )
    parser.add_argument(
        "--limit", type=positive_int, help="problems per benchmark (stratified sample)"
    )
    parser.add_argument(
        "--stage",
        choices=STAGES,
        action="append",
        help="run only this stage (repeatable); pools are built once and reused by every stage",
    )
    parser.add_argument("--data-root", type=Path, help="benchmark folders (default: make data's)")
    parser.add_argument("--cache", type=Path, help="cache file (default: the profile's)")
    parser.add_argument(
        "--out",
        type=Path,
        help="replay rows (CSV; default build/runs/<profile>/dhd_rows.csv); proposals beside it",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.set_defaults(func=run_command)


def run_command(args: argparse.Namespace) -> int:
    from deliberation.inference.model_server import model_server
    from deliberation.params import load_profile

    profile = load_profile(args.profile)
    with model_server(profile):  # starts the profile's server if a call must be sent
        return _run(args, profile)


def _run(args: argparse.Namespace, loaded: Profile) -> int:
    from deliberation.datasets import DatasetNotFoundError
    from deliberation.experiments.dhd.run import run_profile, write_results
    from deliberation.inference import open_run
    from deliberation.inference.failures import EXIT_FAILED_CALLS

    profile, client = open_run(loaded, cache_file=args.cache, progress=not args.no_progress)
    benchmarks = args.benchmarks.split(",") if args.benchmarks else None
    try:
        results = run_profile(
            client,
            profile,
            stages=args.stage or STAGES,
            benchmarks=benchmarks,
            limit=args.limit,
            data_root=args.data_root,
        )
    except (KeyError, ValueError, DatasetNotFoundError) as error:
        print(f"deliberation run dhd: {error}")
        return 2
    from deliberation import paths

    out = args.out or paths.run_rows(profile.name, "dhd")
    rows, proposals = write_results(results, out, profile)
    for line in results.lines():
        print(line)
    if profile.synthetic:
        print("synthetic (sim backend): not evidence about language models")
    print(
        f"{len(results.replays)} replay rows -> {rows}; {len(results.proposals)} proposals -> {proposals}"
    )
    if len(results.replays):
        print("\naccuracy (%) by replay arm (failed rows are not counted)")
        print(results.headline().to_string(index=False))
    failed_pools = results.pool_counts.failed_pools if results.pool_counts else 0
    failures = client.failed.lines("deliberation run dhd")
    if failures or failed_pools:
        print("")
        for line in failures or [f"FAILED: {failed_pools} pools hold failed calls"]:
            print(line)
        return EXIT_FAILED_CALLS
    return 0
