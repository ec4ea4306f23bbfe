"""Requests for a stage: the one place where a profile's sampling defaults meet a stage's needs.

Experiment code builds every request with :func:`stage_request` (or gets the merged values with
:func:`generation_settings`); it never passes sampling values to ``ChatRequest`` by hand, so a
profile's ``sampling:`` section always reaches the wire.

Precedence, lowest to highest (each level overrides only the fields it sets):

1. the profile: ``sampling.temperature``, ``sampling.top_p``, ``sampling.max_tokens`` and ``seed``;
2. the stage: the fields its :class:`StageSettings` sets (``None`` = "the profile's value"); a stage
   sets a value only when its method requires it (e.g. ``temperature=0.7`` for diverse drafts,
   ``max_tokens=16`` for a one-word verdict);
3. the call: ``seed`` and ``sample`` given to :func:`stage_request` for one request.

The structured-output spec and the stage tag belong to the stage alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from deliberation.inference.base import ChatRequest, Message, RunProfile, StructuredOutput


@dataclass(frozen=True)
class StageSettings:
    """What one experiment stage fixes about its requests; unset fields come from the profile."""

    stage: str
    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    seed: int | None = None
    structured: StructuredOutput | None = None

    def __post_init__(self) -> None:
        if not self.stage:
            raise ValueError("StageSettings.stage: a stage needs a tag (e.g. 'dhd.draft')")
        if self.temperature is not None and self.temperature < 0:
            raise ValueError(f"{self.stage}: temperature must be >= 0, got {self.temperature}")
        if self.top_p is not None and not 0 < self.top_p <= 1:
            raise ValueError(f"{self.stage}: top_p must be in (0, 1], got {self.top_p}")
        if self.max_tokens is not None and self.max_tokens <= 0:
            raise ValueError(f"{self.stage}: max_tokens must be > 0, got {self.max_tokens}")


def generation_settings(
    profile: RunProfile, stage: StageSettings, *, seed: int | None = None
) -> dict[str, Any]:
    """The ``ChatRequest`` keyword arguments for ``stage`` under ``profile`` (precedence in the
    module docstring): ``stage``, ``temperature``, ``top_p``, ``max_tokens``, ``seed``,
    ``structured``."""
    sampling = profile.sampling

    def pick(call: Any, stage_value: Any, profile_value: Any) -> Any:
        for value in (call, stage_value):
            if value is not None:
                return value
        return profile_value

    return {
        "stage": stage.stage,
        "temperature": pick(None, stage.temperature, sampling.temperature),
        "top_p": pick(None, stage.top_p, sampling.top_p),
        "max_tokens": pick(None, stage.max_tokens, sampling.max_tokens),
        "seed": pick(seed, stage.seed, profile.seed),
        "structured": stage.structured,
    }


def stage_request(
    profile: RunProfile,
    stage: StageSettings,
    prompt: str | Sequence[Message],
    *,
    system: str | None = None,
    seed: int | None = None,
    sample: int = 0,
) -> ChatRequest:
    """One request of ``stage`` under ``profile``: ``prompt`` is the user message (with an
    optional ``system`` message) or the whole conversation as :class:`Message` objects;
    ``sample`` indexes repeated draws; ``seed`` overrides the stage's and the profile's seed."""
    if isinstance(prompt, str):
        messages: list[Message] = [] if system is None else [Message("system", system)]
        messages.append(Message("user", prompt))
    else:
        if system is not None:
            raise ValueError("give system inside the messages when passing a conversation")
        messages = list(prompt)
    return ChatRequest(
        messages=tuple(messages), sample=sample, **generation_settings(profile, stage, seed=seed)
    )
