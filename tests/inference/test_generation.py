"""Profile sampling reaches the requests: one merge (profile < stage < call), checked on the
wire (serve-sim's received body) and in vLLM's SamplingParams."""

from __future__ import annotations

import pytest
from helpers.fake_vllm import FakeVLLM
from helpers.serve_sim import openai_profile

from deliberation.inference import make_client
from deliberation.inference.base import Message, StructuredOutput
from deliberation.inference.generation import StageSettings, generation_settings, stage_request
from deliberation.inference.vllm_offline import VLLMBackend
from deliberation.profiles.profile import Profile, Sampling, load_profile
from deliberation.testing import sim_server_in_thread

PROFILE_SAMPLING = Sampling(temperature=0.35, top_p=0.85, max_tokens=77)


def _with_sampling(profile: Profile, seed: int = 12) -> Profile:
    return profile.model_copy(update={"sampling": PROFILE_SAMPLING, "seed": seed})


def test_profile_values_fill_every_field_the_stage_leaves_unset():
    profile = _with_sampling(load_profile("sim"))
    settings = generation_settings(profile, StageSettings("echo"))
    assert (settings["temperature"], settings["top_p"], settings["max_tokens"]) == (0.35, 0.85, 77)
    assert settings["seed"] == 12 and settings["stage"] == "echo"


def test_a_stage_overrides_only_what_it_sets_and_a_call_seed_wins():
    profile = _with_sampling(load_profile("sim"))
    choices = StructuredOutput(choices=("yes", "no"))
    stage = StageSettings("draft", temperature=0.7, seed=5, structured=choices)
    request = stage_request(profile, stage, "hi", system="be brief", sample=2)
    assert (request.temperature, request.top_p, request.max_tokens) == (0.7, 0.85, 77)
    assert request.seed == 5 and request.sample == 2 and request.structured == choices
    assert [m.role for m in request.messages] == ["system", "user"]
    assert stage_request(profile, stage, "hi", seed=9).seed == 9


def test_a_conversation_is_sent_as_given():
    profile = load_profile("sim")
    turns = (Message("system", "s"), Message("user", "u"), Message("assistant", "a"))
    assert stage_request(profile, StageSettings("echo"), turns).messages == turns
    with pytest.raises(ValueError, match="system"):
        stage_request(profile, StageSettings("echo"), turns, system="s")


@pytest.mark.parametrize(
    "stage, bad",
    [
        ("s", {"temperature": -1.0}),
        ("s", {"top_p": 0.0}),
        ("s", {"top_p": 1.5}),
        ("s", {"max_tokens": 0}),
        ("", {}),
    ],
)
def test_impossible_stage_settings_are_rejected(stage, bad):
    with pytest.raises(ValueError):
        StageSettings(stage, **bad)


def test_profile_sampling_arrives_in_the_body_serve_sim_receives(tmp_path):
    with sim_server_in_thread() as server:
        received = []
        answer = server.state.backend.answer
        server.state.backend.answer = lambda request: received.append(request) or answer(request)
        profile = _with_sampling(openai_profile(server.base_url))
        client = make_client(profile, cache_file=tmp_path / "c.sqlite", progress=False)
        request = stage_request(profile, StageSettings("echo"), "hello")
        (response,) = client.generate([request])
    assert response.ok
    (seen,) = received
    assert (seen.temperature, seen.top_p, seen.max_tokens) == (0.35, 0.85, 77)
    assert seen.seed == 12


def test_profile_sampling_arrives_in_vllm_sampling_params(monkeypatch):
    FakeVLLM().install(monkeypatch)
    profile = _with_sampling(load_profile("qwen2.5-7b-vllm"))
    backend = VLLMBackend.from_profile(profile)
    params = backend.sampling_params(stage_request(profile, StageSettings("echo"), "hello"))
    assert (params.kwargs["temperature"], params.kwargs["top_p"]) == (0.35, 0.85)
    assert params.kwargs["max_tokens"] == 77 and params.kwargs["seed"] == 12


def test_shipped_profiles_send_their_own_max_tokens():
    for name in ("qwen2.5-7b-vllm", "deepseek-v4.1-flash-api"):
        profile = load_profile(name)
        request = stage_request(profile, StageSettings("echo"), "x")
        assert request.max_tokens == profile.sampling.max_tokens == 1024
