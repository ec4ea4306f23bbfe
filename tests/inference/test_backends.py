"""One backend registry, loaded lazily: the README's "add a backend" recipe, followed literally
with a toy backend, gives a backend that profiles can name, that validates its own section and
whose requests are cached by what it sends."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from deliberation.inference import backends, make_client
from deliberation.inference.backends import backend_class, register_backend, registered_backends
from deliberation.inference.generation import StageSettings, stage_request
from deliberation.profiles.profile import ProfileError, load_profile

TOY_MODULE = """
from pydantic import BaseModel, ConfigDict

from deliberation.inference.base import Backend, BackendIdentity, ChatResponse, transport_only


class ToyOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    shout: bool = False
    log_every: int = transport_only(10)


class ToyBackend(Backend):
    Options = ToyOptions
    calls = 0

    def __init__(self, model, options):
        self.model, self.options = model, options

    @classmethod
    def from_profile(cls, profile):
        return cls(profile.model, profile.options)

    @property
    def identity(self):
        return BackendIdentity(backend="toy", model=self.model)

    def request_payload(self, request):
        return {"prompt": request.messages[-1].content, "shout": self.options.shout}

    def generate(self, requests, on_response=None):
        out = []
        for index, request in enumerate(requests):
            type(self).calls += 1
            text = request.messages[-1].content
            response = ChatResponse(text=text.upper() if self.options.shout else text)
            if on_response is not None:
                on_response(index, response)
            out.append(response)
        return out
"""


@pytest.fixture
def toy(tmp_path, monkeypatch):
    """The recipe: a module with the class, then one ``register_backend`` line."""
    (tmp_path / "toy_backend.py").write_text(textwrap.dedent(TOY_MODULE))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(backends, "_REGISTRY", dict(backends._REGISTRY))
    from toy_backend import ToyBackend

    register_backend("toy", ToyBackend)
    return tmp_path


def _profile(folder, body):
    path = folder / "toy-profile.yaml"
    path.write_text("backend: toy\nmodel: toy-1\n" + body)
    return load_profile(path)


def test_a_registered_toy_backend_runs_from_a_profile_through_the_cache(toy):
    assert "toy" in registered_backends()
    profile = _profile(toy, "toy: {shout: true}\n")
    assert profile.name == "toy-profile" and profile.options.shout is True
    assert not profile.synthetic
    client = make_client(profile, cache_file=toy / "c.sqlite", progress=False)
    request = stage_request(profile, StageSettings("echo"), "hello")
    (first,) = client.generate([request])
    (again,) = client.generate([request])
    assert first.text == "HELLO" and again.cached
    assert backend_class("toy").calls == 1


def test_the_toy_section_is_validated_by_the_toy_options(toy):
    with pytest.raises(ProfileError, match=r"toy-profile\.yaml: toy\.volume"):
        _profile(toy, "toy: {volume: 11}\n")


def test_an_option_that_changes_what_is_sent_changes_the_key(toy):
    plain = _profile(toy, "")
    quiet = make_client(plain, cache_file=toy / "a.sqlite", progress=False)
    loud = make_client(_profile(toy, "toy: {shout: true}\n"), cache_file=toy / "b.sqlite")
    chatty = make_client(_profile(toy, "toy: {log_every: 1}\n"), cache_file=toy / "c.sqlite")
    request = stage_request(plain, StageSettings("echo"), "x")
    assert quiet.key(request) != loud.key(request)
    assert quiet.key(request) == chatty.key(request)  # transport_only: not part of the key


def test_unknown_backends_and_bad_targets_are_errors(tmp_path, monkeypatch):
    monkeypatch.setattr(backends, "_REGISTRY", dict(backends._REGISTRY))
    path = tmp_path / "p.yaml"
    path.write_text("backend: nope\nmodel: m\n")
    with pytest.raises(ProfileError, match="nope"):
        load_profile(path)
    with pytest.raises(TypeError, match="not a Backend subclass"):
        register_backend("broken", object)
    with pytest.raises(ValueError, match="twice"):
        register_backend("sim", backend_class("openai"))


def test_loading_profiles_imports_no_optional_engine():
    """vLLM is imported only when a run builds its engine, not by the registry or a profile."""
    code = (
        "import sys; from deliberation.profiles.profile import load_profile; "
        "from deliberation.inference import make_client; "
        "load_profile('sim'); load_profile('qwen2.5-7b-vllm'); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'vllm'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
