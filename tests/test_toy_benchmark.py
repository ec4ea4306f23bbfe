"""docs/extending.md followed to the letter for a benchmark: a toy memory benchmark (the folder
tests/toy_benchmark/ and the one registration line below) runs through ``deliberation run``,
``deliberation plan``, the sim (its own reader) and the smoke profile, with no other file edited
(its notebook runs under papermill in tests/notebooks/test_toy_benchmark_notebook.py)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from deliberation import benchmarks
from deliberation.cli import build_parser, main
from deliberation.exit_codes import OK
from deliberation.experiments.memory.runs import profile_grid
from deliberation.paper.manifest import load_manifest
from deliberation.paper.plan import plan_calls
from deliberation.profiles.profile import load_profile

TOY = Path(__file__).parent / "toy_benchmark"


@pytest.fixture
def toybench(monkeypatch, tmp_path):
    """The toy registered as docs/extending.md says (undone after the test), own cache."""
    monkeypatch.setattr(benchmarks, "_REGISTRY", dict(benchmarks._REGISTRY))
    monkeypatch.setenv("DELIBERATION_CACHE_DIR", str(tmp_path / "cache"))
    from toy_benchmark.benchmark import TOYBENCH

    benchmarks.register_memory_benchmark(TOYBENCH)


def test_run_answers_with_its_sim_reader_and_scores_its_gold(toybench, tmp_path, capsys):
    """With every statement kept ("all"), the sim reads +1 for the right option and -1 for the
    wrong one: a lead of 2 against the choice noise, so most answers are right; with nothing
    kept ("empty") the sim can only guess."""
    out = tmp_path / "rows.csv"
    status = main(
        ["run", "toybench", "--profile", "sim", "--policies", "all,empty", "--out", str(out)]
    )
    assert status == OK
    rows = pd.read_csv(out)
    assert set(rows["task"]) == {"toy-1", "toy-2"} and set(rows["policy"]) == {"all", "empty"}
    assert rows["valid"].all()
    kept = rows[rows["policy"] == "all"]["kept_facts"]
    assert {";".join(sorted(k.split(";"))) for k in kept} == {"f1;f2;f3"}
    assert "rows -> " in capsys.readouterr().out


def test_its_sim_stages_are_registered_by_its_name(toybench):
    from deliberation.inference.sim_registry import find_behaviour

    load_profile("sim")  # reads the records, as every run does
    assert find_behaviour("toybench.decision") is not None
    assert find_behaviour("natural.toybench.vote") is not None


def test_run_help_lists_it_and_the_smoke_profile_takes_its_smoke_size(toybench):
    assert "toybench" in build_parser()._subparsers._group_actions[0].choices["run"].format_help()
    assert load_profile("smoke").experiments.toybench.limit == 1
    assert load_profile("sim").experiments.toybench.limit is None


def test_the_plan_counts_its_notebook_calls(toybench):
    entries = load_manifest(TOY / "notebooks")
    assert entries[0].kwargs == {"benchmark": "toybench", "tags": ["keep"], "item_limit": 0}
    table = plan_calls("smoke", entries).table()
    grid, _ = profile_grid("toybench", load_profile("smoke"))
    cells = [c for c in grid.cells() if c.item_limit is None]  # the notebook: item_limit 0
    assert table["stage"].tolist() == ["toybench.decision"]
    assert table["requests"].tolist() == [len(cells)]  # 1 task (smoke limit), tags keep
    assert 0 < table["to_send"].iloc[0] <= len(cells)  # identical prompts are sent once
