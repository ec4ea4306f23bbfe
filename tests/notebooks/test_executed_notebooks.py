"""The executed notebooks a reader browses (notebooks/executed/<profile>/, written by `make
paper PUBLISH=1`), re-executed by nbval and compared with their committed outputs
(deliberation.paper.executed), as CI runs them: a published real model from its published
answers, sending nothing, its rebuilt tables compared with the committed ones byte for byte.
And the mechanism itself on a throwaway paper: published, checked, and a committed output the
code no longer makes fails, naming the cell."""

from __future__ import annotations

from collections import Counter

import nbformat
import pytest
from helpers.toy_paper import WRITE_TABLE, notebook, run, toy_project

from deliberation.paper.executed import (
    check_executed,
    publish_build,
    published_dir,
    published_profiles,
)
from deliberation.paper.outputs import expected_outputs

PUBLISHED = published_profiles()


def _figures_by_notebook() -> Counter:
    """How many figures each notebook writes, as figures/README.md lists them."""
    return Counter(
        o.notebook for o in expected_outputs() if o.pattern.startswith("figures/") and
        o.pattern.endswith(".png") and o.expected()
    )  # fmt: skip


@pytest.mark.skipif(not PUBLISHED, reason="no executed notebooks are published yet")
@pytest.mark.timeout(1800)  # the sim's whole paper: ~3 min on an idle machine, more when shared
@pytest.mark.parametrize("profile", PUBLISHED)
def test_the_committed_executed_notebooks_are_what_the_code_makes_now(profile) -> None:
    lines: list[str] = []
    report = check_executed(profile, out=lines.append)
    print("\n".join(report.lines()))  # -s / on failure: image counts, time, tables
    assert report.ok, "\n".join(lines[-80:] + report.lines())
    # Every figure a notebook writes is shown inline in its committed copy.
    figures = _figures_by_notebook()
    for name, images in report.images.items():
        assert images >= figures[name.removesuffix(".ipynb")], (name, images)
    # (a profile may publish some notebooks only: the Qwen profile publishes 03-05)
    shown = [name.removesuffix(".ipynb") for name in report.images]
    assert sum(report.images.values()) >= sum(figures[name] for name in shown) > 0


@pytest.fixture
def project(tmp_path, monkeypatch):
    """The toy paper, its second notebook printing the value it reads and showing a figure
    only while the value is 1."""
    project = toy_project(tmp_path, monkeypatch)
    monkeypatch.setenv("DELIBERATION_OUTPUT_ROOT", str(tmp_path / "out"))
    notebook(
        project["folder"] / "01_b.ipynb",
        f"value = int(open({str(project['data'])!r}).read())",
        'print(f"value = {value}")',
        WRITE_TABLE.format(value="value", table="b", stem="01_b"),
        "from deliberation.publish.plots import Figure\n"
        "fig = Figure()\nfig.subplots().plot([0, value])\nfig if value == 1 else None",
    )
    return project


def test_a_publishing_build_writes_checkable_notebooks_and_nbval_names_stale_cells(
    project,
) -> None:
    result, text = run(project)
    assert result.ok, text
    lines: list[str] = []
    publish_build("smoke", folder=project["folder"], out=lines.append)  # PUBLISH=1's step
    text = "\n".join(lines)
    folder = published_dir("smoke", project["folder"])
    assert sorted(p.name for p in folder.glob("*.ipynb")) == ["00_a.ipynb", "01_b.ipynb"]
    assert "01_b.ipynb (1 figure inline)" in text
    published = nbformat.read(folder / "01_b.ipynb", as_version=4)
    assert "profile `smoke`" in published.cells[0].source  # no title cell: the note first
    assert not any("papermill" in c.metadata for c in published.cells)

    report = check_executed("smoke", root=project["root"], out=lambda line: None)
    assert report.ok, "\n".join(report.output)
    assert report.images == {"00_a.ipynb": 0, "01_b.ipynb": 1}

    # The data change, the committed copy does not: nbval fails naming notebook and cells,
    # the printed value and the figure that is no longer shown (nbval skips image bytes, but
    # a figure's text form is compared, so a vanished figure fails too).
    project["data"].write_text("2\n")
    stale = check_executed("smoke", root=project["root"], out=lambda line: None)
    assert not stale.ok
    failed = stale.failed_cells()
    assert len(failed) == 2 and all("01_b.ipynb::Cell " in cell for cell in failed), stale.output
    assert "value = 1" in "\n".join(stale.output) and "value = 2" in "\n".join(stale.output)
