"""The toys' notebooks (tests/toy_experiment/notebooks/90_toy.ipynb,
tests/toy_benchmark/notebooks/91_toybench.ipynb) executed by papermill, as `make paper` executes
the paper's: each one's registration line is all it needs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from deliberation import experiments

TESTS = Path(__file__).parents[1]


@pytest.mark.parametrize(
    ("folder", "notebook", "printed"),
    [
        ("toy_experiment", "90_toy.ipynb", "2 of 2 correct"),  # its smoke size: 2 numbers
        ("toy_benchmark", "91_toybench.ipynb", " valid"),
    ],
)
def test_its_notebook_runs_under_papermill(tmp_path, monkeypatch, folder, notebook, printed):
    papermill = pytest.importorskip("papermill")
    monkeypatch.setenv("DELIBERATION_CACHE_DIR", str(tmp_path / "cache"))
    lib = Path(experiments.__file__).parents[2]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(lib), str(TESTS)]))
    out = tmp_path / notebook
    papermill.execute_notebook(
        str(TESTS / folder / "notebooks" / notebook),
        str(out),
        parameters={"profile_name": "smoke"},
        kernel_name="python3",
        progress_bar=False,
    )
    assert printed in out.read_text()
