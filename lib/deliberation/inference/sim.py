"""The ``sim`` backend: a seeded mechanism model, not a language model.

It reads the prompt text a model would read and answers through named parameters (set by the
profile's ``sim.parameters``). What it does for each kind of request is a *behaviour*,
registered per stage tag with :func:`~deliberation.inference.sim_registry.sim_behaviour` (the
registry is ``inference/sim_registry.py``; each experiment package owns its behaviours, and
``inference/sim_plumbing.py`` holds the plumbing checks). A behaviour
sees the request (messages, sampling fields, stage), a random generator seeded from the request
and the sim's seed, and the parameters: never task metadata or answer keys. The same request
gives the same answer, in-process or over HTTP (``serve-sim``), because the generator is seeded
from the request as it travels on the wire.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

# The plumbing behaviours (echo, preflight, smoke); experiments register theirs by name.
import deliberation.inference.sim_plumbing  # noqa: F401
from deliberation.inference.base import (
    Backend,
    BackendIdentity,
    ChatRequest,
    ChatResponse,
    OnResponse,
)
from deliberation.inference.sim_registry import (
    SimAnswer,
    SimBehaviour,
    SimContext,
    check_parameter_names,
    declared_parameters,
    find_behaviour,
    registered_stages,
    seed_view,
    sim_behaviour,
)
from deliberation.inference.tokens import count_tokens, truncate_tokens
from deliberation.seeds import SEED_MODULUS, stable_seed

__all__ = [
    "SimAnswer",
    "SimBackend",
    "SimBehaviour",
    "SimContext",
    "find_behaviour",
    "registered_stages",
    "sim_behaviour",
]

_SIM_VERSION = "sim-1"
# serve-sim lists its model as owned by this in /v1/models; a run against such a server is
# labelled synthetic whatever its profile says (OpenAIBackend.server_is_synthetic).
SIM_SERVER_OWNER = "deliberation-sim"


def sent_fields(request: ChatRequest) -> dict[str, Any]:
    """What the sim reads of a request, as a server sees it: the effective seed (sample index
    folded in) rather than ``seed`` and ``sample``, so serve-sim, which rebuilds the request from
    the HTTP body, draws exactly what the in-process sim draws. The seed is folded below
    :data:`~deliberation.seeds.SEED_MODULUS` as the ``openai`` backend sends it to a vLLM server
    (:func:`~deliberation.inference.structured.wire_seed`): folding is idempotent, so the sim
    draws the same for a seed sent as is and one sent folded."""
    seed = request.effective_seed()
    if seed is not None and not 0 <= seed < SEED_MODULUS:
        seed %= SEED_MODULUS
    return {
        "messages": request.messages_as_dicts(),
        "temperature": request.temperature,
        "top_p": request.top_p,
        "max_tokens": request.max_tokens,
        "seed": seed,
        "structured": None if request.structured is None else request.structured.to_dict(),
    }


def _request_rng(request: ChatRequest, sim_seed: int) -> np.random.Generator:
    """Generator seeded from the stage, :func:`sent_fields` and the sim's own seed."""
    payload = {"stage": request.stage, **sent_fields(request), "sim_seed": sim_seed}
    return np.random.default_rng(stable_seed(json.dumps(payload, sort_keys=True)))


class _SimOptions(BaseModel):
    """The ``sim:`` section of a profile: mechanism parameters, each declared by a behaviour
    module's ``PARAMETERS`` (see ``inference/sim_registry.py``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    parameters: dict[str, float] = Field(default_factory=dict)

    @field_validator("parameters")
    @classmethod
    def _declared(cls, value: dict[str, float]) -> dict[str, float]:
        check_parameter_names(value)
        return value


class SimBackend(Backend):
    Options = _SimOptions
    synthetic = True

    def __init__(
        self,
        *,
        model: str = "sim-mechanism",
        parameters: Mapping[str, float] | None = None,
        seed: int = 0,
    ) -> None:
        self.model = model
        self.parameters = dict(parameters or {})
        check_parameter_names(self.parameters)
        self.seed = seed
        blob = json.dumps({"parameters": self.parameters, "seed": seed}, sort_keys=True)
        self._revision = f"{_SIM_VERSION}:{hashlib.sha256(blob.encode()).hexdigest()[:12]}"

    @classmethod
    def from_profile(cls, profile: Any) -> SimBackend:
        if not isinstance(profile.options, _SimOptions):
            raise ValueError(
                f"profile {profile.name!r} uses backend {profile.backend!r}; the sim needs a"
                " profile with backend: sim"
            )
        return cls(model=profile.model, parameters=profile.options.parameters, seed=profile.seed)

    @property
    def identity(self) -> BackendIdentity:
        return BackendIdentity(backend="sim", model=self.model, revision=self._revision)

    def request_payload(self, request: ChatRequest) -> dict[str, Any]:
        return sent_fields(request)

    def answer(
        self, request: ChatRequest, *, declared: Mapping[str, float] | None = None
    ) -> ChatResponse:
        """One request; the batch path and the HTTP server (serve-sim) both use it.
        ``declared``: the declared parameters, when the caller read them for a whole batch."""
        behaviour = find_behaviour(request.stage)
        prompt_tokens = sum(count_tokens(m.content) for m in request.messages)
        if behaviour is None:
            return ChatResponse(
                text="",
                error=f"sim has no behaviour for stage {request.stage!r};"
                f" known: {registered_stages()}",
                prompt_tokens=prompt_tokens,
            )
        view = seed_view(request.stage)
        rng = _request_rng(request if view is None else view(request), self.seed)
        try:
            context = SimContext(
                request=request, rng=rng, parameters=self.parameters, declared=declared
            )
            answer = behaviour(context)
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
        declared = declared_parameters()
        for index, request in enumerate(requests):
            response = self.answer(request, declared=declared)
            if on_response is not None:
                on_response(index, response)
            responses.append(response)
        return responses
