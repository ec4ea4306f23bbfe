"""Reading a constrained answer back into a value: a choice, or JSON that validates.

Shared by every backend (the offline vLLM engine and every OpenAI-compatible dialect in
:mod:`deliberation.inference.structured`), and by :class:`~deliberation.inference.base.StructuredOutput`,
which checks its schema with :func:`schema_validator`; so this module imports
nothing else of the inference layer.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from typing import Any, Protocol

import jsonschema


class _StructuredSpec(Protocol):
    """What parsing reads of a request's structured output (``base.StructuredOutput``, which
    imports this module to check its schema, so it is described here rather than imported)."""

    @property
    def choices(self) -> tuple[str, ...] | None: ...

    @property
    def json_schema(self) -> dict[str, Any] | None: ...


# Where a schema-only dialect carries a choice: ``{"answer": <one of the choices>}`` (OpenAI's
# strict mode, llama.cpp's JSON mode: both accept only an object at the top level).
CHOICE_FIELD = "answer"

_FENCE = re.compile(r"^```[A-Za-z0-9_-]*\s*\n?(.*?)\n?\s*```$", re.DOTALL)
_UNPARSED = object()


def plain_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A deep plain-dict copy (mapping proxies and tuples become dicts and lists), so engines
    that serialise the schema never see a type they cannot encode and never share our object."""

    def plain(value: Any) -> Any:
        if isinstance(value, Mapping):
            return {str(key): plain(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [plain(item) for item in value]
        return value

    return json.loads(json.dumps(plain(schema)))


def schema_validator(schema: Mapping[str, Any]) -> jsonschema.protocols.Validator:
    """A validator for ``schema`` in the draft it declares (latest draft when it declares none);
    raises ``jsonschema.SchemaError`` for a schema that is not valid itself."""
    return _validator(json.dumps(plain_schema(schema), sort_keys=True))


@functools.lru_cache(maxsize=256)
def _validator(canonical: str) -> jsonschema.protocols.Validator:
    """One checked validator per distinct schema: checking a schema costs far more than using
    it, and every structured request and every parsed answer asks for one."""
    plain = json.loads(canonical)
    validator_class = jsonschema.validators.validator_for(plain)
    validator_class.check_schema(plain)
    return validator_class(plain)


def _loads(text: str) -> Any:
    """Decode JSON, also from inside one Markdown code fence; ``_UNPARSED`` when it is not JSON."""
    candidate = text.strip()
    for attempt in (candidate, _unfence(candidate)):
        if attempt is None:
            continue
        try:
            return json.loads(attempt)
        except ValueError:
            continue
    return _UNPARSED


def _unfence(text: str) -> str | None:
    match = _FENCE.match(text)
    return match.group(1).strip() if match else None


def parse_structured_text(structured: _StructuredSpec | None, text: str) -> Any:
    """The value a structured answer stands for, or ``None`` when it does not parse.

    A choice spec yields the chosen string: the text itself (whitespace stripped), a JSON string,
    or ``{"answer": choice}`` (the ``choice_schema`` form); anything else is ``None``, with
    no fuzzy matching (that belongs to the experiment's own answer parser). A JSON-schema spec
    yields the decoded JSON (also from a Markdown code fence) if it validates against the schema
    (``jsonschema``: servers in ``json_object`` mode enforce nothing). ``None`` for no spec.
    An unparseable answer is still a valid response: the experiment layer counts it as invalid.
    """
    if structured is None:
        return None
    if structured.choices is not None:
        choices = structured.choices
        stripped = text.strip()
        if stripped in choices:
            return stripped
        value = _loads(stripped)
        if isinstance(value, str) and value in choices:
            return value
        if isinstance(value, dict) and len(value) == 1:
            chosen = value.get(CHOICE_FIELD)
            if isinstance(chosen, str) and chosen in choices:
                return chosen
        return None
    assert structured.json_schema is not None
    value = _loads(text)
    if value is _UNPARSED or not schema_validator(structured.json_schema).is_valid(value):
        return None
    return value
