"""The paper build's logic (deliberation.paper.build) without executing a notebook: input hashes,
the manifest, the output table. (Builds that execute notebooks: tests/notebooks/.)"""

from __future__ import annotations

import pytest
from helpers.toy_paper import notebook, run, toy_project

from deliberation.paper import build, outputs
from deliberation.paper.manifest import ManifestError, load_manifest, select


@pytest.fixture
def project(tmp_path, monkeypatch):
    return toy_project(tmp_path, monkeypatch)


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


def test_the_unit_lane_refuses_to_execute_a_notebook(project):
    """conftest.py's guard: a build here fails at its first notebook, naming the lane to use."""
    result, text = run(project)
    assert not result.ok and result.executed == []
    assert result.failed.notebook == "00_a.ipynb"
    assert "move it to tests/notebooks/" in result.failed.error


def test_a_notebook_stopped_by_a_full_disk_ends_the_build_with_exit_7(monkeypatch, capsys):
    from deliberation import exit_codes
    from deliberation.cli import main

    full = build.NotebookFailed(
        "03_x.ipynb", "rows = run()", "CacheWriteError: /c.sqlite: stopped, its disk is full", None
    )
    bug = build.NotebookFailed("03_x.ipynb", "rows = run()", "ZeroDivisionError: x", None)
    assert (full.exit_code, bug.exit_code) == (exit_codes.OUTPUT_UNWRITABLE, exit_codes.ERROR)
    for failed, code in ((full, 7), (bug, 1)):
        result = build.BuildResult("smoke", failed=failed)
        monkeypatch.setattr(build, "build_paper", lambda *a, result=result, **k: result)
        assert main(["paper", "smoke", "--no-plan"]) == code


def test_the_build_summary_names_other_model_names_from_the_outputs_provenance():
    import json

    from deliberation.io import paths

    folder = paths.output_root() / "tables" / "p"
    folder.mkdir(parents=True)
    (folder / "a.provenance.json").write_text(json.dumps({"served_as": ["m-2024-08-06"]}))
    (folder / "b.provenance.json").write_text(json.dumps({"files": {}}))
    assert build.served_names("p") == ["m-2024-08-06"] and build.served_names("q") == []
