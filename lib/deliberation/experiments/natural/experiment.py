"""The natural-discussion experiment's record (``deliberation run natural``, notebook 06), its
flags and its summary (both row files, counts, decision and vote tables)."""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deliberation.benchmarks import memory_benchmarks
from deliberation.experiments.memory.grid import parse_list
from deliberation.experiments.memory.runs import write_rows
from deliberation.experiments.memory.sim.mechanism import order_free_request
from deliberation.experiments.memory.summary import (
    command_rows,
    format_summary,
    summary_table,
    vote_summary,
    write_command_rows,
)
from deliberation.experiments.natural import sim
from deliberation.experiments.natural.options import NaturalOptions
from deliberation.experiments.natural.runs import run_from_profile, run_notebook
from deliberation.experiments.record import Experiment, NotebookCall
from deliberation.inference.sim_registry import StageBehaviour

if TYPE_CHECKING:
    from deliberation.profiles.profile import Profile

# Its sim on each benchmark: natural.<benchmark>.vote, .round, ... (order-free seeds).
_STEPS = {
    "vote": sim.natural_vote,
    "round": sim.natural_turn,
    "decision": sim.natural_decision,
    "relevance": sim.natural_relevance,
    "balance": sim.natural_balance,
    "summary": sim.natural_summary,
}


def natural_experiment() -> Experiment:
    """The record with the sim stages of every registered memory benchmark."""
    stages = {
        f"natural.{benchmark}.{step}": StageBehaviour(behaviour, order_free_request)
        for benchmark in memory_benchmarks()
        for step, behaviour in _STEPS.items()
    }
    return dataclasses.replace(EXPERIMENT, sim_stages=stages)


def add_arguments(parser: argparse.ArgumentParser, name: str) -> None:
    from deliberation.cli import add_list, positive_int

    add_list(
        parser,
        "--benchmarks",
        help=f"{' '.join(memory_benchmarks())} (commas or spaces; default: the profile's)",
    )
    parser.add_argument("--limit", type=positive_int, help="only the first N templates or tasks")


def _add_outputs(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--disclosure-out",
        type=Path,
        help="disclosure rows (default: <out stem>_disclosure.csv beside --out)",
    )


def run(
    profile: Profile,
    client: Any,
    *,
    benchmarks: str | Sequence[str] | None = None,
    limit: int | None = None,
    progress: bool = True,
) -> Any:
    """Every benchmark of the profile's ``experiments.natural`` (or the ``benchmarks`` given)."""
    return run_from_profile(
        profile, benchmarks=parse_list(benchmarks), limit=limit, client=client, progress=progress
    )


def report(result: Any, profile: Profile, args: argparse.Namespace) -> str | None:
    """Write both row files, print the counts, the decision and the vote tables."""
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
    return None  # a failed call is reported by the client's failure lines


EXPERIMENT = Experiment(
    name="natural",
    summary="free two-round discussions, votes, disclosure and memory on their transcripts",
    description=(
        "Natural discussions (initial vote, two speaking rounds, final vote) under the plain "
        "and evidence-first prompts, then decisions reading the full transcript, every fact "
        "or a memory policy's notes. Settings come from the profile's experiments.natural "
        "section. Every request goes through the response cache; identical prompts are sent "
        "once. Writes one row per (task, agent, vote stage) and per decision, and the "
        "disclosure label of every fact beside it."
    ),
    options=NaturalOptions,
    runner=run,
    arguments=add_arguments,
    report=report,
    outputs=_add_outputs,
    stages=("natural.",),
    sim_behaviours=(sim,),
    smoke={"limit": 1, "n_resamples": 200},  # 1 template (8 tasks) and 1 HiddenBench task
    # Notebook 06 analyses any policies (its contrasts skip pairs the grid lacks): no needs.
    starter={
        "benchmarks": ["crossprofile"],
        "variants": ["plain"],
        "limit": 1,
        "rounds": 1,
        "policies": ["R1"],
        "n_resamples": 2000,
    },
    notebooks={"06_natural_discussion.ipynb": NotebookCall(run_notebook)},
)
