"""The natural-discussion experiment's record (``deliberation run natural``, notebook 06), its
flags and its summary (both row files, counts, decision and vote tables)."""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deliberation.experiments.record import Experiment, NotebookCall
from deliberation.inference.sim_registry import BehaviourPath

if TYPE_CHECKING:
    from deliberation.profiles.profile import Profile

_HERE = "deliberation.experiments.natural.experiment"

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
    options="deliberation.experiments.natural.options:NaturalOptions",
    runner=f"{_HERE}:run",
    arguments=f"{_HERE}:add_arguments",
    report=f"{_HERE}:report",
    outputs=f"{_HERE}:add_outputs",
    stages=("natural.",),
    sim_behaviours=("deliberation.experiments.natural.sim",),
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
    notebooks={
        "06_natural_discussion.ipynb": NotebookCall(
            "deliberation.experiments.natural.runs:run_notebook"
        )
    },
)


_SIM = "deliberation.experiments.natural.sim"
_STEPS = {  # step of natural.<benchmark>.<step> -> its behaviour in the sim module
    "vote": "natural_vote",
    "round": "natural_turn",
    "decision": "natural_decision",
    "relevance": "natural_relevance",
    "balance": "natural_balance",
    "summary": "natural_summary",
}


def natural_stages(benchmark: str) -> dict[str, BehaviourPath]:
    """Its sim on ``benchmark``: natural.<benchmark>.vote, .round, ... (order-free seeds)."""
    view = "deliberation.experiments.memory.sim.mechanism:order_free_request"
    return {
        f"natural.{benchmark}.{step}": BehaviourPath(f"{_SIM}:{behaviour}", view)
        for step, behaviour in _STEPS.items()
    }


def natural_experiment() -> Experiment:
    """The record with the sim stages of every registered memory benchmark."""
    from deliberation.benchmarks import memory_benchmarks

    stages = {k: v for name in memory_benchmarks() for k, v in natural_stages(name).items()}
    return dataclasses.replace(EXPERIMENT, sim_stages=stages)


def add_arguments(parser: argparse.ArgumentParser, name: str) -> None:
    from deliberation.benchmarks import memory_benchmarks
    from deliberation.cli import add_list, positive_int

    add_list(
        parser,
        "--benchmarks",
        help=f"{' '.join(memory_benchmarks())} (commas or spaces; default: the profile's)",
    )
    parser.add_argument("--limit", type=positive_int, help="only the first N templates or tasks")


def add_outputs(parser: argparse.ArgumentParser) -> None:
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
    from deliberation.experiments.memory.grid import parse_list
    from deliberation.experiments.natural.runs import run_from_profile

    return run_from_profile(
        profile, benchmarks=parse_list(benchmarks), limit=limit, client=client, progress=progress
    )


def report(result: Any, profile: Profile, args: argparse.Namespace) -> str | None:
    """Write both row files, print the counts, the decision and the vote tables."""
    from deliberation.experiments.memory.runs import write_rows
    from deliberation.experiments.memory.summary import (
        command_rows,
        format_summary,
        summary_table,
        vote_summary,
        write_command_rows,
    )

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
