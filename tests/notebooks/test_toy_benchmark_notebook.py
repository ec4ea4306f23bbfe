"""The toy benchmark's notebook (tests/toy_benchmark/notebooks/91_toybench.ipynb) executed by
papermill, as `make paper` executes the paper's: its one registration line is all it needs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from deliberation import benchmarks

TOY = Path(__file__).parents[1] / "toy_benchmark"


def test_its_notebook_runs_under_papermill(tmp_path, monkeypatch):
    papermill = pytest.importorskip("papermill")
    monkeypatch.setenv("DELIBERATION_CACHE_DIR", str(tmp_path / "cache"))
    lib = Path(benchmarks.__file__).parents[2]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(lib), str(TOY.parent)]))
    out = tmp_path / "91_toybench.ipynb"
    papermill.execute_notebook(
        str(TOY / "notebooks" / "91_toybench.ipynb"),
        str(out),
        parameters={"profile_name": "smoke"},
        kernel_name="python3",
        progress_bar=False,
    )
    assert " valid" in out.read_text()
