"""JSON answers are validated against their schema (jsonschema), not just their top-level type:
a server in ``json_object`` mode (DeepSeek) enforces nothing, so the check happens here."""

from __future__ import annotations

import pytest

from deliberation.inference.base import StructuredOutput
from deliberation.inference.structured_answers import parse_structured_text

SPEC = StructuredOutput(
    json_schema={
        "type": "object",
        "properties": {
            "answer": {"type": "string", "enum": ["A", "B"]},
            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        },
        "required": ["answer"],
        "additionalProperties": False,
    }
)


def test_an_answer_that_meets_the_schema_parses():
    assert parse_structured_text(SPEC, '{"answer": "A", "confidence": 0.5}') == {
        "answer": "A",
        "confidence": 0.5,
    }


@pytest.mark.parametrize(
    "text",
    [
        "{}",  # required property missing
        '{"answer": "C"}',  # outside the enum
        '{"answer": "A", "confidence": 2}',  # above the maximum
        '{"answer": "A", "extra": 1}',  # additional property
        '{"answer": 1}',  # wrong nested type
    ],
)
def test_an_answer_of_the_right_type_that_breaks_the_schema_is_invalid(text):
    assert parse_structured_text(SPEC, text) is None


def test_a_schema_that_is_not_a_schema_is_rejected_when_the_request_is_built():
    with pytest.raises(ValueError, match="not a JSON schema"):
        StructuredOutput(json_schema={"type": "no-such-type"})
