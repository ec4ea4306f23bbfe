"""The toy experiment's record, options, run and summary: a researcher's whole experiment."""

from __future__ import annotations

import argparse
from typing import Any

import pandas as pd
from pydantic import Field

from deliberation.experiments.record import Experiment, NotebookCall
from deliberation.inference.batch import run_requests
from deliberation.inference.generation import StageSettings, stage_request
from deliberation.io.atomic import atomic_path
from deliberation.profiles.profile import Strict
from toy_experiment import sim

STAGE = StageSettings("toy.double", max_tokens=8)
PROMPT = "What is twice {n}? Reply with the number only."


class ToyOptions(Strict):
    """The profile's ``experiments.toy`` section."""

    items: int = Field(5, gt=0, description="numbers to double")


def add_arguments(parser: argparse.ArgumentParser, name: str) -> None:
    parser.add_argument("--items", type=int, help="numbers to double (default: the profile's)")


def run(profile: Any, client: Any, *, items: int | None = None, progress: bool = True) -> Any:
    """One row per number: the model's answer and whether it is twice the number."""
    numbers = list(range(1, (items or profile.experiments.toy.items) + 1))
    requests = [stage_request(profile, STAGE, PROMPT.format(n=n)) for n in numbers]
    _, results = run_requests(client, requests, desc="toy")
    answers = pd.to_numeric(results["text"].where(results["error"].isna()), errors="coerce")
    return pd.DataFrame(
        {
            "n": numbers,
            "answer": answers.astype("Int64"),
            "correct": (answers == [2 * n for n in numbers]).to_numpy(),
            "failed": results["error"].notna().to_numpy(),
        }
    )


def report(rows: pd.DataFrame, profile: Any, args: argparse.Namespace) -> str | None:
    with atomic_path(args.out) as tmp:
        rows.to_csv(tmp, index=False)
    print(f"{len(rows)} rows -> {args.out}; {int(rows['correct'].sum())} correct")
    failed = int(rows["failed"].sum())
    return f"FAILED: {failed} rows failed" if failed else None


EXPERIMENT = Experiment(
    name="toy",
    summary="double numbers (the toy experiment of tests/toy_experiment)",
    description="Asks the model to double each number and scores the replies.",
    options=ToyOptions,
    runner=run,
    arguments=add_arguments,
    report=report,
    stages=("toy.",),
    sim_behaviours=(sim,),
    smoke={"items": 2},
    notebooks={"90_toy.ipynb": NotebookCall(run)},
)
