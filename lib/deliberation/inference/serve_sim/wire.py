"""Decoding a chat-completions request body back into the :class:`ChatRequest` it came from.

The inverse of ``OpenAIBackend.request_body`` (and, for structured output, of
``structured.openai_structured_extra_body``, decoded by ``structured.structured_from_wire``),
so serve-sim answers exactly what the in-process sim would answer for the same request.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from deliberation.inference.base import ChatRequest, Message
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
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise WireFormatError(f"{name}: expected a number, got {value!r}")
    return value


def request_from_body(body: Mapping[str, Any], stage: str) -> tuple[ChatRequest, bool]:
    """The request a body stands for (``stage`` travels in a header), and whether a choice
    answer must be wrapped as ``{"answer": choice}``. Raises :class:`WireFormatError`."""
    messages = _messages(body)
    structured, wrap_choice = structured_from_wire(body)
    temperature = _number(body, "temperature", 1.0)
    top_p = _number(body, "top_p", 1.0)
    max_tokens = body.get("max_tokens", body.get("max_completion_tokens")) or DEFAULT_MAX_TOKENS
    seed = body.get("seed")
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens <= 0:
        raise WireFormatError(f"max_tokens: expected a positive integer, got {max_tokens!r}")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
        raise WireFormatError(f"seed: expected an integer, got {seed!r}")
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
