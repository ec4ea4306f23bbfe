"""What a profile runs, in words (``deliberation.profiles.model_label``): every caption, figure title,
banner and sidecar of a real-model profile's outputs names the model, quantisation, engine and
version from the repository's pins, and says "reduced grid" when the grid is; sim outputs stay
"synthetic (sim backend)"."""

from __future__ import annotations

import json
import sys

import pandas as pd

from deliberation.inference.model_files import MODELS
from deliberation.profiles import model_label
from deliberation.profiles.profile import load_profile
from deliberation.publish.plots import Figure, save_figure
from deliberation.publish.tables import write_table

SMOLLM = MODELS["smollm2-135m-instruct-q4_1"]


def test_the_llamacpp_profile_says_model_quantisation_engine_and_its_pinned_version() -> None:
    profile = load_profile("smollm2-135m-llamacpp")
    full = profile.model_copy(update={"experiments": type(profile.experiments)()})
    assert full.label == "SmolLM2-135M-Instruct (Q4_1, llama.cpp via llama-cpp-python 0.3.36)"
    reduced = bool(model_label.reduced_grid(profile.experiments))
    assert profile.label == full.label + (", reduced grid" if reduced else "")
    described = model_label.describe_model(profile)
    assert described.model_file_sha256 == SMOLLM.sha256
    assert described.engine_version == model_label.pinned_version("llama-cpp-python") == "0.3.36"


def test_a_reduced_grid_is_said_and_its_options_listed() -> None:
    profile = load_profile("smollm2-135m-llamacpp")
    # The profile's own experiments model (its sections are registered by the experiments).
    options_model = type(profile.experiments)
    experiments = options_model.model_validate(
        {"crossprofile": {"limit": 2, "budgets": [0.6], "policies": ["R1", "B4"]},
         "dhd": {"problems": 4, "benchmarks": ["synthetic", "omni_math"]},
         "natural": {"budget": 0.4}}
    )  # fmt: skip
    reduced = profile.model_copy(update={"experiments": experiments})
    assert reduced.label == (
        "SmolLM2-135M-Instruct (Q4_1, llama.cpp via llama-cpp-python 0.3.36), reduced grid"
    )
    # Fewer budgets, a policy subset where the default is "all", a limit, fewer problems; a
    # larger benchmark list and another budget fraction are not reductions.
    assert model_label.reduced_grid(experiments) == [
        "crossprofile.policies", "crossprofile.budgets", "crossprofile.limit", "dhd.problems",
    ]  # fmt: skip
    assert model_label.reduced_grid(options_model()) == []


def test_the_version_comes_from_pyproject_not_from_what_is_installed(monkeypatch) -> None:
    # A machine without llama.cpp (replaying published responses) writes the same label.
    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    profile = load_profile("smollm2-135m-llamacpp")
    assert "llama-cpp-python 0.3.36" in profile.label


def test_sim_outputs_keep_the_synthetic_label() -> None:
    assert load_profile("smoke").label == model_label.SYNTHETIC_LABEL == "synthetic (sim backend)"


def test_other_real_profiles_name_their_model_and_where_it_runs() -> None:
    assert load_profile("qwen2.5-7b-vllm").label == "Qwen/Qwen2.5-7B-Instruct (vLLM)"
    assert load_profile("deepseek-v4-pro-api").label == "deepseek-v4-pro (api.deepseek.com)"


def test_tables_figures_and_sidecars_of_a_real_profile_carry_its_label() -> None:
    profile = load_profile("smollm2-135m-llamacpp")
    label = profile.label
    written = write_table(
        pd.DataFrame({"policy": ["R1"], "accuracy": [0.5]}),
        "label_check",
        profile=profile,
        caption="Accuracy",
        notebook="00_smoke",
    )
    assert f"**Accuracy [{label}]**" in written["md"].read_text()
    assert f"Accuracy [{label}]" in written["tex"].read_text()
    sidecar = json.loads(written["provenance"].read_text())
    assert sidecar["label"] == label and sidecar["caption"] == f"Accuracy [{label}]"
    assert not sidecar["synthetic"]
    described = sidecar["model_description"]
    assert described["model_file_sha256"] == SMOLLM.sha256
    assert described["engine_version"] == "0.3.36"
    assert described["reduced_grid"] == model_label.reduced_grid(profile.experiments)
    assert "synthetic" not in written["md"].read_text()

    fig = Figure()
    ax = fig.subplots()
    ax.plot([0, 1])
    save_figure(fig, "label_check_fig", profile=profile, caption="A line", notebook="00_smoke")
    assert label in fig.get_suptitle()


def test_sim_sidecars_have_no_model_description() -> None:
    written = write_table(
        pd.DataFrame({"a": [1]}), "sim_check", profile=load_profile("smoke"), caption="C",
        notebook="00_smoke",
    )  # fmt: skip
    sidecar = json.loads(written["provenance"].read_text())
    assert sidecar["label"] == "synthetic (sim backend)" and "model_description" not in sidecar
    assert "[synthetic (sim backend)]" in written["md"].read_text()
