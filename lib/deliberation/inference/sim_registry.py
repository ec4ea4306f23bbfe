"""The sim's behaviour registry: what the sim answers for each stage tag.

Behaviour modules (``inference/sim_behaviours/``) import only this module, and the sim backend
imports both, so there is no import cycle between the backend and its behaviours.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from deliberation.inference.base import ChatRequest


@dataclass(frozen=True)
class SimAnswer:
    """What a behaviour answers: the text, and the value it stands for when structured."""

    text: str
    parsed: Any = None


@dataclass(frozen=True)
class SimContext:
    """What a behaviour sees: the request, a generator seeded from it, the profile's parameters."""

    request: ChatRequest
    rng: np.random.Generator
    parameters: Mapping[str, float] = field(default_factory=dict)

    def param(self, name: str, default: float) -> float:
        """A mechanism parameter from the profile, with the behaviour's documented default."""
        return float(self.parameters.get(name, default))

    @property
    def prompt(self) -> str:
        """The last user message: what the behaviour answers."""
        for message in reversed(self.request.messages):
            if message.role == "user":
                return message.content
        return ""

    @property
    def choices(self) -> tuple[str, ...] | None:
        return None if self.request.structured is None else self.request.structured.choices


SimBehaviour = Callable[[SimContext], SimAnswer]
_BEHAVIOURS: dict[str, SimBehaviour] = {}


def sim_behaviour(stage: str) -> Callable[[SimBehaviour], SimBehaviour]:
    """Register the sim's answer for a stage tag; ``a.b`` also serves ``a.b.c`` unless that
    has its own behaviour (longest dotted prefix wins)."""

    def decorate(func: SimBehaviour) -> SimBehaviour:
        if stage in _BEHAVIOURS:
            raise ValueError(f"sim behaviour for stage {stage!r} registered twice")
        _BEHAVIOURS[stage] = func
        return func

    return decorate


def find_behaviour(stage: str) -> SimBehaviour | None:
    """The behaviour for ``stage`` (longest registered dotted prefix), or None."""
    parts = stage.split(".")
    for end in range(len(parts), 0, -1):
        behaviour = _BEHAVIOURS.get(".".join(parts[:end]))
        if behaviour is not None:
            return behaviour
    return None


def registered_stages() -> list[str]:
    return sorted(_BEHAVIOURS)
