"""Wire decoding is the inverse of wire encoding: what the openai backend sends, serve-sim
rebuilds into the same request (structured output in every mode, every sampling field)."""

from __future__ import annotations

import json

import pytest

from deliberation.inference.base import ChatRequest, Message, StructuredOutput
from deliberation.inference.openai_api import OpenAIBackend
from deliberation.inference.serve_sim.wire import (
    WireFormatError,
    request_from_body,
    structured_from_wire,
)
from deliberation.inference.sim import sent_fields
from deliberation.inference.structured import (
    SERVER_STRUCTURED_MODES,
    choice_grammar,
    openai_structured_extra_body,
)

SCHEMA = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}
SPECS = [StructuredOutput(choices=("a", "b")), StructuredOutput(json_schema=SCHEMA)]
# Modes that carry the spec itself; json_object carries only "some JSON", none carries nothing.
LOSSLESS = ("structured_outputs", "guided", "response_format", "json_object_schema", "grammar")
# Modes that carry a choice list as a one-field object schema, answered as {"answer": choice}.
WRAPPED = ("response_format", "json_object_schema")


@pytest.mark.parametrize("mode", SERVER_STRUCTURED_MODES)
@pytest.mark.parametrize("spec", SPECS, ids=["choices", "schema"])
def test_structured_output_decodes_to_what_was_encoded(mode, spec) -> None:
    recovered, wrapped = structured_from_wire(openai_structured_extra_body(spec, mode))
    if mode in LOSSLESS:
        assert recovered is not None
        assert recovered.to_dict() == json.loads(json.dumps(spec.to_dict()))
        assert wrapped == (mode in WRAPPED and spec.choices is not None)
    else:
        assert (recovered, wrapped) == (None, False)


def test_a_body_without_structured_fields_has_no_spec() -> None:
    assert structured_from_wire({}) == (None, False)


@pytest.mark.parametrize("mode", LOSSLESS)
@pytest.mark.parametrize("spec", [None, *SPECS], ids=["free", "choices", "schema"])
def test_the_request_body_decodes_to_the_request_the_sim_sees(mode, spec) -> None:
    backend = OpenAIBackend(model="m", base_url="http://127.0.0.1:9/v1", structured_output=mode)
    request = ChatRequest(
        messages=(Message("system", "be brief"), Message("user", "2 + 2?")),
        stage="smoke.arithmetic",
        temperature=0.7,
        top_p=0.9,
        max_tokens=33,
        seed=11,
        sample=3,
        structured=spec,
    )
    body = json.loads(json.dumps(backend.request_body(request)))  # as it travels
    decoded, _ = request_from_body(body, request.stage)
    assert decoded.stage == request.stage
    assert sent_fields(decoded) == json.loads(json.dumps(sent_fields(request)))


@pytest.mark.parametrize(
    "choices",
    [("A1", "B2"), ('say "yes"', "back\\slash", "two\nlines\tand tab"), ("Ünïcode ✓", "x")],
)
def test_a_choice_grammar_decodes_to_its_options_whatever_they_contain(choices) -> None:
    recovered, wrapped = structured_from_wire({"grammar": choice_grammar(choices)})
    assert recovered == StructuredOutput(choices=choices) and not wrapped


def test_serve_sim_refuses_a_grammar_it_did_not_write() -> None:
    with pytest.raises(WireFormatError, match="grammar"):
        structured_from_wire({"grammar": "root ::= [a-z]+"})
