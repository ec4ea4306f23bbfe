"""llama.cpp's two structured-output dialects on the wire, and answers read from the JSON.

llama-cpp-python's server takes ``response_format: {"type": "json_object", "schema": ...}`` (and
refuses ``json_schema`` with HTTP 500); llama.cpp's ``llama-server`` takes a GBNF ``grammar`` and a
``json_schema`` field. These tests pin the exact body each mode sends and read answers back.
"""

from __future__ import annotations

import json

import pytest
from helpers.serve_sim import openai_profile

from deliberation.inference.base import ChatRequest, StructuredOutput
from deliberation.inference.openai_api import OpenAIBackend
from deliberation.inference.structured import (
    CHOICE_WRAPPER_TOKENS,
    SERVER_STRUCTURED_MODES,
    choice_grammar,
    choice_schema,
    vllm_server_mode_problem,
)
from deliberation.inference.structured_answers import parse_structured_text
from deliberation.seeds import SEED_MODULUS
from deliberation.testing import sim_server_in_thread

SCHEMA = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}
CHOICES = ("Ashgrove Academy", "Birchwood College", 'the "other" one')


def _body(mode: str, structured: StructuredOutput) -> dict:
    backend = OpenAIBackend(model="m", base_url="http://127.0.0.1:9/v1", structured_output=mode)
    request = ChatRequest.from_prompt("pick", stage="echo", structured=structured)
    return json.loads(json.dumps(backend.request_body(request)))  # as it travels


def test_llama_cpp_python_gets_a_choice_list_as_an_enum_property_in_json_object_mode() -> None:
    body = _body("json_object_schema", StructuredOutput(choices=CHOICES))
    assert body["response_format"] == {"type": "json_object", "schema": choice_schema(CHOICES)}
    assert body["response_format"]["schema"]["properties"]["answer"]["enum"] == list(CHOICES)
    # Nothing the server refuses (json_schema) or ignores (vLLM's fields) travels with it.
    assert not {"structured_outputs", "guided_choice", "grammar", "json_schema"} & set(body)


def test_llama_cpp_python_gets_a_json_schema_in_json_object_mode() -> None:
    body = _body("json_object_schema", StructuredOutput(json_schema=SCHEMA))
    assert body["response_format"] == {"type": "json_object", "schema": SCHEMA}


def test_llama_server_gets_a_choice_list_as_a_grammar_of_its_literal_options() -> None:
    body = _body("grammar", StructuredOutput(choices=CHOICES))
    assert body["grammar"] == (
        'root ::= "Ashgrove Academy" | "Birchwood College" | "the \\"other\\" one"'
    )
    assert "response_format" not in body and "json_schema" not in body


def test_llama_server_gets_a_json_schema_in_its_json_schema_field() -> None:
    body = _body("grammar", StructuredOutput(json_schema=SCHEMA))
    assert body["json_schema"] == SCHEMA and "grammar" not in body


def test_a_grammar_escapes_what_gbnf_would_read_as_syntax() -> None:
    assert choice_grammar(["a\\b", "c\nd"]) == 'root ::= "a\\\\b" | "c\\nd"'


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"answer": "Birchwood College"}', "Birchwood College"),  # json_object_schema reply
        ('  {"answer":"Ashgrove Academy"}\n', "Ashgrove Academy"),
        ("Birchwood College", "Birchwood College"),  # grammar reply: the option itself
        ('{"answer": "Nowhere"}', None),  # JSON, but not an option: invalid, no fuzzy match
        ("The correct answer is: Ashgrove Academy.", None),  # what an unconstrained reply is
    ],
)
def test_the_answer_is_read_from_the_json_the_constrained_server_returns(text, expected) -> None:
    assert parse_structured_text(StructuredOutput(choices=CHOICES), text) == expected


@pytest.mark.parametrize("mode", ["json_object_schema", "grammar"])
def test_serve_sim_answers_each_llama_cpp_dialect_and_the_backend_parses_the_choice(mode) -> None:
    requests = [
        ChatRequest.from_prompt(
            f"pick {i}", stage="echo", structured=StructuredOutput(choices=CHOICES), seed=i
        )
        for i in range(6)
    ]
    with sim_server_in_thread() as handle:
        backend = OpenAIBackend.from_profile(
            openai_profile(handle.base_url, structured_output=mode, timeout_s=5.0)
        )
        responses = backend.generate(requests)
    assert all(r.ok for r in responses)
    assert all(r.parsed in CHOICES for r in responses)
    if mode == "json_object_schema":  # the reply is the JSON object, read back to the option
        assert all(json.loads(r.text) == {"answer": r.parsed} for r in responses)
    else:
        assert all(r.text == r.parsed for r in responses)


@pytest.mark.parametrize("mode", ["json_object_schema", "response_format"])
def test_a_choice_wrapped_in_json_gets_room_for_the_wrapper_beside_its_own_cap(mode) -> None:
    """The DHD judge caps its answer at 8 tokens; '{"answer": "not equivalent"}' needs more."""
    backend = OpenAIBackend(model="m", base_url="http://127.0.0.1:9/v1", structured_output=mode)
    choice = ChatRequest.from_prompt(
        "judge", structured=StructuredOutput(choices=CHOICES), max_tokens=8
    )
    schema = ChatRequest.from_prompt(
        "json", structured=StructuredOutput(json_schema=SCHEMA), max_tokens=8
    )
    assert backend.request_body(choice)["max_tokens"] == 8 + CHOICE_WRAPPER_TOKENS
    assert backend.request_body(schema)["max_tokens"] == 8
    grammar = OpenAIBackend(
        model="m", base_url="http://127.0.0.1:9/v1", structured_output="grammar"
    )
    assert grammar.request_body(choice)["max_tokens"] == 8  # the option itself, no wrapper


def test_the_smoke_notebook_asks_for_its_answer_as_constrained_json_and_reads_it() -> None:
    from deliberation.experiments import smoke
    from deliberation.profiles.profile import load_profile

    profile = load_profile("smoke")
    (request,) = smoke.arithmetic_requests(profile, smoke.arithmetic_items(1, seed=0))
    assert request.structured == StructuredOutput(json_schema=smoke.ANSWER_SCHEMA)
    body = _body("json_object_schema", request.structured)
    assert body["response_format"]["schema"]["properties"]["answer"] == {"type": "integer"}
    assert smoke.parse_answer('{"answer": 149}') == 149
    assert smoke.parse_answer('{"answer": "149"}') is None  # not the schema's integer
    assert smoke.parse_answer("85 + 63 = 149") is None  # what an unconstrained 135M model says


def test_a_seed_past_the_engines_integer_range_is_folded_but_not_for_llama_cpp() -> None:
    """vLLM's server refuses a seed above 2**63 - 1 (HTTP 400; the contract lane found every
    such DHD hypothesizer request refused): every mode but llama.cpp's sends it folded below
    SEED_MODULUS, where llama.cpp reads any integer and published answers keep their keys."""
    big = 2**63 + 12_345  # stable seeds are unsigned 64-bit
    request = ChatRequest.from_prompt("x", stage="dhd.hypothesizer", seed=big)
    small = ChatRequest.from_prompt("x", stage="dhd.hypothesizer", seed=7)
    for mode in SERVER_STRUCTURED_MODES:
        backend = OpenAIBackend(model="m", base_url="http://127.0.0.1:9/v1", structured_output=mode)
        sent = backend.request_body(request)["seed"]
        if mode in ("json_object_schema", "grammar"):
            assert sent == big, mode
        else:
            assert sent == big % SEED_MODULUS and 0 <= sent < 2**31, mode
        assert backend.request_body(small)["seed"] == 7


@pytest.mark.parametrize(
    ("version", "mode", "fix"),
    [
        ("0.10.2", "structured_outputs", "guided"),  # measured: no structured_outputs field
        ("0.10.2", "guided", None),
        ("0.11.0", "structured_outputs", None),  # read from its wheel: both fields
        ("0.11.0", "guided", None),
        ("0.12.0", "guided", "structured_outputs"),  # guided_* removed in v0.12.0
        ("0.33.0+cpu", "guided", "structured_outputs"),  # measured: guided_* dropped
        ("0.33.0", "structured_outputs", None),
        ("0.10.2", "response_format", None),
        ("not a version", "guided", None),
    ],
)
def test_which_vllm_release_drops_which_modes_fields(version, mode, fix) -> None:
    problem = vllm_server_mode_problem(version, mode)
    if fix is None:
        assert problem is None
    else:
        assert f"set openai.structured_output: {fix}" in problem and version in problem
