"""Committed notebooks carry no outputs and no execution counts: results live in figures/ and
tables/ (written by the library), and a notebook diff shows only code and narrative. Paper 1's
notebooks open with a `parameters` cell that papermill can override. (Read, never executed:
executing notebooks is the notebook lane's job, tests/notebooks/.)"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from deliberation.io.paths import repo_root

NOTEBOOKS = sorted((repo_root() / "notebooks").glob("*.ipynb"))
HOW_TO_CLEAN = "clear them: jupyter nbconvert --clear-output --inplace notebooks/*.ipynb"


def executed_traces(path: Path) -> list[str]:
    """Each code cell of the notebook that holds outputs or an execution count."""
    notebook = nbformat.read(path, as_version=4)
    problems = []
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        if cell.get("outputs"):
            problems.append(f"{path.name}: cell {index} has {len(cell.outputs)} outputs")
        if cell.get("execution_count") is not None:
            problems.append(f"{path.name}: cell {index} has execution count {cell.execution_count}")
    return problems


def test_there_are_notebooks_to_check() -> None:
    assert NOTEBOOKS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_committed_notebook_has_no_outputs_or_execution_counts(path) -> None:
    problems = executed_traces(path)
    assert not problems, "; ".join(problems) + f" ({HOW_TO_CLEAN})"


def test_the_check_finds_an_executed_cell(tmp_path) -> None:
    notebook = nbformat.v4.new_notebook()
    clean = nbformat.v4.new_code_cell("1 + 1")
    counted = nbformat.v4.new_code_cell("2 + 2", execution_count=3)
    with_output = nbformat.v4.new_code_cell("print(5)")
    with_output.outputs = [nbformat.v4.new_output("stream", text="5\n")]
    notebook.cells = [nbformat.v4.new_markdown_cell("# title"), clean, counted, with_output]
    path = tmp_path / "dirty.ipynb"
    nbformat.write(notebook, path)
    assert executed_traces(path) == [
        "dirty.ipynb: cell 2 has execution count 3",
        "dirty.ipynb: cell 3 has 1 outputs",
    ]


PAPER1 = (
    "02_hiddenbench.ipynb",
    "03_crossprofile_h1_h3.ipynb",
    "04_tag_ablation.ipynb",
    "05_evidence_balance.ipynb",
)


@pytest.mark.parametrize("name", PAPER1)
def test_notebook_parameters_cell_holds_profile_budgets_resamples_and_seed(name):
    notebook = nbformat.read(repo_root() / "notebooks" / name, as_version=4)
    code = [c for c in notebook.cells if c.cell_type == "code"]
    assert "parameters" in code[0].metadata.get("tags", [])
    for key in ("profile", "budgets", "n_resamples", "seed"):
        assert f"\n{key} = " in f"\n{code[0].source}"
