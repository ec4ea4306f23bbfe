"""Structured-output dialects: how a choice list or a JSON schema is asked of each engine
(offline vLLM and every OpenAI-compatible server we know). Reading the answer back is
:mod:`deliberation.inference.structured_answers`; serve-sim's decoding of a request body is
:mod:`deliberation.inference.serve_sim.wire`.

In full: ``docs/engines.md``, section "Structured-output dialects".
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal, get_args

from deliberation.inference.structured_answers import CHOICE_FIELD, plain_schema
from deliberation.seeds import SEED_MODULUS

if TYPE_CHECKING:
    from deliberation.inference.base import StructuredOutput

_VLLMStructuredAPI = Literal["structured_outputs", "guided_decoding"]
ServerStructuredMode = Literal[
    "structured_outputs",
    "guided",
    "response_format",
    "json_object",
    "json_object_schema",
    "grammar",
    "none",
]
# The one list of modes (profiles validate against the Literal; messages quote the tuple).
SERVER_STRUCTURED_MODES: tuple[str, ...] = get_args(ServerStructuredMode)

# A choice list sent as a JSON schema is wrapped in an object with one field (CHOICE_FIELD),
# because OpenAI's strict mode and llama.cpp's JSON mode only accept an object at the top level.
_RESPONSE_FORMAT_NAME = "answer"
# Modes that send a choice list as that one-field object, and the tokens its JSON adds
# ('{"answer": "' and '"}', generously): added to max_tokens, so a stage that caps its answer
# at a few tokens (the DHD judge: 8) is not cut off inside the wrapper.
WRAPPED_CHOICE_MODES = frozenset({"response_format", "json_object_schema"})
CHOICE_WRAPPER_TOKENS = 16


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


def detect_vllm_structured_api(sampling_params_module: ModuleType) -> _VLLMStructuredAPI:
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
        constraint = {"json": plain_schema(structured.json_schema)}
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
    e.g. DeepSeek: JSON schemas get ``{"type": "json_object"}``, choices get nothing),
    ``"json_object_schema"`` (llama-cpp-python's server: ``{"type": "json_object", "schema":
    ...}``, a choice list as :func:`choice_schema`), ``"grammar"`` (llama.cpp's
    ``llama-server``: a choice list as a GBNF ``grammar`` of its options, a schema in its
    ``json_schema`` field) or ``"none"`` (no constraint; the prompt alone asks for the format). With the ``openai``
    client pass the result as ``extra_body=``: its keys land at the top level of the JSON body.
    """
    if mode not in SERVER_STRUCTURED_MODES:
        raise ValueError(
            f"unknown structured-output mode {mode!r}; expected one of {SERVER_STRUCTURED_MODES}"
        )
    if structured is None or mode == "none":
        return {}
    choices = None if structured.choices is None else list(structured.choices)
    schema = None if structured.json_schema is None else plain_schema(structured.json_schema)
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
    if mode == "json_object_schema":
        wanted = choice_schema(choices) if choices is not None else schema
        return {"response_format": {"type": "json_object", "schema": wanted}}
    if mode == "grammar":
        if choices is not None:
            return {"grammar": choice_grammar(choices)}
        return {"json_schema": schema}
    # mode == "response_format". OpenAI's strict mode needs closed object schemas (every
    # property required, additionalProperties false); choice_schema() is one.
    return {
        "response_format": {
            "type": "json_schema",
            "json_schema": {
                "name": _RESPONSE_FORMAT_NAME,
                "schema": choice_schema(choices) if choices is not None else schema,
                "strict": True,
            },
        }
    }


# llama.cpp's servers: a seed travels as is (they read its low 32 bits; see the module notes).
_SEED_AS_IS_MODES = frozenset({"json_object_schema", "grammar"})
# The vLLM releases whose server honours each vLLM mode: (first, first without), as version tuples.
VLLM_SERVER_MODES = {"structured_outputs": ((0, 11), None), "guided": ((0, 0), (0, 12))}


def wire_seed(seed: int, mode: str) -> int:
    """The seed as the ``openai`` backend sends it in ``mode``: below ``SEED_MODULUS`` (every
    server's integer type holds it), except in :data:`_SEED_AS_IS_MODES`."""
    if mode in _SEED_AS_IS_MODES or 0 <= seed < SEED_MODULUS:
        return seed
    return seed % SEED_MODULUS


def _version_tuple(text: str) -> tuple[int, ...] | None:
    """``"0.10.2"`` -> ``(0, 10, 2)`` (a suffix such as ``rc1`` or ``+cu128`` dropped); None
    when ``text`` does not start with a version number."""
    match = re.match(r"\d+(?:\.\d+)*", text.strip())
    return None if match is None else tuple(int(part) for part in match.group().split("."))


def vllm_server_mode_problem(version: str, mode: str) -> str | None:
    """Why a ``vllm serve`` of release ``version`` would ignore the fields of ``mode`` (answering
    unconstrained), naming the mode to set instead; None when it honours them or ``mode`` is
    not one of vLLM's own."""
    found = _version_tuple(version)
    if mode not in VLLM_SERVER_MODES or found is None:
        return None
    first, gone = VLLM_SERVER_MODES[mode]
    if found >= first and (gone is None or found < gone):
        return None
    other = "guided" if mode == "structured_outputs" else "structured_outputs"
    return (
        f"vLLM {version}'s server does not define the fields of structured_output {mode!r} and"
        f" would drop them, answering unconstrained: set openai.structured_output: {other}"
    )


def wire_max_tokens(structured: StructuredOutput | None, mode: str, max_tokens: int) -> int:
    """``max_tokens`` as sent: with :data:`CHOICE_WRAPPER_TOKENS` more when ``mode`` wraps a
    choice list in a JSON object (the stage's cap stays the cap of the choice itself)."""
    if structured is not None and structured.choices is not None and mode in WRAPPED_CHOICE_MODES:
        return max_tokens + CHOICE_WRAPPER_TOKENS
    return max_tokens


def _gbnf_literal(text: str) -> str:
    """``text`` as a GBNF string literal (llama.cpp grammars: ``\\``, ``\"`` and the control
    characters escaped; everything else, UTF-8 included, stands for itself)."""
    escaped = (
        text.replace("\\", "\\\\")
        .replace('"', '\\"')
        .replace("\n", "\\n")
        .replace("\r", "\\r")
        .replace("\t", "\\t")
    )
    return f'"{escaped}"'


def choice_grammar(choices: Sequence[str]) -> str:
    """The GBNF grammar whose only sentences are the choices: ``root ::= "A" | "B"``."""
    return "root ::= " + " | ".join(_gbnf_literal(choice) for choice in choices)
