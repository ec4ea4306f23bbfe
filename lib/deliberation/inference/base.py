"""The one backend interface: a batch of chat requests in, one response per request out.

Every backend (``sim``, ``openai``, ``vllm``) implements :class:`Backend` and is listed by name
in the one registry (:mod:`deliberation.inference.backends`), so a profile picks its backend with
one string and tests use the same plumbing as real runs.
"""

from __future__ import annotations

import abc
import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Protocol

import jsonschema
from pydantic import BaseModel, ConfigDict, Field

from deliberation.inference.structured_answers import schema_validator
from deliberation.seeds import derive_seed

Role = Literal["system", "user", "assistant"]

# The stage tag travels over HTTP in this header: real servers ignore it; serve-sim dispatches
# the sim's behaviour on it (as the in-process sim dispatches on ``ChatRequest.stage``).
STAGE_HEADER = "X-Deliberation-Stage"


# Set (to anything but "" or "0") while a replay rebuilds outputs from published answers: then
# nothing may be sent and no model server started (``CachedClient`` and
# ``model_server.before_send`` refuse, naming the calls), so a replay cannot quietly use a model.
NO_SEND_ENV = "DELIBERATION_NO_SEND"


def sending_forbidden() -> bool:
    """Whether :data:`NO_SEND_ENV` forbids sending in this process (and its kernels)."""
    return os.environ.get(NO_SEND_ENV, "") not in ("", "0")


class SendingForbiddenError(RuntimeError):
    """A request had to be sent while :data:`NO_SEND_ENV` was set (a replay missing answers)."""


# Marks a backend option that changes how requests travel (timeouts, concurrency, progress
# bars), never what a model answers; only such options stay out of the cache key.
_TRANSPORT_ONLY = "transport_only"


def transport_only(default: Any = ..., **kwargs: Any) -> Any:
    """``pydantic.Field`` for an option that never changes an answer (see :func:`deliberation.inference.cache.request_key`)."""
    return Field(default, json_schema_extra={_TRANSPORT_ONLY: True}, **kwargs)


def transport_only_fields(options_model: type[BaseModel]) -> frozenset[str]:
    """The options of a backend's options model declared with :func:`transport_only`."""
    return frozenset(
        name
        for name, info in options_model.model_fields.items()
        if isinstance(info.json_schema_extra, dict) and info.json_schema_extra.get(_TRANSPORT_ONLY)
    )


def output_options(options: BaseModel) -> dict[str, Any]:
    """Every option that may change an answer (all but the transport-only ones), JSON-able."""
    neutral = transport_only_fields(type(options))
    return options.model_dump(mode="json", exclude=set(neutral))


class InvalidRequestError(ValueError):
    """A request no backend can send (text that is not valid Unicode, a value JSON cannot
    carry): it fails alone, with this message as its reason, and the rest of its batch runs."""


def unencodable_text(value: Any, path: str = "body") -> str | None:
    """Where the first string that is not valid Unicode (a lone surrogate, which JSON's
    ``\\ud800`` escapes can carry) sits in a decoded JSON value, with the offending
    character's position; None when every string encodes as UTF-8."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            return f"{path}: lone surrogate U+{ord(value[exc.start]):04X} at character {exc.start}"
        return None
    if isinstance(value, Mapping):
        items: Any = ((f"{path}.{key}", item) for key, item in value.items())
    elif isinstance(value, list | tuple):
        items = ((f"{path}[{index}]", item) for index, item in enumerate(value))
    else:
        return None
    for where, item in items:
        found = unencodable_text(item, where)
        if found is not None:
            return found
    return None


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
        if self.json_schema is not None:
            try:
                schema_validator(self.json_schema)
            except jsonschema.SchemaError as exc:
                raise ValueError(
                    f"StructuredOutput.json_schema is not a JSON schema: {exc.message}"
                ) from None

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
        draw differs (see ``deliberation/seeds.py``); None only for an unseeded first draw."""
        if self.seed is None and self.sample == 0:
            return None
        return derive_seed(self.seed or 0, self.sample)

    def sampling_fields(self) -> dict[str, Any]:
        """The request's sampling fields as recorded beside each cached answer (the key itself
        hashes what the backend sends: ``Backend.request_payload``)."""
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
    # The model name the reply gave when it is not the one asked for (a dated snapshot, an alias
    # the profile accepts); None when it is the same (or the backend says nothing).
    served_model: str | None = None

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
        if self.served_model is not None:  # only then: a stored answer's bytes stay as they were
            payload["served_model"] = self.served_model
        return json.dumps(payload, sort_keys=True)


OnResponse = Callable[[int, ChatResponse], None]


class RunProfile(Protocol):
    """What the inference layer reads of a profile (:class:`deliberation.profiles.profile.Profile` is
    one). Named here rather than imported: the profile loader validates a profile's backend and
    server sections through this package's registries, so this package never imports it."""

    name: str
    backend: str
    model: str
    revision: str
    seed: int
    source: str
    sampling: Any  # temperature, top_p, max_tokens
    options: Any  # the backend's own options model
    server: Any  # the model server section, or None

    @property
    def synthetic(self) -> bool: ...

    def model_copy(self, *, update: Mapping[str, Any] | None = None) -> Any: ...


@dataclass(frozen=True)
class BackendIdentity:
    """Which backend and model answered: recorded with each cached row, and hashed into the key
    beside what :meth:`Backend.request_payload` says is sent."""

    backend: str
    model: str
    revision: str = ""
    base_url: str = ""


class _NoOptions(BaseModel):
    """Options model of a backend that takes none (its profile section must be empty)."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Backend(abc.ABC):
    """Batch-first interface. ``on_response(index, response)`` is called as each response
    arrives (possibly out of order) so the cache can commit it before the batch ends.

    A backend owns its profile section: ``Options`` is the pydantic model that validates it
    (mark options that never change an answer with :func:`transport_only`), and
    :meth:`from_profile` builds the backend from ``profile.options``. ``synthetic`` is True for
    backends whose answers do not come from a language model; ``engine`` names the PyPI package
    of an inference engine the backend runs in-process (its version labels the results).
    """

    name: ClassVar[str] = ""
    Options: ClassVar[type[BaseModel]] = _NoOptions
    synthetic: ClassVar[bool] = False
    engine: ClassVar[str | None] = None

    @property
    @abc.abstractmethod
    def identity(self) -> BackendIdentity: ...

    @abc.abstractmethod
    def request_payload(self, request: ChatRequest) -> dict[str, Any]:
        """``request`` exactly as this backend sends it (JSON-able, never a secret): the HTTP
        body, or the prompt plus every sampling and engine setting that changes the answer.
        The cache key hashes this (``inference/cache.py: request_key``), so a setting that is
        sent but missing here would serve stale answers."""

    @abc.abstractmethod
    def generate(
        self, requests: Sequence[ChatRequest], on_response: OnResponse | None = None
    ) -> list[ChatResponse]: ...

    @classmethod
    def from_profile(cls, profile: Any) -> Backend:
        """Build the backend from a :class:`deliberation.profiles.profile.Profile` (its ``options`` are
        an instance of ``cls.Options``)."""
        raise NotImplementedError(f"{cls.__name__} cannot be built from a profile")

    @classmethod
    def check_available(cls) -> None:
        """Raise :class:`BackendUnavailableError` when this machine cannot run the backend (an
        optional dependency missing), cheaply and before any work: ``make paper`` asks first."""
        return None  # the default: nothing optional to check

    @classmethod
    def for_planning(cls, profile: Any) -> Backend:
        """The backend as far as keys go (:meth:`identity`, :meth:`request_payload`), built
        without a key, an engine, a GPU or the network: ``deliberation plan`` computes each
        request's cache key with it and never calls :meth:`generate`. The default is
        :meth:`from_profile`; backends whose construction needs more override it."""
        return cls.from_profile(profile)

    def server_is_synthetic(self) -> bool:
        """Whether the server behind this backend says its answers are synthetic (serve-sim
        does, in ``/v1/models``); backends without a server answer ``synthetic``."""
        return self.synthetic

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections or engines; the default has nothing to release."""


class BackendUnavailableError(ImportError):
    """A backend whose optional dependency is not installed here (vLLM on a machine without
    it): a problem of the environment, reported in one paragraph that says what to install."""
