"""Decoding a chat-completions request body back into the :class:`ChatRequest` it came from.

The inverse of ``OpenAIBackend.request_body`` (and, for structured output, of
``structured.openai_structured_extra_body``, decoded by ``structured.structured_from_wire``),
so serve-sim answers exactly what the in-process sim would answer for the same request.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from deliberation.inference.base import ChatRequest, Message, unencodable_text
from deliberation.inference.structured import WireFormatError, structured_from_wire

DEFAULT_MAX_TOKENS = 512


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
    max_tokens = DEFAULT_MAX_TOKENS if raw_max is None else _integer(raw_max, name)
    if max_tokens < 1:
        raise WireFormatError(f"{name}: must be >= 1, got {max_tokens}")
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
