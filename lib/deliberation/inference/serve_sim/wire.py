"""Decoding a chat-completions request body back into the :class:`ChatRequest` it came from.

The inverse of ``OpenAIBackend.request_body`` (and, for structured output, of
``structured.openai_structured_extra_body``: :func:`structured_from_wire` reads every dialect),
so serve-sim answers exactly what the in-process sim would answer for the same request.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from deliberation.inference.base import ChatRequest, Message, StructuredOutput, unencodable_text
from deliberation.inference.structured import (
    CHOICE_FIELD,
    CHOICE_WRAPPER_TOKENS,
    choice_grammar,
    choice_schema,
)

_DEFAULT_MAX_TOKENS = 512


class WireFormatError(ValueError):
    """A request body field that does not decode (the message names the field)."""


def _choice_list(value: Any, field: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or not all(isinstance(c, str) for c in value):
        raise WireFormatError(f"{field}: expected a non-empty list of strings")
    return tuple(value)


def _json_schema(value: Any, field: str) -> StructuredOutput:
    if not isinstance(value, Mapping):
        raise WireFormatError(f"{field}: expected a JSON schema object")
    try:
        return StructuredOutput(json_schema=value)
    except ValueError as exc:
        raise WireFormatError(f"{field}: {exc}") from None


def _wrapped_choices(schema: Mapping[str, Any]) -> tuple[str, ...] | None:
    """The choices if ``schema`` is exactly ``choice_schema`` of them, else None."""
    properties = schema.get("properties")
    if not isinstance(properties, Mapping) or set(properties) != {CHOICE_FIELD}:
        return None
    field = properties[CHOICE_FIELD]
    enum = field.get("enum") if isinstance(field, Mapping) else None
    if not isinstance(enum, list) or not enum or not all(isinstance(c, str) for c in enum):
        return None
    return tuple(enum) if dict(schema) == choice_schema(enum) else None


def structured_from_wire(body: Mapping[str, Any]) -> tuple[StructuredOutput | None, bool]:
    """The inverse of ``openai_structured_extra_body``: the structured-output spec a request
    body carries in any of its dialects, and whether the answer must be wrapped as
    ``{"answer": choice}`` (a choice list sent as a schema). ``json_object`` mode carries no
    schema, so it decodes to no spec. Raises :class:`WireFormatError` naming the
    field for a malformed spec."""
    spec = body.get("structured_outputs")
    if spec is not None:
        if not isinstance(spec, Mapping):
            raise WireFormatError("structured_outputs: expected an object")
        if spec.get("choice") is not None:
            return StructuredOutput(
                choices=_choice_list(spec["choice"], "structured_outputs.choice")
            ), False
        if spec.get("json") is not None:
            return _json_schema(spec["json"], "structured_outputs.json"), False
        raise WireFormatError("structured_outputs: expected a 'choice' or 'json' field")
    if body.get("guided_choice") is not None:
        return StructuredOutput(choices=_choice_list(body["guided_choice"], "guided_choice")), False
    if body.get("guided_json") is not None:
        return _json_schema(body["guided_json"], "guided_json"), False
    if body.get("grammar") is not None:
        return StructuredOutput(choices=_grammar_choices(body["grammar"])), False
    if body.get("json_schema") is not None:
        return _json_schema(body["json_schema"], "json_schema"), False
    response_format = body.get("response_format")
    if response_format is None:
        return None, False
    if not isinstance(response_format, Mapping):
        raise WireFormatError("response_format: expected an object")
    if response_format.get("type") == "json_object" and "schema" in response_format:
        return _schema_or_wrapped(response_format["schema"], "response_format.schema")
    if response_format.get("type") != "json_schema":
        return None, False
    wrapper = response_format.get("json_schema")
    schema = wrapper.get("schema") if isinstance(wrapper, Mapping) else None
    return _schema_or_wrapped(schema, "response_format.json_schema.schema")


def _schema_or_wrapped(schema: Any, field: str) -> tuple[StructuredOutput, bool]:
    """A schema field: a wrapped choice list (answered as ``{"answer": choice}``) or a schema."""
    if not isinstance(schema, Mapping):
        raise WireFormatError(f"{field}: expected a JSON schema object")
    choices = _wrapped_choices(schema)
    if choices is not None:
        return StructuredOutput(choices=choices), True
    return _json_schema(schema, field), False


_GBNF_LITERAL = re.compile(r'"((?:[^"\\]|\\.)*)"')
_GBNF_ESCAPES = {"\\": "\\", '"': '"', "n": "\n", "r": "\r", "t": "\t"}


def _grammar_choices(grammar: Any) -> tuple[str, ...]:
    """The options of a choice grammar (``root ::= "A" | "B"``, as ``choice_grammar`` writes
    it); serve-sim decodes no other grammar."""
    if isinstance(grammar, str) and grammar.startswith("root ::= "):
        literals = _GBNF_LITERAL.findall(grammar)
        choices = tuple(
            re.sub(r"\\(.)", lambda m: _GBNF_ESCAPES.get(m.group(1), m.group(1)), literal)
            for literal in literals
        )
        if choices and choice_grammar(choices) == grammar:
            return choices
    raise WireFormatError(
        'grammar: serve-sim reads only choice grammars of the form root ::= "A" | "B"'
    )


def _messages(body: Mapping[str, Any]) -> tuple[Message, ...]:
    raw = body.get("messages")
    if not isinstance(raw, list) or not raw:
        raise WireFormatError("messages: expected a non-empty list")
    messages = []
    for index, item in enumerate(raw):
        if not isinstance(item, Mapping) or item.get("role") not in ("system", "user", "assistant"):
            raise WireFormatError(
                f"messages[{index}]: expected a role of system, user or assistant"
            )
        if not isinstance(item.get("content"), str):
            raise WireFormatError(f"messages[{index}].content: expected a string")
        messages.append(Message(item["role"], item["content"]))
    return tuple(messages)


def _number(body: Mapping[str, Any], name: str, default: float) -> float:
    value = body.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise WireFormatError(f"{name}: expected a finite number, got {value!r}")
    return value


def _integer(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise WireFormatError(f"{name}: expected an integer, got {value!r}")
    return value


def request_from_body(body: Mapping[str, Any], stage: str) -> tuple[ChatRequest, bool]:
    """The request a body stands for (``stage`` travels in a header), and whether a choice
    answer must be wrapped as ``{"answer": choice}``. Raises :class:`WireFormatError` naming the
    field for anything a real server would refuse: a malformed field, a parameter out of range
    (``max_tokens`` < 1, ``temperature`` < 0, ``top_p`` outside (0, 1], non-finite numbers;
    never silently replaced by a default) or text that is not valid Unicode."""
    bad_text = unencodable_text(body)
    if bad_text is not None:
        raise WireFormatError(f"{bad_text.removeprefix('body.')} (not valid Unicode text)")
    messages = _messages(body)
    structured, wrap_choice = structured_from_wire(body)
    temperature = _number(body, "temperature", 1.0)
    if temperature < 0:
        raise WireFormatError(f"temperature: must be >= 0, got {temperature!r}")
    top_p = _number(body, "top_p", 1.0)
    if not 0 < top_p <= 1:
        raise WireFormatError(f"top_p: must be in (0, 1], got {top_p!r}")
    name = "max_tokens" if "max_tokens" in body else "max_completion_tokens"
    raw_max = body.get(name)
    max_tokens = _DEFAULT_MAX_TOKENS if raw_max is None else _integer(raw_max, name)
    if max_tokens < 1:
        raise WireFormatError(f"{name}: must be >= 1, got {max_tokens}")
    if wrap_choice and max_tokens > CHOICE_WRAPPER_TOKENS:  # the inverse of wire_max_tokens
        max_tokens -= CHOICE_WRAPPER_TOKENS
    seed = body.get("seed")
    if seed is not None:
        seed = _integer(seed, "seed")
    request = ChatRequest(
        messages=messages,
        stage=stage,
        temperature=temperature,
        top_p=top_p,
        max_tokens=max_tokens,
        seed=seed,  # the wire seed has any sample index folded in already (sample stays 0)
        structured=structured,
    )
    return request, wrap_choice


def last_user_text(body: Mapping[str, Any]) -> str:
    """The prompt a request is counted under in ``/stats`` (its last user message)."""
    raw = body.get("messages")
    if isinstance(raw, list):
        for item in reversed(raw):
            if isinstance(item, Mapping) and item.get("role") == "user":
                return str(item.get("content", ""))
    return ""
