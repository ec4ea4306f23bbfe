"""The one backend interface: a batch of chat requests in, one response per request out.

Every backend (``sim``, ``openai``, ``vllm``) implements :class:`Backend` and registers itself
by name with :func:`register_backend`, so a profile picks its backend with one string and tests
use the same plumbing as real runs.
"""

from __future__ import annotations

import abc
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from deliberation.inference.seeds import derive_seed

Role = Literal["system", "user", "assistant"]

# The stage tag travels over HTTP in this header: real servers ignore it; serve-sim dispatches
# the sim's behaviour on it (as the in-process sim dispatches on ``ChatRequest.stage``).
STAGE_HEADER = "X-Deliberation-Stage"


@dataclass(frozen=True)
class Message:
    role: Role
    content: str

    def to_dict(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content}


@dataclass(frozen=True)
class StructuredOutput:
    """Constrain the answer to one of ``choices`` or to a JSON ``json_schema`` (exactly one)."""

    choices: tuple[str, ...] | None = None
    json_schema: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        if (self.choices is None) == (self.json_schema is None):
            raise ValueError("StructuredOutput needs exactly one of choices or json_schema")
        if self.choices is not None and len(self.choices) == 0:
            raise ValueError("StructuredOutput.choices must not be empty")

    def to_dict(self) -> dict[str, Any]:
        if self.choices is not None:
            return {"choices": list(self.choices)}
        return {"json_schema": self.json_schema}


@dataclass(frozen=True)
class ChatRequest:
    """One model call. ``stage`` names the experiment step (e.g. ``crossprofile.decision``);
    ``sample`` indexes repeated draws of the same prompt so each draw has its own cache row."""

    messages: tuple[Message, ...]
    stage: str = "default"
    temperature: float = 0.0
    max_tokens: int = 512
    top_p: float = 1.0
    seed: int | None = None
    structured: StructuredOutput | None = None
    sample: int = 0

    @classmethod
    def from_prompt(cls, prompt: str, *, system: str | None = None, **kwargs: Any) -> ChatRequest:
        messages = [] if system is None else [Message("system", system)]
        messages.append(Message("user", prompt))
        return cls(messages=tuple(messages), **kwargs)

    def messages_as_dicts(self) -> list[dict[str, str]]:
        return [m.to_dict() for m in self.messages]

    def effective_seed(self) -> int | None:
        """The seed sent to an engine: ``seed`` with the ``sample`` index folded in, so each
        draw differs (see ``inference/seeds.py``); None only for an unseeded first draw."""
        if self.seed is None and self.sample == 0:
            return None
        return derive_seed(self.seed or 0, self.sample)

    def sampling_fields(self) -> dict[str, Any]:
        """Every field that changes what a model may return (the cache key uses all of them)."""
        return {
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "top_p": self.top_p,
            "seed": self.seed,
            "structured": None if self.structured is None else self.structured.to_dict(),
            "sample": self.sample,
        }


@dataclass(frozen=True)
class ChatResponse:
    """What came back. ``error`` is set (and ``text`` empty) when the call failed for good;
    ``cached`` marks a response served from the cache, so its cost is never counted twice."""

    text: str
    parsed: Any = None
    finish_reason: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    cached: bool = False
    error: str | None = None
    attempts: int = 1

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_json(self) -> str:
        payload = {
            "text": self.text,
            "parsed": self.parsed,
            "finish_reason": self.finish_reason,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "latency_s": self.latency_s,
        }
        return json.dumps(payload, sort_keys=True)


OnResponse = Callable[[int, ChatResponse], None]


@dataclass(frozen=True)
class BackendIdentity:
    """What a cached answer depends on besides the request itself."""

    backend: str
    model: str
    revision: str = ""
    base_url: str = ""


class Backend(abc.ABC):
    """Batch-first interface. ``on_response(index, response)`` is called as each response
    arrives (possibly out of order) so the cache can commit it before the batch ends."""

    name: str = ""

    @property
    @abc.abstractmethod
    def identity(self) -> BackendIdentity: ...

    @abc.abstractmethod
    def generate(
        self, requests: Sequence[ChatRequest], on_response: OnResponse | None = None
    ) -> list[ChatResponse]: ...

    @classmethod
    def from_profile(cls, profile: Any) -> Backend:
        """Build the backend from a :class:`deliberation.params.Profile`."""
        raise NotImplementedError(f"{cls.__name__} cannot be built from a profile")

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections or engines; the default has nothing to release."""


_REGISTRY: dict[str, Callable[..., Backend]] = {}


def register_backend(name: str) -> Callable[[type[Backend]], type[Backend]]:
    """Class decorator: make a backend constructible by name from a profile."""

    def decorate(cls: type[Backend]) -> type[Backend]:
        if name in _REGISTRY:
            raise ValueError(f"backend {name!r} registered twice")
        cls.name = name
        _REGISTRY[name] = cls
        return cls

    return decorate


def registered_backends() -> list[str]:
    return sorted(_REGISTRY)


def backend_class(name: str) -> Callable[..., Backend]:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown backend {name!r}; registered: {registered_backends()}") from None


@dataclass
class FailureRecord:
    """A request that ended without an answer, with its reason (kept, never dropped)."""

    key: str
    stage: str
    reason: str
    attempts: int
    extra: dict[str, Any] = field(default_factory=dict)
