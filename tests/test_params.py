"""Profiles load strictly: every shipped profile validates; bad files name the file and the key."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from deliberation.inference import sim_registry
from deliberation.io import paths
from deliberation.profiles.profile import (
    ProfileError,
    available_profiles,
    load_profile,
    shipped_profiles,
)


@pytest.fixture(autouse=True)
def _behaviour_declaring_a_and_b(monkeypatch):
    """A behaviour module declaring parameters ``a`` and ``b``, as a new experiment's would."""
    module = types.ModuleType("params_test_behaviours")
    module.PARAMETERS = {"a": 0.5, "b": 0.5}
    monkeypatch.setitem(sys.modules, module.__name__, module)
    modules = [*sim_registry.BEHAVIOUR_MODULES, module]
    monkeypatch.setattr(sim_registry, "BEHAVIOUR_MODULES", modules)


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    return path


def test_every_shipped_profile_loads_and_names_its_backend_options():
    names = shipped_profiles()
    assert {
        "sim",
        "smoke",
        "qwen2.5-7b-vllm",
        "llama3.1-8b-vllm",
        "deepseek-v4.1-flash-api",
        "deepseek-v4-pro-api",
        "gpt-oss-120b-vllm",
        "gemma-4-31b-vllm",
    } <= set(names)
    for name in names:
        profile = load_profile(name)
        assert profile.name == name
        if profile.backend == "openai":
            assert profile.options.base_url
        if profile.backend == "vllm":
            assert profile.options is not None


def test_the_shipped_list_names_existing_profiles_only():
    assert {"sim", "smoke", "vllm-serve-local"} <= set(shipped_profiles())
    assert set(shipped_profiles()) <= set(available_profiles())


def test_a_users_profile_loads_strictly():
    """What the README promises a profile a user adds to params/: it loads (or the error names
    the file and the key). Its name may differ from the file stem and `cost:` is optional."""
    for name in set(available_profiles()) - set(shipped_profiles()):
        load_profile(name)


# A copy of vllm-serve-local.yaml made the README's way: another model and port, no `cost:`.
USER_PROFILE = """\
name: my-local-model
description: a user's own llama.cpp server
backend: openai
model: HuggingFaceTB/SmolLM2-135M-Instruct
openai:
  base_url: http://127.0.0.1:8080/v1
  api_key_env: null
  structured_output: response_format
"""


def test_a_user_profile_without_cost_leaves_the_shipped_profile_tests_passing(
    tmp_path, monkeypatch
):
    import shutil

    from helpers.profile_checks import (
        check_a_vllm_profile_prices_exactly_the_gpus_its_engine_uses,
        check_every_shipped_real_profile_prices_its_calls,
    )

    params = tmp_path / "params"
    shutil.copytree(paths.params_dir(), params)
    (params / "smollm2-local.yaml").write_text(USER_PROFILE)
    (params / "my-vllm.yaml").write_text(
        "backend: vllm\nmodel: some/model\nvllm:\n  tensor_parallel_size: 2\n"
    )
    monkeypatch.setattr(paths, "params_dir", lambda: params)
    assert {"smollm2-local", "my-vllm"} <= set(available_profiles()) - set(shipped_profiles())
    user = load_profile("smollm2-local")
    assert user.name == "my-local-model" and not user.synthetic
    assert not (user.cost.gpu or user.cost.price)
    test_a_users_profile_loads_strictly()
    test_every_shipped_profile_loads_and_names_its_backend_options()
    check_every_shipped_real_profile_prices_its_calls()
    for name in shipped_profiles():
        if load_profile(name).backend == "vllm":
            check_a_vllm_profile_prices_exactly_the_gpus_its_engine_uses(name)


def test_only_the_sim_profiles_are_synthetic():
    assert load_profile("sim").synthetic
    assert load_profile("smoke").synthetic
    assert not load_profile("qwen2.5-7b-vllm").synthetic
    assert not load_profile("deepseek-v4.1-flash-api").synthetic


def test_unknown_key_is_an_error_naming_file_and_key(tmp_path):
    path = _write(tmp_path, "bad", "name: bad\nbackend: sim\nmodel: m\ntemprature: 0.3\n")
    with pytest.raises(ProfileError) as err:
        load_profile(path)
    assert str(path) in str(err.value) and "temprature" in str(err.value)


def test_wrong_type_is_an_error_naming_the_nested_key(tmp_path):
    path = _write(
        tmp_path, "bad", "name: bad\nbackend: sim\nmodel: m\nsampling: {max_tokens: many}\n"
    )
    with pytest.raises(ProfileError, match=r"sampling\.max_tokens"):
        load_profile(path)


def test_malformed_yaml_reports_the_line(tmp_path):
    path = _write(tmp_path, "bad", "name: bad\nbackend: sim\nmodel: [unclosed\n")
    with pytest.raises(ProfileError, match=r"line \d+"):
        load_profile(path)


def test_openai_backend_requires_its_options(tmp_path):
    path = _write(tmp_path, "api", "name: api\nbackend: openai\nmodel: m\n")
    with pytest.raises(ProfileError, match=r"openai\.base_url: Field required"):
        load_profile(path)


def test_a_key_in_place_of_the_variable_name_is_refused(tmp_path):
    path = _write(
        tmp_path,
        "api",
        "name: api\nbackend: openai\nmodel: m\nopenai: {base_url: 'http://x', api_key_env: sk-abc}\n",
    )
    with pytest.raises(ProfileError, match="api_key_env"):
        load_profile(path)


def test_extends_merges_child_over_parent(tmp_path):
    _write(
        tmp_path,
        "base",
        "name: base\nbackend: sim\nmodel: m\nsim: {parameters: {a: 1.0, b: 2.0}}\n",
    )
    child = _write(tmp_path, "child", "extends: base\nname: child\nsim: {parameters: {b: 5.0}}\n")
    profile = load_profile(child)
    assert profile.options.parameters == {"a": 1.0, "b": 5.0}
    assert profile.model == "m"


def test_extends_cycle_is_an_error(tmp_path):
    _write(tmp_path, "a", "extends: b\nname: a\n")
    path = _write(tmp_path, "b", "extends: a\nname: b\n")
    with pytest.raises(ProfileError, match="cycle"):
        load_profile(path)


def test_params_hash_tracks_results_not_descriptions(tmp_path):
    one = load_profile(
        _write(tmp_path, "one", "name: x\nbackend: sim\nmodel: m\nsim: {parameters: {a: 1.0}}\n")
    )
    two = load_profile(
        _write(tmp_path, "two", "name: x\nbackend: sim\nmodel: m\nsim: {parameters: {a: 2.0}}\n")
    )
    same = load_profile(
        _write(
            tmp_path,
            "same",
            "name: x\ndescription: words\nbackend: sim\nmodel: m\nsim: {parameters: {a: 1.0}}\n",
        )
    )
    assert one.params_hash != two.params_hash
    assert one.params_hash == same.params_hash


# -- names ----------------------------------------------------------------------------------------


def test_a_profile_without_a_name_is_named_after_its_file_not_its_parent(tmp_path):
    _write(tmp_path, "parent", "name: parent\nbackend: sim\nmodel: m\n")
    child = load_profile(_write(tmp_path, "my-child_1.0", "extends: parent\n"))
    assert child.name == "my-child_1.0"
    named = load_profile(_write(tmp_path, "other", "extends: parent\nname: chosen\n"))
    assert named.name == "chosen"


@pytest.mark.parametrize("name", ["../../../x", "a/b", "..", ".", "with space", "", "ünï"])
def test_names_that_could_leave_the_output_folder_are_rejected(tmp_path, name):
    path = _write(tmp_path, "bad", f"name: {name!r}\nbackend: sim\nmodel: m\n")
    with pytest.raises(ProfileError, match=r"bad\.yaml: name"):
        load_profile(path)


def test_the_synthetic_marker_cannot_be_set_or_cleared_from_yaml(tmp_path):
    path = _write(tmp_path, "p", "backend: sim\nmodel: m\nserved_by_sim: false\n")
    with pytest.raises(ProfileError, match="served_by_sim"):
        load_profile(path)


def test_a_real_model_profile_pointed_at_serve_sim_is_labelled_synthetic(tmp_path):
    from deliberation.inference import open_run
    from deliberation.publish.provenance import output_label
    from deliberation.testing import sim_server_in_thread

    with sim_server_in_thread() as server:
        path = _write(
            tmp_path,
            "flash-on-sim",
            "extends: deepseek-v4.1-flash-api\n"
            f"openai: {{base_url: '{server.base_url}', api_key_env: null}}\n",
        )
        (tmp_path / "deepseek-v4.1-flash-api.yaml").write_text(
            (paths.params_dir() / "deepseek-v4.1-flash-api.yaml").read_text()
        )
        profile = load_profile(path)
        assert profile.name == "flash-on-sim" and not profile.synthetic
        labelled, client = open_run(profile, cache_file=tmp_path / "c.sqlite", progress=False)
    assert labelled.synthetic and "synthetic" in output_label(labelled)


def test_a_server_that_does_not_answer_is_not_labelled_synthetic(tmp_path):
    from deliberation.inference import open_run

    profile = load_profile(
        _write(
            tmp_path,
            "down",
            "backend: openai\nmodel: m\nopenai: {base_url: 'http://127.0.0.1:9/v1', timeout_s: 1}\n",
        )
    )
    labelled, _ = open_run(profile, cache_file=tmp_path / "c.sqlite", progress=False)
    assert not labelled.synthetic


# -- hostile profiles: alias bombs, extends escapes, non-HTTP base URLs ----------------------


def _alias_bomb(levels: int = 9) -> str:
    """The billion-laughs shape: each level a list of ten aliases of the level before."""
    lines = ['a0: &a0 ["lol"]']
    for level in range(1, levels + 1):
        refs = ", ".join([f"*a{level - 1}"] * 10)
        lines.append(f"a{level}: &a{level} [{refs}]")
    return "\n".join(["backend: sim", "model: m", *lines]) + "\n"


def test_a_yaml_alias_bomb_fails_fast_naming_the_file(tmp_path):
    path = _write(tmp_path, "bomb", _alias_bomb())
    with pytest.raises(ProfileError, match=rf"{path}: line \d+, column \d+: .*alias"):
        load_profile(path)


def test_a_single_yaml_alias_is_refused_too(tmp_path):
    path = _write(tmp_path, "alias", "backend: sim\nmodel: &m m\ndescription: *m\n")
    with pytest.raises(ProfileError, match=rf"{path}: line 3, .*alias"):
        load_profile(path)


@pytest.mark.parametrize(
    "parent", ["{outside}/evil", "../../outside/evil", "b/base", "..", "./base", ""], ids=repr
)
def test_extends_names_a_profile_in_the_same_folder_only(tmp_path, parent):
    """Every parent here exists, so only the escape itself can be refused."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "evil.yaml").write_text("backend: sim\nmodel: evil\n")
    folder = tmp_path / "a" / "b"
    folder.mkdir(parents=True)
    (folder / "base.yaml").write_text("backend: sim\nmodel: m\n")
    (folder / "b").mkdir()
    (folder / "b" / "base.yaml").write_text("backend: sim\nmodel: m\n")
    (tmp_path / "a" / "..yaml").write_text("backend: sim\nmodel: m\n")
    path = _write(folder, "child", f"extends: {parent.format(outside=outside)!r}\n")
    with pytest.raises(ProfileError, match=rf"{path}: extends: .*not a profile name"):
        load_profile(path)


def test_profile_files_stops_at_an_escaping_extends(tmp_path):
    from deliberation.profiles.profile import profile_files

    (tmp_path / "outside.yaml").write_text("backend: sim\nmodel: evil\n")
    folder = tmp_path / "p"
    folder.mkdir()
    path = _write(folder, "child", "extends: ../outside\nbackend: sim\nmodel: m\n")
    assert profile_files(path) == [path]


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "ftp://host/v1",
        "localhost:8000/v1",
        "http:///v1",
        "  ",
        "http://h o/v1",
    ],
)
def test_a_base_url_that_is_not_http_is_a_profile_error(tmp_path, url):
    path = _write(tmp_path, "p", f"backend: openai\nmodel: m\nopenai: {{base_url: {url!r}}}\n")
    with pytest.raises(ProfileError, match=rf"{path}: openai.base_url: .*http"):
        load_profile(path)


def test_http_and_https_base_urls_load(tmp_path):
    for url in ("http://127.0.0.1:8000/v1", "https://api.example.com/v1", "http://[::1]:8/v1"):
        path = _write(tmp_path, "p", f"backend: openai\nmodel: m\nopenai: {{base_url: {url!r}}}\n")
        assert load_profile(path).options.base_url == url


@pytest.mark.parametrize("userinfo", ["alice:PW@", "alice@", ":PW@"])
def test_a_base_url_with_credentials_is_refused_saying_where_the_key_goes(tmp_path, userinfo):
    url = f"http://{userinfo}host:8000/v1"
    path = _write(
        tmp_path,
        "p",
        f"backend: openai\nmodel: m\nopenai: {{base_url: {url!r}, api_key_env: MY_KEY}}\n",
    )
    with pytest.raises(ProfileError, match=rf"{path}: openai.base_url: .*api_key_env") as err:
        load_profile(path)
    assert "PW" not in str(err.value) and "alice" not in str(err.value)


@pytest.mark.parametrize(
    ("section", "field", "value"),
    [
        ("crossprofile", "policies", "[R1, B4, R1]"),
        ("crossprofile", "budgets", "[0.6, 0.6]"),
        ("hiddenbench", "tags", "[keep, keep]"),
        ("dhd", "benchmarks", "[synthetic, synthetic]"),
        ("dhd", "sizes", "[2, 3, 2]"),
        ("natural", "policies", "[R1, R1]"),
        ("natural", "variants", "[plain, plain]"),
    ],
)
def test_a_grid_value_listed_twice_is_a_profile_error(tmp_path, section, field, value):
    path = _write(
        tmp_path, "p", f"backend: sim\nmodel: m\nexperiments: {{{section}: {{{field}: {value}}}}}\n"
    )
    with pytest.raises(
        ProfileError, match=rf"{path}: experiments.{section}.{field}: .*more than once"
    ):
        load_profile(path)


@pytest.mark.parametrize("value", [123, 1.5, None, True, ["sim"]])
def test_a_profile_parameter_of_the_wrong_type_is_refused_naming_it(value) -> None:
    """As papermill passes `-p profile 123` to a notebook's load_profile call."""
    with pytest.raises(ProfileError, match=r"profile: expected a profile name"):
        load_profile(value)
