"""The DHD experiment's record (``deliberation run dhd``, notebooks 07-08), its flags and its
summary (replay and proposal rows, counts, accuracy by replay arm)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deliberation.benchmarks.problems import DatasetNotFoundError
from deliberation.exit_codes import BAD_INPUT, CommandError
from deliberation.experiments.dhd import sim
from deliberation.experiments.dhd.masking import run_profile_masking
from deliberation.experiments.dhd.options import DHDOptions
from deliberation.experiments.dhd.run import STAGES, run_profile, write_results
from deliberation.experiments.record import Experiment, NotebookCall

if TYPE_CHECKING:
    from deliberation.profiles.profile import Profile


def add_arguments(parser: argparse.ArgumentParser, name: str) -> None:
    from deliberation.cli import positive_int

    parser.add_argument(
        "--benchmarks",
        help="comma-separated: synthetic (the sim's bank) or jeebench,scibench,mascqa,labbench,omnimath",
    )
    parser.add_argument(
        "--limit", type=positive_int, help="problems per benchmark (stratified sample)"
    )
    parser.add_argument(
        "--stage",
        dest="stages",
        choices=STAGES,
        action="append",
        help="run only this stage (repeatable); pools are built once and reused by every stage",
    )
    parser.add_argument("--data-root", type=Path, help="benchmark folders (default: make data's)")


def run(
    profile: Profile,
    client: Any,
    *,
    benchmarks: str | None = None,
    limit: int | None = None,
    stages: Sequence[str] | None = None,
    data_root: Path | None = None,
    progress: bool = True,
) -> Any:
    """The profile's DHD run (the comma-separated ``benchmarks``, ``limit`` and ``stages``
    override it); a missing benchmark folder is bad input, reported as such."""
    try:
        return run_profile(
            profile,
            client,
            stages=stages or STAGES,
            benchmarks=benchmarks.split(",") if benchmarks else None,
            limit=limit,
            data_root=data_root,
        )
    except DatasetNotFoundError as error:
        raise CommandError(str(error), BAD_INPUT) from error


def report(results: Any, profile: Profile, args: argparse.Namespace) -> str | None:
    """Write the replay and proposal rows, print the counts and the accuracy by replay arm."""
    rows, proposals = write_results(results, args.out, profile)
    for line in results.lines():
        print(line)
    if profile.synthetic:
        print("synthetic (sim backend): not evidence about language models")
    print(
        f"{len(results.replays)} replay rows -> {rows};"
        f" {len(results.proposals)} proposals -> {proposals}"
    )
    if len(results.replays):
        print("\naccuracy (%) by replay arm (failed rows are not counted)")
        print(results.headline().to_string(index=False))
    failed_pools = results.pool_counts.failed_pools if results.pool_counts else 0
    return f"FAILED: {failed_pools} pools hold failed calls" if failed_pools else None


EXPERIMENT = Experiment(
    name="dhd",
    summary="Diverse Hypothesis Deliberation: pools, replays, repeated replays; one row per call",
    description=(
        "Recruit five roles and draw five hypothesizer replies per problem (stored once as "
        "the pool), then replay the integrator on views of each pool. The problems and sizes "
        "come from the profile's experiments.dhd section; the options below override them. "
        "Every request goes through the response cache; identical prompts are sent once."
    ),
    options=DHDOptions,
    runner=run,
    arguments=add_arguments,
    report=report,
    out_help="replay rows (CSV; default build/runs/<profile>/dhd_rows.csv); proposals beside it",
    stages=("dhd.",),
    sim_behaviours=(sim,),
    smoke={
        "benchmarks": ["synthetic"],
        "problems": 12,
        "repeated_problems": 6,
        "blocks": 3,
        "n_resamples": 200,
        "n_permutations": 200,
        "masking_cases": 2,
        "masking_replicates": 2,
    },
    notebooks={
        "07_dhd_replay.ipynb": NotebookCall(run_profile),
        "08_dhd_masking_selection.ipynb": NotebookCall(run_profile_masking),
    },
)
