"""Publishing executed notebooks (deliberation.paper.executed) without executing any: what is
left out, the note under the title, refused data dumps, and the nbval command line."""

from __future__ import annotations

import base64

import nbformat
import pytest

from deliberation.paper import executed
from deliberation.profiles.profile import load_profile


def _executed_notebook() -> nbformat.NotebookNode:
    """What papermill writes: timing metadata on the notebook and each cell, paths, a version."""
    nb = nbformat.v4.new_notebook()
    title = nbformat.v4.new_markdown_cell("# 03 · Title\n\nWhat it shows.")
    code = nbformat.v4.new_code_cell("print(1)", execution_count=1)
    code.outputs = [nbformat.v4.new_output("stream", text="1\n")]
    code.metadata["papermill"] = {"duration": 1.5, "start_time": "2026-12-04T10:00:00"}
    code.metadata["execution"] = {"iopub.status.busy": "2026-12-04T10:00:00"}
    figure = nbformat.v4.new_code_cell("shown", execution_count=2)
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(200_000)).decode()
    figure.outputs = [nbformat.v4.new_output("display_data", data={"image/png": png})]
    injected = nbformat.v4.new_code_cell('profile = "sim"')
    injected.metadata["tags"] = ["injected-parameters"]
    nb.cells = [title, injected, code, figure]
    nb.metadata["papermill"] = {
        "parameters": {"profile": "sim"},
        "input_path": "/home/someone/notebooks/03_x.ipynb",
        "start_time": "2026-12-04T10:00:00",
        "duration": 12.0,
        "version": "2.7.0",
    }
    nb.metadata["language_info"] = {"name": "python", "version": "3.11.9"}
    return nb


def test_a_published_notebook_keeps_outputs_drops_what_varies_and_says_its_profile() -> None:
    nb = _executed_notebook()
    profile = load_profile("sim")
    executed.clean_executed(nb, profile, "03_x.ipynb")
    assert nb.metadata["papermill"] == {"parameters": {"profile": "sim"}}
    assert "version" not in nb.metadata["language_info"]
    assert all("papermill" not in c.metadata and "execution" not in c.metadata for c in nb.cells)
    # The title first (what it shows), then the note (which profile, how to run another).
    assert nb.cells[0].source.startswith("# 03 · Title")
    note = nb.cells[1].source
    assert "profile `sim`" in note and "synthetic" in note
    assert "make paper PROFILE=<profile> ONLY=03" in note and "](../../03_x.ipynb)" in note
    assert nb.cells[2]["id"] == "injected-parameters"  # papermill's random id, made stable
    assert nb.cells[4].outputs and executed.image_outputs(nb) == 1
    executed.clean_executed(nb, profile, "03_x.ipynb")  # republished: one note, not two
    assert sum(executed.BANNER_TAG in c.metadata.get("tags", []) for c in nb.cells) == 1


def test_a_real_models_note_names_the_model_not_synthetic() -> None:
    note = executed.banner(load_profile("smollm2-135m-llamacpp"), "07_dhd_replay.ipynb")
    assert "SmolLM2-135M-Instruct" in note and "synthetic" not in note and "ONLY=07" in note


def test_an_output_that_dumps_data_is_refused_naming_notebook_and_cell(tmp_path) -> None:
    nb = _executed_notebook()
    assert executed.oversized_outputs(nb, "03_x.ipynb") == []  # a 200 kB figure is fine
    dump = nbformat.v4.new_code_cell("rows", execution_count=3)
    dump.outputs = [
        nbformat.v4.new_output(
            "execute_result", data={"text/plain": "x," * 40_000}, execution_count=3
        )
    ]
    nb.cells.append(dump)
    problems = executed.oversized_outputs(nb, "03_x.ipynb")
    assert len(problems) == 1 and problems[0].startswith("03_x.ipynb: cell 4 has an")
    path = tmp_path / "build" / "03_x.ipynb"
    path.parent.mkdir()
    nbformat.write(nb, path)
    with pytest.raises(executed.PublishError, match="cell 4"):
        executed.publish_executed(path, load_profile("sim"), tmp_path / "notebooks")
    assert not (tmp_path / "notebooks").exists()  # nothing half-published


def test_publishing_twice_leaves_an_unchanged_notebook_alone(tmp_path) -> None:
    path = tmp_path / "03_x.ipynb"
    nbformat.write(_executed_notebook(), path)
    target = executed.publish_executed(path, load_profile("sim"), tmp_path / "notebooks")
    assert target == tmp_path / "notebooks" / "executed" / "sim" / "03_x.ipynb"
    first = target.stat().st_mtime_ns, target.read_bytes()
    again = executed.publish_executed(path, load_profile("sim"), tmp_path / "notebooks")
    assert (again.stat().st_mtime_ns, again.read_bytes()) == first
    assert executed.published_profiles(tmp_path) == ["sim"]


def test_the_nbval_command_compares_every_output_with_the_sanitizer(tmp_path) -> None:
    command = executed.nbval_command([tmp_path / "a.ipynb"])
    assert command[1:4] == ["-m", "pytest", "--nbval"]  # never --nbval-lax: every cell compared
    assert f"--nbval-sanitize-with={executed.SANITIZE_FILE}" in command
    assert executed.SANITIZE_FILE.is_file()


@pytest.mark.parametrize(
    ("text", "sanitized"),
    [
        ("verified 70 template files in 0.42s: OK", "verified 70 template files in <duration>: OK"),
        ("480 requests built, 480 unique prompts, 0 already cached, 480 sent",
         "480 requests built, 480 unique prompts, <n> already cached, <n> sent"),
        ("missing /home/ci/repo/notebooks/x", "missing <repo>/notebooks/x"),
        ('<style scoped>\n .x {}\n</style>\n<table>', "<style>\n<table>"),
    ],
)  # fmt: skip
def test_the_sanitizer_replaces_only_what_varies_between_runs(text, sanitized) -> None:
    import re

    patterns = re.findall(
        "^regex: (.*)$\n^replace: (.*)$", executed.SANITIZE_FILE.read_text(), flags=re.M
    )
    for regex, replace in patterns:  # as nbval applies them
        text = re.sub(regex, replace, text)
    assert text == sanitized
