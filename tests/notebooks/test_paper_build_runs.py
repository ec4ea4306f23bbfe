"""The paper build (deliberation.paper.build) executing tiny throwaway notebooks: skip what is
current, rerun what changed and say why, FORCE, a failure naming notebook and cell, outputs
missing after a run. (The build's logic without executing a notebook: tests/test_paper_build.py.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers.toy_paper import notebook, run, toy_project

from deliberation.paper import outputs


@pytest.fixture
def project(tmp_path, monkeypatch):
    return toy_project(tmp_path, monkeypatch)


def test_second_build_runs_nothing_and_changes_rerun_only_what_they_touch(project):
    first, _ = run(project)
    assert first.executed == ["00_a.ipynb", "01_b.ipynb"] and first.ok

    second, text = run(project)
    assert second.executed == [] and second.skipped == ["00_a.ipynb", "01_b.ipynb"]
    assert "skip 00_a.ipynb: current" in text and "skip 01_b.ipynb: current" in text

    project["data"].write_text("2\n")  # the data 01_b declares it reads
    third, text = run(project)
    assert third.executed == ["01_b.ipynb"]
    assert "run  01_b.ipynb: changed since its last run: data" in text

    table = Path(outputs.expected_outputs(project["readme"])[0].path("smoke"))
    table.unlink()  # an output the last run wrote is gone
    fourth, text = run(project)
    assert fourth.executed == ["00_a.ipynb"] and "outputs missing or changed" in text

    tables = {p: p.read_bytes() for p in table.parent.glob("*")}
    forced, text = run(project, force=True)
    assert forced.executed == ["00_a.ipynb", "01_b.ipynb"] and "FORCE=1" in text
    assert {p: p.read_bytes() for p in table.parent.glob("*")} == tables  # byte-identical


def test_a_failing_notebook_stops_the_build_naming_notebook_and_cell(project):
    notebook(
        project["folder"] / "01_b.ipynb",
        "x = 1",
        "# divide\nratio = x / 0\nprint(ratio)",
    )
    notebook(project["folder"] / "02_c.ipynb", "print('never')")
    (project["folder"] / "manifest.yaml").write_text(
        "notebooks:\n  00_a.ipynb: {}\n  01_b.ipynb: {}\n  02_c.ipynb: {}\n"
    )
    result, text = run(project)
    failure = result.failed
    assert failure is not None and not result.ok
    assert failure.notebook == "01_b.ipynb"
    assert failure.cell_line == "ratio = x / 0"
    assert "ZeroDivisionError" in failure.error
    assert "01_b.ipynb failed in the cell starting `ratio = x / 0`" in text
    executed = Path(project["root"] / "build" / "executed" / "smoke")
    kept = json.loads((executed / "FAILED-01_b.ipynb").read_text())
    assert any("ZeroDivisionError" in json.dumps(c.get("outputs", [])) for c in kept["cells"])
    assert not (executed / "01_b.ipynb").exists()
    assert result.executed == ["00_a.ipynb"]  # 02_c never ran
    assert not (executed / "02_c.ipynb").exists()


def test_missing_outputs_are_listed_after_the_run(project):
    readme = project["readme"]
    readme.write_text(
        readme.read_text().replace(
            outputs.END, "| 00_a | `figures/{profile}/never_made.png` |\n" + outputs.END
        )
    )
    result, text = run(project, notebooks=["00"])
    assert [p.name for p in result.missing] == ["never_made.png"] and not result.ok
    assert "MISSING: 1 file(s)" in text and "figures/smoke/never_made.png" in text
    assert "1 listed output(s) MISSING" in text
