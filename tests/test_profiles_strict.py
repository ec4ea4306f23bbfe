"""Strict profiles: repeated keys, coerced types, non-finite numbers, a section for another
backend and an undeclared sim parameter are each an error naming the file and the key; sim
behaviours declare their parameters with a module-level ``PARAMETERS`` dict."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import numpy as np
import pytest

from deliberation.inference import sim_registry
from deliberation.inference.base import ChatRequest
from deliberation.inference.sim import SimBackend
from deliberation.inference.sim_registry import SimContext, declared_parameters
from deliberation.profiles.profile import Profile, ProfileError, load_profile

SIM_HEAD = "backend: sim\nmodel: m\n"
OPENAI_HEAD = "backend: openai\nmodel: m\nopenai:\n  base_url: http://127.0.0.1:9/v1\n"


def _load(tmp_path: Path, text: str, name: str = "probe") -> Profile:
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    return load_profile(path)


def _error(tmp_path: Path, text: str) -> str:
    with pytest.raises(ProfileError) as caught:
        _load(tmp_path, text)
    message = str(caught.value)
    assert message.startswith(str(tmp_path / "probe.yaml")), message
    return message


@pytest.mark.parametrize(
    ("text", "key", "line"),
    [
        (SIM_HEAD + "seed: 1\nseed: 2\n", "'seed'", "line 4"),
        (
            SIM_HEAD + "sampling:\n  temperature: 0.1\n  temperature: 0.7\n",
            "'temperature'",
            "line 5",
        ),
        (OPENAI_HEAD + "  base_url: http://127.0.0.1:10/v1\n", "'base_url'", "line 5"),
    ],
    ids=["top level", "sampling", "backend section"],
)
def test_a_repeated_key_is_an_error_naming_it_and_its_line(tmp_path, text, key, line) -> None:
    message = _error(tmp_path, text)
    assert f"duplicate key {key}" in message and line in message


@pytest.mark.parametrize(
    ("text", "where", "given"),
    [
        (SIM_HEAD + "seed: true\n", "seed", "a boolean"),
        (SIM_HEAD + "seed: '3'\n", "seed", "a string"),
        (SIM_HEAD + "seed: 1.5\n", "seed", "a number"),
        (SIM_HEAD + "sampling: {temperature: '0.5'}\n", "sampling.temperature", "a string"),
        (SIM_HEAD + "sampling: {max_tokens: 10.0}\n", "sampling.max_tokens", "a number"),
        (SIM_HEAD + "smoke: 'yes'\n", "smoke", "a string"),
        (SIM_HEAD + "sim: {parameters: {smoke_accuracy: '0.5'}}\n", "sim.parameters", "a string"),
        (OPENAI_HEAD + "  concurrency: '16'\n", "openai.concurrency", "a string"),
        (OPENAI_HEAD + "  send_seed: 1\n", "openai.send_seed", "an integer"),
    ],
)
def test_no_type_is_coerced(tmp_path, text, where, given) -> None:
    message = _error(tmp_path, text)
    assert f": {where}" in message and f"got {given}" in message, message


@pytest.mark.parametrize(
    ("text", "where"),
    [
        (SIM_HEAD + "sampling: {temperature: .nan}\n", "sampling.temperature"),
        (SIM_HEAD + "sampling: {top_p: .inf}\n", "sampling.top_p"),
        (
            SIM_HEAD + "sim: {parameters: {smoke_accuracy: -.inf}}\n",
            "sim.parameters.smoke_accuracy",
        ),
        (OPENAI_HEAD + "  timeout_s: .inf\n", "openai.timeout_s"),
    ],
)
def test_non_finite_numbers_are_errors_naming_the_key(tmp_path, text, where) -> None:
    message = _error(tmp_path, text)
    assert f": {where}: expected a finite number" in message


def test_a_section_for_another_backend_is_an_error(tmp_path) -> None:
    message = _error(tmp_path, SIM_HEAD + "openai: {base_url: 'http://127.0.0.1:9/v1'}\n")
    assert "openai: a section for backend 'openai'" in message and "'sim'" in message
    message = _error(tmp_path, OPENAI_HEAD + "vllm: {tensor_parallel_size: 2}\n")
    assert "vllm: a section for backend 'vllm'" in message


def test_a_child_that_switches_backend_drops_the_parents_section(tmp_path) -> None:
    _load(tmp_path, SIM_HEAD + "sim: {parameters: {smoke_accuracy: 0.5}}\n", name="parent")
    child = _load(
        tmp_path, "extends: parent\nbackend: openai\nopenai: {base_url: 'http://127.0.0.1:9/v1'}\n"
    )
    assert child.backend == "openai" and child.options.base_url == "http://127.0.0.1:9/v1"


def test_an_undeclared_sim_parameter_is_an_error_naming_it(tmp_path) -> None:
    message = _error(tmp_path, SIM_HEAD + "sim: {parameters: {smoke_acuracy: 0.5}}\n")
    assert "sim.parameters" in message and "'smoke_acuracy'" in message
    assert "no sim behaviour declares" in message and "smoke_accuracy" in message
    with pytest.raises(ValueError, match="smoke_acuracy"):
        SimBackend(parameters={"smoke_acuracy": 0.5})


def _declare(monkeypatch, name: str, parameters: dict[str, float]) -> None:
    module = types.ModuleType(f"{name}_behaviours")
    module.PARAMETERS = parameters
    monkeypatch.setitem(sys.modules, module.__name__, module)
    modules = [*sim_registry.BEHAVIOUR_MODULES, module]
    monkeypatch.setattr(sim_registry, "BEHAVIOUR_MODULES", modules)


def test_a_new_behaviour_module_declares_parameters_with_PARAMETERS(tmp_path, monkeypatch) -> None:
    text = SIM_HEAD + "sim: {parameters: {new_skill: 0.25}}\n"
    with pytest.raises(ProfileError, match="new_skill"):
        _load(tmp_path, text)
    _declare(monkeypatch, "new_experiment", {"new_skill": 0.7, "new_noise": 0.1})
    assert _load(tmp_path, text).options.parameters == {"new_skill": 0.25}
    assert declared_parameters()["new_noise"] == 0.1 and "smoke_accuracy" in declared_parameters()


def test_param_reads_the_profile_then_the_declared_default(monkeypatch) -> None:
    _declare(monkeypatch, "new_experiment", {"new_skill": 0.7})
    context = SimContext(
        request=ChatRequest.from_prompt("x"),
        rng=np.random.default_rng(0),
        parameters={"smoke_accuracy": 0.2},
    )
    assert context.param("smoke_accuracy") == 0.2
    assert context.param("new_skill") == 0.7
    with pytest.raises(KeyError, match="not declared"):
        context.param("never_declared", 0.5)


def test_one_name_declared_with_two_defaults_is_an_error(monkeypatch) -> None:
    _declare(monkeypatch, "one", {"shared": 0.1})
    _declare(monkeypatch, "two", {"shared": 0.2})
    with pytest.raises(ValueError, match="'shared' is declared with default"):
        declared_parameters()


# Every name and number a user can set is checked, with one line naming the file and the field
# (issue 46 item 6).
@pytest.mark.parametrize(
    ("text", "where"),
    [
        (SIM_HEAD + "sampling:\n  max_tokens: 100000000000000000000\n", "sampling.max_tokens"),
        (SIM_HEAD + "sampling:\n  max_tokens: 2000000\n", "sampling.max_tokens"),
        (SIM_HEAD + "seed: 100000000000000000000000\n", "seed"),
        ("backend: sim\nmodel: \"sim\\0x\"\n", "model"),
        ("backend: sim\nmodel: \"sim\\u202Ex\"\n", "model"),
        (SIM_HEAD + "revision: \"a\\u200Db\"\n", "revision"),
        (SIM_HEAD + "experiments:\n  crossprofile:\n    budgets: [-0.5]\n",
         "experiments.crossprofile.budgets.0"),
        (SIM_HEAD + "experiments:\n  hiddenbench:\n    budgets: [0.6, 1.5]\n",
         "experiments.hiddenbench.budgets.1"),
        (SIM_HEAD + "name: " + "a" * 300 + "\n", "name"),
        (OPENAI_HEAD + "  timeout_s: 1.0e+9\n", "openai.timeout_s"),
        (OPENAI_HEAD + "  concurrency: 100000\n", "openai.concurrency"),
    ],
    ids=["max_tokens past 64 bits", "max_tokens past the bound", "seed", "NUL", "RLO", "ZWJ",
         "negative budget", "budget over 1", "long name", "timeout", "concurrency"],
)  # fmt: skip
def test_names_and_numbers_out_of_bounds_are_errors_naming_file_and_field(tmp_path, text, where):
    message = _error(tmp_path, text)
    assert f"probe.yaml: {where}: " in message and "\n" not in message


def test_a_description_may_break_lines(tmp_path) -> None:
    profile = _load(tmp_path, SIM_HEAD + "description: |\n  two\n  lines\n")
    assert profile.description == "two\nlines\n"


@pytest.mark.parametrize("name", ["a" * 300, "a/b", "x\u202ey"])
def test_a_profile_name_that_cannot_be_one_is_refused_before_any_file_is_looked_for(name):
    with pytest.raises(ProfileError, match="profile: "):
        load_profile(name)
