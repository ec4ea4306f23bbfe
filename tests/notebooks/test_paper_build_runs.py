"""The paper build (deliberation.paper.build) executing tiny throwaway notebooks: skip what is
current, rerun what changed and say why, FORCE, a failure naming notebook and cell, outputs
missing after a run. (The build's logic without executing a notebook: tests/paper/test_paper_build.py.)"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from helpers.toy_paper import notebook, run, toy_project

from deliberation.paper import build, outputs


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


CALLS_CELL = """\
import time
from deliberation.inference import make_client
from deliberation.inference.base import ChatRequest
from deliberation.profiles.profile import load_profile
client = make_client(load_profile(profile))
client.generate([ChatRequest.from_prompt(f"What is {i} + 2?", stage="smoke.arithmetic")
                 for i in range(3)])
time.sleep(1.5)
"""


def test_the_terminal_shows_cell_and_calls_and_no_kernel_noise(project, capfd):
    """Progress lines name the notebook, its cell and the calls done; the kernel neither warns
    about TCP nor reports an interrupt at shutdown; the notebook holds no progress bar."""
    notebook(project["folder"] / "00_a.ipynb", CALLS_CELL, "time.sleep(1.5)")
    result, text = run(project, notebooks=["00"], progress_interval_s=0.3)
    assert result.executed == ["00_a.ipynb"], text
    # papermill adds its injected-parameters cell: four code cells.
    assert "00_a.ipynb: cell 3 of 4 (`import time`), 3 calls" in text
    assert "00_a.ipynb: cell 4 of 4 (`time.sleep(1.5)`), 3 calls" in text
    assert "00_a.ipynb done in" in text and ", 3 model calls" in text
    terminal = capfd.readouterr()
    noise = terminal.out + terminal.err
    assert "without encryption" not in noise and "KeyboardInterrupt" not in noise
    executed = nbformat.read(build.paths.build_dir() / "executed" / "smoke" / "00_a.ipynb", 4)
    streams = [o.get("text", "") for c in executed.cells for o in c.get("outputs", [])]
    assert not any("model calls" in s or "IProgress" in s or "it/s" in s for s in streams)


ASKS_THE_SERVER = """\
import urllib.request
from deliberation.profiles.profile import load_profile
settings = load_profile(profile)
with urllib.request.urlopen(settings.options.base_url + "/models", timeout=10) as reply:
    assert reply.status == 200  # the build's server answers inside the notebook
"""


def test_make_paper_starts_the_profiles_server_once_for_the_build_and_stops_it(
    project, tmp_path, caplog
) -> None:
    """Two notebooks, one server: started before the first (the URL did not answer), seen by
    both kernels, pre-flighted once, and gone when the build ends."""
    import logging
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    profile = tmp_path / "managed.yaml"
    profile.write_text(
        "backend: openai\nmodel: sim-mechanism\n"
        f"openai: {{base_url: 'http://127.0.0.1:{port}/v1', timeout_s: 10}}\n"
        "server:\n"
        "  command: ['{python}', '-m', 'deliberation', 'serve-sim', '--port', '{port}']\n"
        f"  log_file: {tmp_path}/server.log\n"
    )
    folder = project["folder"]
    for name in ("00_a", "01_b"):
        notebook(folder / f"{name}.ipynb", ASKS_THE_SERVER)
    (folder / "manifest.yaml").write_text(
        "notebooks:\n"
        "  00_a.ipynb: {experiment: 'deliberation.experiments.smoke:run_profile'}\n"
        "  01_b.ipynb: {experiment: 'deliberation.experiments.smoke:run_profile'}\n"
    )
    lines: list[str] = []
    with caplog.at_level(logging.INFO, logger="deliberation.inference.model_server"):
        result = build.build_paper(
            str(profile), folder=folder, readme=project["readme"], plan=False, out=lines.append
        )
    assert result.executed == ["00_a.ipynb", "01_b.ipynb"], "\n".join(lines)
    started = [r for r in caplog.records if "started server" in r.getMessage()]
    stopped = [r for r in caplog.records if "stopped the server" in r.getMessage()]
    assert len(started) == 1 and len(stopped) == 1
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", port)) != 0  # nothing listens after the build
