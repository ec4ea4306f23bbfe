"""The paper build (deliberation.paper.build) on tiny throwaway notebooks: skip what is current,
rerun what changed and say why, FORCE, a failure naming notebook and cell, the output check."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from deliberation.paper import build, outputs
from deliberation.paper.manifest import ManifestError, load_manifest, select

WRITE_TABLE = """\
import pandas as pd
from deliberation.params import load_profile
from deliberation.tables import write_table
settings = load_profile(profile)
write_table(pd.DataFrame({{"x": [{value}]}}), "{table}", profile=settings, caption="t",
            notebook="{stem}", latex=False)
"""


def notebook(path: Path, *cells: str) -> None:
    """A notebook whose first code cell is the papermill `parameters` cell."""
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell('profile = "smoke"')
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, *(nbformat.v4.new_code_cell(c) for c in cells)]
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(nb, path)


@pytest.fixture
def project(tmp_path, monkeypatch):
    """Two notebooks: 00_a writes a table; 01_b reads a data file and writes another."""
    monkeypatch.setenv("DELIBERATION_BUILD_DIR", str(tmp_path / "build"))
    folder = tmp_path / "notebooks"
    folder.mkdir()
    data = tmp_path / "data" / "input.txt"
    data.parent.mkdir()
    data.write_text("1\n")
    notebook(folder / "00_a.ipynb", WRITE_TABLE.format(value=1, table="a", stem="00_a"))
    notebook(
        folder / "01_b.ipynb",
        f"value = int(open({str(data)!r}).read())",
        WRITE_TABLE.format(value="value", table="b", stem="01_b"),
    )
    (folder / "manifest.yaml").write_text(
        f"notebooks:\n  00_a.ipynb: {{}}\n  01_b.ipynb:\n    reads: ['{tmp_path}/data/*.txt']\n"
    )
    readme = tmp_path / "README.md"
    readme.write_text(
        "# outputs\n\n"
        f"{outputs.BEGIN}\n| notebook | file |\n| --- | --- |\n"
        "| 00_a | `tables/{profile}/a.csv` |\n| 01_b | `tables/{profile}/b.csv` |\n"
        f"{outputs.END}\n"
    )
    return {"folder": folder, "data": data, "readme": readme, "root": tmp_path}


def run(project, **kwargs):
    lines: list[str] = []
    result = build.build_paper(
        "smoke",
        folder=project["folder"],
        readme=project["readme"],
        plan=False,
        out=lines.append,
        **kwargs,
    )
    return result, "\n".join(lines)


@pytest.mark.slow
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


def test_each_input_part_changes_the_hash(project, tmp_path):
    profile = build.load_profile("smoke")
    shared = build.SharedInputs.compute(profile, "smoke")
    entry_a, entry_b = load_manifest(project["folder"])
    before = build.notebook_inputs(entry_b, shared, project["folder"])
    project["data"].write_text("changed\n")
    (project["folder"] / "01_b.ipynb").write_text(
        (project["folder"] / "01_b.ipynb").read_text().replace("value", "valu3")
    )
    after = build.notebook_inputs(entry_b, shared, project["folder"])
    assert {k for k in before if before[k] != after[k]} == {"data", "notebook"}
    # a notebook that reads nothing does not depend on that data file
    assert build.notebook_inputs(entry_a, shared, project["folder"])["data"] == build._hash_files(
        [], tmp_path
    )


def test_profile_hash_covers_what_it_extends_but_not_its_cost_or_description(tmp_path):
    (tmp_path / "parent.yaml").write_text("backend: sim\nmodel: m\nseed: 1\n")
    child = tmp_path / "child.yaml"
    child.write_text("extends: parent\ndescription: a\n")
    digest = build.profile_digest(build.load_profile(child))
    assert build.profile_files(child) == [child, tmp_path / "parent.yaml"]

    child.write_text(
        "extends: parent\ndescription: b\ncost:\n  price: {prompt_per_million: 1,"
        " completion_per_million: 2, as_of: 2026-01-01}\n"
    )
    assert build.profile_digest(build.load_profile(child)) == digest
    (tmp_path / "parent.yaml").write_text("backend: sim\nmodel: m\nseed: 2\n")
    assert build.profile_digest(build.load_profile(child)) != digest


@pytest.mark.slow
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


@pytest.mark.slow
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


def test_output_table_format_errors_name_the_line(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(f"{outputs.BEGIN}\n| 00_a | `tables/a.csv` |\n{outputs.END}\n")
    with pytest.raises(outputs.OutputListError, match=r"README.md:2: 'tables/a.csv'"):
        outputs.expected_outputs(readme)
    readme.write_text("no table\n")
    with pytest.raises(outputs.OutputListError, match="outputs:begin"):
        outputs.expected_outputs(readme)


def test_manifest_must_list_every_notebook_and_only_existing_ones(project):
    folder = project["folder"]
    notebook(folder / "02_new.ipynb", "pass")
    with pytest.raises(ManifestError, match=r"no entry for \['02_new.ipynb'\]"):
        load_manifest(folder)
    (folder / "manifest.yaml").write_text(
        "notebooks:\n  00_a.ipynb: {}\n  01_b.ipynb: {}\n  02_new.ipynb: {}\n  03_gone.ipynb: {}\n"
    )
    with pytest.raises(ManifestError, match="03_gone"):
        load_manifest(folder)
    (folder / "manifest.yaml").write_text("notebooks:\n  00_a.ipynb: {experiment: nocolon}\n")
    with pytest.raises(ManifestError, match=r"00_a.ipynb.experiment"):
        load_manifest(folder)


def test_select_by_name_stem_or_prefix(project):
    entries = load_manifest(project["folder"])
    assert [e.name for e in select(entries, ["01"])] == ["01_b.ipynb"]
    assert [e.name for e in select(entries, ["00_a", "01_b.ipynb"])] == ["00_a.ipynb", "01_b.ipynb"]
    with pytest.raises(ManifestError, match="no notebook '09'"):
        select(entries, ["09"])


def test_the_projects_manifest_and_output_table_agree_with_the_notebooks():
    entries = load_manifest()  # raises if a notebook lacks an entry
    stems = {e.stem for e in entries}
    listed = outputs.expected_outputs()
    assert listed
    assert {e.notebook for e in listed} <= stems
    for entry in entries:
        entry.experiment_function()  # every experiment imports


def test_an_output_that_needs_data_is_expected_only_when_the_data_is_there(tmp_path):
    data = tmp_path / "ref" / "released.csv"
    readme = tmp_path / "README.md"
    readme.write_text(
        f"{outputs.BEGIN}\n| notebook | file | only if | what |\n| --- | --- | --- | --- |\n"
        f"| 07_x | `tables/{{profile}}/ref.csv` | `{tmp_path}/nothing/*.csv` or `{data}` | x |\n"
        f"| 07_x | `tables/{{profile}}/always.csv` | | y |\n{outputs.END}\n"
    )
    names = [p.name for p in outputs.missing_outputs("smoke", readme=readme, root=tmp_path)]
    assert names == ["always.csv"]
    data.parent.mkdir()
    data.write_text("a,b\n")
    names = [p.name for p in outputs.missing_outputs("smoke", readme=readme, root=tmp_path)]
    assert names == ["ref.csv", "always.csv"]


def test_every_file_the_claim_tables_name_is_in_the_output_table():
    """figures/README.md's claim tables (for readers) and its output table (for the build)
    name the same files."""
    import re

    text = outputs.readme_path().read_text()
    claimed = set(re.findall(r"`((?:figures|tables)/<profile>/[^`<]+)`", text))
    listed = {e.pattern for e in outputs.expected_outputs()}
    assert claimed
    assert {c.replace("<profile>", "{profile}") for c in claimed} <= listed


CALLS_CELL = """\
import time
from deliberation.inference import make_client
from deliberation.inference.base import ChatRequest
from deliberation.params import load_profile
client = make_client(load_profile(profile))
client.generate([ChatRequest.from_prompt(f"What is {i} + 2?", stage="smoke.arithmetic")
                 for i in range(3)])
time.sleep(1.5)
"""


@pytest.mark.slow
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
from deliberation.params import load_profile
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
        "  00_a.ipynb: {experiment: 'deliberation.smoke:run_profile'}\n"
        "  01_b.ipynb: {experiment: 'deliberation.smoke:run_profile'}\n"
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
