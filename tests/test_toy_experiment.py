"""docs/extending.md followed to the letter: a toy experiment (the folder tests/toy_experiment/
and the one registration line below) runs through ``deliberation run``, ``deliberation plan``,
the smoke profile (and, in tests/notebooks/, a notebook executed by papermill), with no other file edited."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from deliberation import experiments
from deliberation.cli import build_parser, main
from deliberation.exit_codes import CALLS_FAILED, OK
from deliberation.io import paths
from deliberation.paper.manifest import load_manifest
from deliberation.paper.plan import plan_calls
from deliberation.profiles.profile import ProfileError, load_profile

TOY = Path(__file__).parent / "toy_experiment"


@pytest.fixture
def toy(monkeypatch, tmp_path):
    """The toy registered as docs/extending.md says (undone after the test), own cache."""
    monkeypatch.setattr(experiments, "REGISTRY", list(experiments.REGISTRY))
    monkeypatch.setenv("DELIBERATION_CACHE_DIR", str(tmp_path / "cache"))
    from toy_experiment.experiment import EXPERIMENT

    experiments.register_experiment(EXPERIMENT)  # the one line


def test_run_sends_its_calls_writes_its_rows_and_prints_its_summary(toy, tmp_path, capsys):
    out = tmp_path / "rows.csv"
    assert main(["run", "toy", "--profile", "sim", "--items", "3", "--out", str(out)]) == OK
    rows = pd.read_csv(out)
    assert list(rows["answer"]) == [2, 4, 6] and rows["correct"].all()
    assert "3 rows -> " in capsys.readouterr().out
    assert main(["run", "toy", "--out", str(out)]) == OK  # the profile's 5 items
    assert len(pd.read_csv(out)) == 5


def test_a_failed_call_ends_the_run_with_calls_failed(toy, tmp_path, capsys, monkeypatch):
    from deliberation.inference import sim_registry

    monkeypatch.setitem(sim_registry._BEHAVIOURS, "toy.double", lambda context: 1 / 0)
    status = main(["run", "toy", "--items", "2", "--out", str(tmp_path / "rows.csv")])
    assert status == CALLS_FAILED
    assert "FAILED" in capsys.readouterr().out


def test_bad_options_are_bad_input_naming_the_field(toy, tmp_path):
    profile = tmp_path / "bad.yaml"
    shutil.copy(paths.repo_root() / "params" / "sim.yaml", tmp_path / "sim.yaml")
    profile.write_text("extends: sim\nexperiments:\n  toy: {items: 0}\n")
    with pytest.raises(ProfileError, match=r"experiments.toy.items"):
        load_profile(profile)


def test_run_help_lists_it_and_the_sections_come_from_its_record(toy):
    assert "toy" in build_parser()._subparsers._group_actions[0].choices["run"].format_help()
    assert load_profile("sim").experiments.toy.items == 5
    assert load_profile("smoke").experiments.toy.items == 2  # its record's smoke size


def test_the_plan_counts_its_notebook_calls(toy):
    entries = load_manifest(TOY / "notebooks")
    assert entries[0].experiment == "toy_experiment.experiment:run"  # from the record
    table = plan_calls("smoke", entries).table()
    assert table[["stage", "requests", "to_send"]].values.tolist() == [["toy.double", 2, 2]]
