"""The one structured-output compatibility shim (offline vLLM and OpenAI-compatible servers),
plus the parser that turns a constrained answer back into a value.

vLLM renamed its structured-output API inside the range we pin (``vllm>=0.10.2,<0.34``):

* Offline, old: ``SamplingParams(guided_decoding=GuidedDecodingParams(choice=... | json=...))``.
* Offline, new: ``SamplingParams(structured_outputs=StructuredOutputsParams(choice=... | json=...))``,
  from vLLM PR #22772 ("Cleanup guided namespace, move to structured outputs config", merged
  2025-08-13, first released in v0.10.2; e.g. huggingface/trl#5215 switches on "pre- and
  post-0.10.2"). ``GuidedDecodingParams`` was later removed (vllm-project/vllm#29326, late 2025).
* Server, old: top-level ``guided_choice`` / ``guided_json`` request fields.
* Server, new: ``{"structured_outputs": {"choice": [...]}}`` / ``{"structured_outputs": {"json":
  schema}}``. The vLLM docs (docs.vllm.ai, features/structured_outputs) say the ``guided_*``
  fields "were removed in v0.12.0"; newer servers ignore them *silently* and answer
  unconstrained (noted in noonghunna/club-3090#551), so pick the mode that matches the server.
* Server, OpenAI style (vLLM and OpenAI): ``response_format={"type": "json_schema",
  "json_schema": {"name": ..., "schema": ...}}`` (example in the same vLLM docs page).

The offline shim detects the API by feature (which class ``vllm.sampling_params`` exports),
never by parsing version strings.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any, Literal, get_args

import jsonschema

from deliberation.inference.base import StructuredOutput

VLLMStructuredAPI = Literal["structured_outputs", "guided_decoding"]
ServerStructuredMode = Literal[
    "structured_outputs", "guided", "response_format", "json_object", "none"
]
# The one list of modes (profiles validate against the Literal; messages quote the tuple).
SERVER_STRUCTURED_MODES: tuple[str, ...] = get_args(ServerStructuredMode)

# A choice list sent as an OpenAI-style JSON schema is wrapped in an object with this one field,
# because OpenAI's strict mode only accepts an object at the top level.
CHOICE_FIELD = "answer"
RESPONSE_FORMAT_NAME = "answer"


def _plain_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A deep plain-dict copy (mapping proxies and tuples become dicts and lists), so engines
    that serialise the schema never see a type they cannot encode and never share our object."""

    def plain(value: Any) -> Any:
        if isinstance(value, Mapping):
            return {str(key): plain(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [plain(item) for item in value]
        return value

    return json.loads(json.dumps(plain(schema)))


def choice_schema(choices: Sequence[str]) -> dict[str, Any]:
    """The JSON schema that stands for a choice list where only schemas are accepted:
    ``{"answer": <one of choices>}`` and nothing else."""
    return {
        "type": "object",
        "properties": {CHOICE_FIELD: {"type": "string", "enum": list(choices)}},
        "required": [CHOICE_FIELD],
        "additionalProperties": False,
    }


# ---------------------------------------------------------------------------------------------
# Offline vLLM
# ---------------------------------------------------------------------------------------------


def detect_vllm_structured_api(sampling_params_module: ModuleType) -> VLLMStructuredAPI:
    """Which structured-output API the installed ``vllm.sampling_params`` module offers
    (the new one wins when both exist, as in the releases that deprecated the old one)."""
    if hasattr(sampling_params_module, "StructuredOutputsParams"):
        return "structured_outputs"
    if hasattr(sampling_params_module, "GuidedDecodingParams"):
        return "guided_decoding"
    raise RuntimeError(
        "the installed vLLM exports neither StructuredOutputsParams nor GuidedDecodingParams "
        "from vllm.sampling_params; install a supported release with "
        "`pip install -e '.[vllm]'` (pins vllm>=0.10.2,<0.34)"
    )


def vllm_structured_kwargs(
    structured: StructuredOutput | None, sampling_params_module: ModuleType
) -> dict[str, Any]:
    """Keyword arguments for ``vllm.SamplingParams`` that enforce ``structured``:
    ``{"structured_outputs": StructuredOutputsParams(...)}`` on vLLM >= 0.10.2, else
    ``{"guided_decoding": GuidedDecodingParams(...)}``; ``{}`` when nothing is constrained."""
    if structured is None:
        return {}
    if structured.choices is not None:
        constraint: dict[str, Any] = {"choice": list(structured.choices)}
    else:
        assert structured.json_schema is not None  # guaranteed by StructuredOutput
        constraint = {"json": _plain_schema(structured.json_schema)}
    api = detect_vllm_structured_api(sampling_params_module)
    if api == "structured_outputs":
        params_class = sampling_params_module.StructuredOutputsParams
        return {"structured_outputs": params_class(**constraint)}
    params_class = sampling_params_module.GuidedDecodingParams
    return {"guided_decoding": params_class(**constraint)}


# ---------------------------------------------------------------------------------------------
# OpenAI-compatible servers
# ---------------------------------------------------------------------------------------------


def openai_structured_extra_body(
    structured: StructuredOutput | None, mode: ServerStructuredMode | str
) -> dict[str, Any]:
    """Fields to merge into a chat-completions request body so the server enforces ``structured``.

    ``mode`` names what the server understands: ``"structured_outputs"`` (vLLM >= 0.10.2),
    ``"guided"`` (vLLM < 0.12), ``"response_format"`` (OpenAI-style ``json_schema``; a choice
    list becomes :func:`choice_schema`), ``"json_object"`` (servers that only offer JSON mode,
    e.g. DeepSeek: JSON schemas get ``{"type": "json_object"}``, choices get nothing) or
    ``"none"`` (no constraint; the prompt alone asks for the format). With the ``openai``
    client pass the result as ``extra_body=``: its keys land at the top level of the JSON body.
    """
    if mode not in SERVER_STRUCTURED_MODES:
        raise ValueError(
            f"unknown structured-output mode {mode!r}; expected one of {SERVER_STRUCTURED_MODES}"
        )
    if structured is None or mode == "none":
        return {}
    choices = None if structured.choices is None else list(structured.choices)
    schema = None if structured.json_schema is None else _plain_schema(structured.json_schema)
    if mode == "structured_outputs":
        if choices is not None:
            return {"structured_outputs": {"choice": choices}}
        return {"structured_outputs": {"json": schema}}
    if mode == "guided":
        if choices is not None:
            return {"guided_choice": choices}
        return {"guided_json": schema}
    if mode == "json_object":
        return {} if choices is not None else {"response_format": {"type": "json_object"}}
    # mode == "response_format". OpenAI's strict mode needs closed object schemas (every
    # property required, additionalProperties false); choice_schema() is one.
    return {
        "response_format": {
            "type": "json_schema",
            "json_schema": {
                "name": RESPONSE_FORMAT_NAME,
                "schema": choice_schema(choices) if choices is not None else schema,
                "strict": True,
            },
        }
    }


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
    """The choices if ``schema`` is exactly :func:`choice_schema` of them, else None."""
    properties = schema.get("properties")
    if not isinstance(properties, Mapping) or set(properties) != {CHOICE_FIELD}:
        return None
    field = properties[CHOICE_FIELD]
    enum = field.get("enum") if isinstance(field, Mapping) else None
    if not isinstance(enum, list) or not enum or not all(isinstance(c, str) for c in enum):
        return None
    return tuple(enum) if dict(schema) == choice_schema(enum) else None


def structured_from_wire(body: Mapping[str, Any]) -> tuple[StructuredOutput | None, bool]:
    """The inverse of :func:`openai_structured_extra_body`: the structured-output spec a request
    body carries in any of its forms, and whether the answer must be wrapped as
    ``{"answer": choice}`` (a choice list sent as ``response_format``). ``json_object`` mode
    carries no schema, so it decodes to no spec. Raises :class:`WireFormatError` naming the
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
    response_format = body.get("response_format")
    if response_format is None:
        return None, False
    if not isinstance(response_format, Mapping):
        raise WireFormatError("response_format: expected an object")
    if response_format.get("type") != "json_schema":
        return None, False
    wrapper = response_format.get("json_schema")
    schema = wrapper.get("schema") if isinstance(wrapper, Mapping) else None
    if not isinstance(schema, Mapping):
        raise WireFormatError("response_format.json_schema.schema: expected a JSON schema object")
    choices = _wrapped_choices(schema)
    if choices is not None:
        return StructuredOutput(choices=choices), True
    return _json_schema(schema, "response_format.json_schema.schema"), False


# ---------------------------------------------------------------------------------------------
# Parsing what came back
# ---------------------------------------------------------------------------------------------

_FENCE = re.compile(r"^```[A-Za-z0-9_-]*\s*\n?(.*?)\n?\s*```$", re.DOTALL)
_UNPARSED = object()


def schema_validator(schema: Mapping[str, Any]) -> jsonschema.protocols.Validator:
    """A validator for ``schema`` in the draft it declares (latest draft when it declares none);
    raises ``jsonschema.SchemaError`` for a schema that is not valid itself."""
    return _validator(json.dumps(_plain_schema(schema), sort_keys=True))


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


def parse_structured_text(structured: StructuredOutput | None, text: str) -> Any:
    """The value a structured answer stands for, or ``None`` when it does not parse.

    A choice spec yields the chosen string: the text itself (whitespace stripped), a JSON string,
    or ``{"answer": choice}`` (the :func:`choice_schema` form); anything else is ``None``, with
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
