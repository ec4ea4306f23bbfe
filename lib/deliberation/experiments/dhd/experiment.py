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
from deliberation.experiments.grid_needs import GridNeed
from deliberation.experiments.record import Experiment, NotebookCall

if TYPE_CHECKING:
    from deliberation.profiles.profile import Profile


def grid_needs() -> tuple[GridNeed, ...]:
    """What notebooks 07-08 need of ``experiments.dhd`` (see experiments.grid_needs)."""
    from deliberation.experiments.dhd.selection import MIN_BLOCKS

    return (
        GridNeed(
            "08_dhd_masking_selection.ipynb",
            "blocks",
            "cross-fitted selection holds out one repeated-replay block and fits on the others",
            at_least=MIN_BLOCKS,
        ),
    )


def add_arguments(parser: argparse.ArgumentParser, name: str) -> None:
    from deliberation.cli import add_list, positive_int

    add_list(
        parser,
        "--benchmarks",
        help="synthetic (the sim's bank) or jeebench scibench mascqa labbench omnimath"
        " (commas or spaces)",
    )
    parser.add_argument(
        "--limit", type=positive_int, help="problems per benchmark (stratified sample)"
    )
    add_list(
        parser,
        "--stage",
        "--stages",
        dest="stages",
        allowed=STAGES,
        help=f"run only these stages ({' '.join(STAGES)}; commas or spaces, or repeat the flag);"
        " pools are built once and reused by every stage",
    )
    parser.add_argument("--data-root", type=Path, help="benchmark folders (default: make data's)")


def run(
    profile: Profile,
    client: Any,
    *,
    benchmarks: Sequence[str] | None = None,
    limit: int | None = None,
    stages: Sequence[str] | None = None,
    data_root: Path | None = None,
    progress: bool = True,
) -> Any:
    """The profile's DHD run (``benchmarks``, ``limit`` and ``stages`` override it); a missing
    benchmark folder is bad input, reported as such."""
    try:
        return run_profile(
            profile,
            client,
            stages=stages or STAGES,
            benchmarks=list(benchmarks) if benchmarks else None,
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
    starter={
        "benchmarks": ["synthetic"],
        "problems": 1,
        "repeated_problems": 1,
        "blocks": 1,
        "n_resamples": 2000,
        "n_permutations": 2000,
        "masking_cases": 1,
        "masking_replicates": 1,
    },
    grid_needs=grid_needs,
    notebooks={
        "07_dhd_replay.ipynb": NotebookCall(run_profile),
        "08_dhd_masking_selection.ipynb": NotebookCall(run_profile_masking),
    },
)
