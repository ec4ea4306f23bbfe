"""The toy experiment's notebook (tests/toy_experiment/notebooks/90_toy.ipynb) executed by
papermill, as `make paper` executes the paper's: its one registration line is all it needs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from deliberation import experiments

TOY = Path(__file__).parents[1] / "toy_experiment"


def test_its_notebook_runs_under_papermill(tmp_path, monkeypatch):
    papermill = pytest.importorskip("papermill")
    monkeypatch.setenv("DELIBERATION_CACHE_DIR", str(tmp_path / "cache"))
    lib = Path(experiments.__file__).parents[2]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(lib), str(TOY.parent)]))
    out = tmp_path / "90_toy.ipynb"
    papermill.execute_notebook(
        str(TOY / "notebooks" / "90_toy.ipynb"),
        str(out),
        parameters={"profile_name": "smoke"},
        kernel_name="python3",
        progress_bar=False,
    )
    assert "2 of 2 correct" in out.read_text()
