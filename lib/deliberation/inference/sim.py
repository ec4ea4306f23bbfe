"""The ``sim`` backend: a seeded mechanism model, not a language model.

It reads the prompt text a model would read and answers through named parameters (set by the
profile's ``sim.parameters``). What it does for each kind of request is a *behaviour*,
registered per stage tag with :func:`sim_behaviour` (``inference/sim_behaviours/``). A behaviour
sees the request (messages, sampling fields, stage), a random generator seeded from the request
and the sim's seed, and the parameters: never task metadata or answer keys. The same request
gives the same answer, in-process or over HTTP (``serve-sim``), because the generator is seeded
from the request as it travels on the wire.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from deliberation.inference.base import (
    Backend,
    BackendIdentity,
    ChatRequest,
    ChatResponse,
    OnResponse,
)
from deliberation.seeds import stable_seed
from deliberation.tokens import count_tokens, truncate_tokens

SIM_VERSION = "sim-1"
# serve-sim lists its model as owned by this in /v1/models; a run against such a server is
# labelled synthetic whatever its profile says (OpenAIBackend.server_is_synthetic).
SIM_SERVER_OWNER = "deliberation-sim"


@dataclass(frozen=True)
class SimAnswer:
    text: str
    parsed: Any = None


@dataclass(frozen=True)
class SimContext:
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
    parts = stage.split(".")
    for end in range(len(parts), 0, -1):
        behaviour = _BEHAVIOURS.get(".".join(parts[:end]))
        if behaviour is not None:
            return behaviour
    return None


def registered_stages() -> list[str]:
    _load_behaviours()
    return sorted(_BEHAVIOURS)


def sent_fields(request: ChatRequest) -> dict[str, Any]:
    """What the sim reads of a request, as a server sees it: the effective seed (sample index
    folded in) rather than ``seed`` and ``sample``, so serve-sim, which rebuilds the request from
    the HTTP body, draws exactly what the in-process sim draws."""
    return {
        "messages": request.messages_as_dicts(),
        "temperature": request.temperature,
        "top_p": request.top_p,
        "max_tokens": request.max_tokens,
        "seed": request.effective_seed(),
        "structured": None if request.structured is None else request.structured.to_dict(),
    }


def request_rng(request: ChatRequest, sim_seed: int) -> np.random.Generator:
    """Generator seeded from the stage, :func:`sent_fields` and the sim's own seed."""
    payload = {"stage": request.stage, **sent_fields(request), "sim_seed": sim_seed}
    return np.random.default_rng(stable_seed(json.dumps(payload, sort_keys=True)))


def _load_behaviours() -> None:
    # Importing the package registers every behaviour module it lists.
    import deliberation.inference.sim_behaviours  # noqa: F401


class SimOptions(BaseModel):
    """The ``sim:`` section of a profile: mechanism parameters; each behaviour documents the
    names it reads."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    parameters: dict[str, float] = Field(default_factory=dict)


class SimBackend(Backend):
    Options = SimOptions
    synthetic = True

    def __init__(
        self,
        *,
        model: str = "sim-mechanism",
        parameters: Mapping[str, float] | None = None,
        seed: int = 0,
    ) -> None:
        _load_behaviours()
        self.model = model
        self.parameters = dict(parameters or {})
        self.seed = seed
        blob = json.dumps({"parameters": self.parameters, "seed": seed}, sort_keys=True)
        self._revision = f"{SIM_VERSION}:{hashlib.sha256(blob.encode()).hexdigest()[:12]}"

    @classmethod
    def from_profile(cls, profile: Any) -> SimBackend:
        return cls(model=profile.model, parameters=profile.options.parameters, seed=profile.seed)

    @property
    def identity(self) -> BackendIdentity:
        return BackendIdentity(backend="sim", model=self.model, revision=self._revision)

    def request_payload(self, request: ChatRequest) -> dict[str, Any]:
        return sent_fields(request)

    def answer(self, request: ChatRequest) -> ChatResponse:
        """One request; the batch path and the HTTP server (serve-sim) both use it."""
        behaviour = find_behaviour(request.stage)
        prompt_tokens = sum(count_tokens(m.content) for m in request.messages)
        if behaviour is None:
            return ChatResponse(
                text="",
                error=f"sim has no behaviour for stage {request.stage!r};"
                f" known: {registered_stages()}",
                prompt_tokens=prompt_tokens,
            )
        rng = request_rng(request, self.seed)
        try:
            answer = behaviour(SimContext(request=request, rng=rng, parameters=self.parameters))
        except Exception as exc:  # a behaviour bug is recorded against the request, not raised
            return ChatResponse(text="", error=f"sim behaviour failed: {exc!r}")
        text, cut = truncate_tokens(answer.text, request.max_tokens)
        finish = "length" if cut else "stop"
        return ChatResponse(
            text=text,
            parsed=answer.parsed,
            finish_reason=finish,
            prompt_tokens=prompt_tokens,
            completion_tokens=count_tokens(text),
            latency_s=0.0,  # instant and deterministic; serve-sim adds real latency on the wire
        )

    def generate(
        self, requests: Sequence[ChatRequest], on_response: OnResponse | None = None
    ) -> list[ChatResponse]:
        responses = []
        for index, request in enumerate(requests):
            response = self.answer(request)
            if on_response is not None:
                on_response(index, response)
            responses.append(response)
        return responses
