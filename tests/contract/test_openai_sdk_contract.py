"""The ``openai`` backend against the ``openai`` SDK's own types (issue 34, item 2).

Every request body the backend builds, for every stage of every shipped ``openai``-backend
profile (built by the plan at smoke size: what a run sends) and in every structured-output
mode, validates as the SDK's ``CompletionCreateParamsNonStreaming``; the keys the SDK's types do
not define are exactly the mode's own dialect fields (which the SDK sends only as
``extra_body``, and which a server of another dialect ignores or refuses: see
``inference/structured.py``). Every reply the backend accepts, and every HTTP-200 reply it maps
to a failure, parses as the SDK's ``ChatCompletion`` under full validation (the SDK itself only
*constructs* replies, unvalidated); the error bodies of the fake servers parse as its
``ErrorObject``.
"""

from __future__ import annotations

import json

import pytest
from helpers.openai_types import unknown_keys
from openai.types.chat import ChatCompletion
from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
from openai.types.shared import ErrorObject

from deliberation.inference.base import ChatRequest, StructuredOutput
from deliberation.inference.openai_api import OpenAIBackend, _AttemptFailed
from deliberation.inference.serve_sim.server import _error, answer_body
from deliberation.inference.structured import SERVER_STRUCTURED_MODES
from deliberation.paper.stage_examples import stage_examples
from deliberation.profiles.profile import load_profile, shipped_profiles
from deliberation.testing import sim_server_in_thread

OPENAI_PROFILES = [n for n in shipped_profiles() if load_profile(n).backend == "openai"]

# The keys outside the SDK's request types each mode adds, by constraint kind: the dialect's
# own fields, sent as the SDK's extra_body (the backend posts the body as is).
DIALECT_EXTRAS = {
    "structured_outputs": {"choice": {"body.structured_outputs"}, "json": {"body.structured_outputs"}},
    "guided": {"choice": {"body.guided_choice"}, "json": {"body.guided_json"}},
    "response_format": {},
    "json_object": {},
    "json_object_schema": {"choice": {"body.response_format.schema"},
                           "json": {"body.response_format.schema"}},
    "grammar": {"choice": {"body.grammar"}, "json": {"body.json_schema"}},
    "none": {},
}  # fmt: skip


def sampling_of(name: str) -> tuple:
    """What a profile's requests depend on besides the mode (profiles sharing it share them)."""
    profile = load_profile(name)
    return (profile.sampling.model_dump_json(), profile.seed)


@pytest.fixture(scope="module")
def examples() -> dict[tuple, dict]:
    """Stage examples per distinct sampling section (one plan each: a few seconds)."""
    built: dict[tuple, dict] = {}
    for name in OPENAI_PROFILES:
        key = sampling_of(name)
        if key not in built:
            built[key] = stage_examples(name)
    return built


def backend(name: str, mode: str | None = None) -> OpenAIBackend:
    profile = load_profile(name)
    built = OpenAIBackend.for_planning(profile)
    if mode is not None:
        built.structured_output = mode
    return built


def test_every_stage_of_every_openai_profile_is_planned(examples) -> None:
    assert {"deepseek-v4-pro-api", "vllm-serve-local", "smollm2-135m-llamacpp"} <= set(
        OPENAI_PROFILES
    )
    for requests in examples.values():
        stages = {stage for stage, _ in requests}
        kinds = {kind for _, kind in requests}
        assert {"crossprofile.decision", "dhd.recruiter", "dhd.judge", "smoke.arithmetic"} <= stages
        assert kinds == {"choice", "json", "free"}


@pytest.mark.parametrize("mode", SERVER_STRUCTURED_MODES)
@pytest.mark.parametrize("name", OPENAI_PROFILES)
def test_request_bodies_are_sdk_requests_with_only_the_dialects_extras(name, mode, examples):
    sender = backend(name, mode)
    for (stage, kind), request in examples[sampling_of(name)].items():
        body = sender.request_body(request)
        extras = set(unknown_keys(body, CompletionCreateParamsNonStreaming))
        expected = DIALECT_EXTRAS[mode].get(kind, set())
        assert extras == expected, f"{name} {mode} {stage}: {sorted(extras)}"
        assert json.loads(json.dumps(body)) == body  # plain JSON, as sent


@pytest.mark.parametrize("name", OPENAI_PROFILES)
def test_each_profiles_own_mode_sends_sdk_fields_or_its_dialects(name, examples) -> None:
    sender = backend(name)
    modes = DIALECT_EXTRAS[sender.structured_output]
    for (stage, kind), request in examples[sampling_of(name)].items():
        extras = set(unknown_keys(sender.request_body(request), CompletionCreateParamsNonStreaming))
        assert extras == modes.get(kind, set()), f"{name} {stage}"


def test_the_strict_reading_finds_an_unknown_key_and_a_wrong_type() -> None:
    """The check can fail: a key the SDK does not define is named, a wrong type raises."""
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": "x", "nmae": 1}],
        "tempreature": 0,
    }
    assert unknown_keys(body, CompletionCreateParamsNonStreaming) == [
        "body.tempreature", "body.messages[0].nmae"
    ]  # fmt: skip
    with pytest.raises(ValueError):
        unknown_keys({"model": "m", "messages": [{"role": "robot", "content": "x"}]},
                     CompletionCreateParamsNonStreaming)  # fmt: skip
    with pytest.raises(ValueError):
        unknown_keys({"model": "m", "messages": [], "max_tokens": "8"},
                     CompletionCreateParamsNonStreaming)  # fmt: skip


def reply(message: dict, finish: str = "stop") -> dict:
    return {
        "id": "x", "object": "chat.completion", "created": 0, "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", **message},
                     "finish_reason": finish}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }  # fmt: skip


TOOL_CALL = {"id": "t", "type": "function", "function": {"name": "f", "arguments": "{}"}}
# HTTP-200 replies the backend maps to a failure (tests/inference/test_failed_calls_openai.py).
NO_ANSWER = {
    "tool call": reply({"content": None, "tool_calls": [TOOL_CALL]}, "tool_calls"),
    "refusal": reply({"content": None, "refusal": "I can't help with that."}),
    "content filter": reply({"content": None}, "content_filter"),
    "filter with text": reply({"content": "partial"}, "content_filter"),
    "null content": reply({"content": None}),
    "no choices": {**reply({"content": "x"}), "choices": []},
}
# Replies that are answers: an empty one and a cut one too (counted invalid by the parsers).
ANSWERS = {
    "text": reply({"content": "Answer: 1"}),
    "empty": reply({"content": ""}),
    "cut": reply({"content": "Answer: 1"}, "length"),
    "no usage": {k: v for k, v in reply({"content": "1"}).items() if k != "usage"},
}
CHOICE = ChatRequest.from_prompt("Pick.", structured=StructuredOutput(choices=("A", "B")))


@pytest.mark.parametrize("case", sorted(ANSWERS))
def test_answers_the_backend_accepts_are_valid_sdk_replies(case) -> None:
    ChatCompletion.model_validate(ANSWERS[case])
    assert OpenAIBackend._to_response(CHOICE, ANSWERS[case]).error is None


@pytest.mark.parametrize("case", sorted(NO_ANSWER))
def test_replies_mapped_to_failures_are_valid_sdk_replies_too(case) -> None:
    """Each is a well-formed ChatCompletion, so the failure is ours to decide (no answer in it),
    not a parse error of the SDK's."""
    ChatCompletion.model_validate(NO_ANSWER[case])
    with pytest.raises(_AttemptFailed):
        OpenAIBackend._to_response(CHOICE, NO_ANSWER[case])


def test_serve_sims_replies_to_every_stage_are_valid_sdk_replies(examples) -> None:
    """serve-sim (the stand-in for every OpenAI-compatible server in the tests) answers each
    stage's body, in each mode it decodes, with a reply the SDK validates in full."""
    requests = examples[sampling_of("vllm-serve-local")]
    with sim_server_in_thread() as sim:
        for mode in ("structured_outputs", "response_format", "json_object_schema", "none"):
            sender = backend("vllm-serve-local", mode)
            for (stage, _), request in requests.items():
                body = answer_body(sim.state, sender.request_body(request), stage)
                completion = ChatCompletion.model_validate(body)
                assert completion.choices[0].message.content is not None, (mode, stage)


def test_error_bodies_of_the_fake_servers_are_sdk_error_objects() -> None:
    """serve-sim's and the failing server's error bodies ({"error": {...}}) are the SDK's
    ErrorObject, the shape the backend's failure reasons read the message from; but for
    ``code``, which serve-sim sends as vLLM does (an integer: vLLM's ErrorInfo.code) where
    OpenAI's is a string (the SDK keeps error bodies as plain dicts, so both reach us)."""
    for body in (
        _error("rate limited", "rate_limit_error", 429),
        {"error": {"message": "injected: the server is broken", "type": "server_error"}},
    ):
        error = {k: v for k, v in body["error"].items() if not (k == "code" and isinstance(v, int))}
        assert ErrorObject.model_validate(error).message == body["error"]["message"]
