"""The README's own-model path, end to end on serve-sim: `deliberation profile new` against a
running `deliberation serve-sim`, then the whole paper on the profile it wrote, as written. The
starter grid is derived from what the notebooks' analyses need
(deliberation.experiments.grid_needs), so an analysis that gains a need without declaring it
fails here, not in a user's run on a slow model; and every output is labelled synthetic,
because the server says it is serve-sim."""

from __future__ import annotations

import json

import pytest

from deliberation.cli import main
from deliberation.paper.build import build_paper
from deliberation.paper.manifest import load_manifest
from deliberation.paper.outputs import missing_outputs, unlisted_outputs
from deliberation.paper.plan import format_plan, plan_calls
from deliberation.profiles.model_label import SYNTHETIC_LABEL
from deliberation.testing import running_sim_server

FOLDERS = ("OUTPUT_ROOT", "CACHE_DIR", "BUILD_DIR")


def test_the_paper_builds_on_a_fresh_starter_profile_against_serve_sim(
    tmp_path, monkeypatch, capsys
) -> None:
    for name in FOLDERS:
        monkeypatch.setenv(f"DELIBERATION_{name}", str(tmp_path / name.lower()))
    profile = tmp_path / "my-model.yaml"
    with running_sim_server() as server:
        assert main(["profile", "new", "--base-url", server.base_url, "--out", str(profile)]) == 0
        assert "concurrency: 4" in capsys.readouterr().out
        plan = format_plan(plan_calls(str(profile)))
        assert plan[0] == f"plan: profile my-model, {SYNTHETIC_LABEL}; nothing below has been sent"
        assert not any(line.startswith("NOT PLANNED") for line in plan)
        lines: list[str] = []
        result = build_paper(str(profile), out=lines.append)
    text = "\n".join(lines)
    assert result.ok, text[-3000:]
    assert lines[0] == f"make paper: profile my-model ({SYNTHETIC_LABEL})"
    assert result.executed == [entry.name for entry in load_manifest()], text[-3000:]
    assert missing_outputs("my-model") == [] and unlisted_outputs("my-model") == []
    sidecars = sorted((tmp_path / "output_root" / "tables" / "my-model").glob("*.provenance.json"))
    assert sidecars
    labels = {json.loads(s.read_text())["label"] for s in sidecars}
    for sidecar in sidecars:  # the one label of the sim on every model output
        record = json.loads(sidecar.read_text())
        assert record["synthetic"] is record["uses_model"], sidecar.name
    assert SYNTHETIC_LABEL in labels and not any("sim-mechanism" in label for label in labels)


@pytest.mark.parametrize(
    ("key", "value", "notebook"),
    [
        ("hiddenbench.policies", "[R1]", "02_hiddenbench"),
        ("crossprofile.item_limit", "0", "03_crossprofile_h1_h3"),
        ("dhd.blocks", "1", "08_dhd_masking_selection"),
    ],
)
def test_a_grid_a_notebook_cannot_analyse_is_refused_before_anything_is_sent(
    tmp_path, monkeypatch, capsys, key, value, notebook
) -> None:
    """The probe's three failures, each found by `make plan` before a call, naming the key and
    a value that works (the old starter grid failed in notebooks 02, 03 and 08 in turn)."""
    for name in FOLDERS:
        monkeypatch.setenv(f"DELIBERATION_{name}", str(tmp_path / name.lower()))
    profile = tmp_path / "narrow.yaml"
    section, option = key.split(".")
    profile.write_text(f"extends: sim\nexperiments:\n  {section}:\n    {option}: {value}\n")
    (tmp_path / "sim.yaml").write_text((load_params("sim")).read_text())
    assert main(["plan", "--profile", str(profile), "--no-power"]) == 2
    err = capsys.readouterr().err
    assert f"experiments.{key}: {value}; set it to " in err and f"{notebook} needs" in err
    assert not (tmp_path / "cache_dir").exists()  # nothing planned, nothing sent
    lines: list[str] = []
    with pytest.raises(Exception, match=f"experiments.{key}"):
        build_paper(str(profile), out=lines.append)
    assert lines == []  # refused before the first line of the build


def load_params(name: str):
    from deliberation.io import paths

    return paths.params_dir() / f"{name}.yaml"
