"""The ``openai`` backend: any OpenAI-compatible chat-completions server (``vllm serve``,
DeepSeek, hosted APIs, ``deliberation serve-sim`` in tests).

A server can fail in many ways, and a paid answer must never be lost or mistaken: so every
request ends as an answer or as a ``ChatResponse`` with an ``error`` (never raised, never
dropped), retries are tenacity configuration (:meth:`OpenAIBackend._retrying`), a circuit
breaker stops a stage whose server rejects everything, and every exchange goes through the one
bounded HTTP path (:mod:`deliberation.io.http`). What each kind of reply becomes:
docs/failed-calls.md; the retry policy and why tenacity: docs/libraries.md; settings, bounds,
breaker and pre-flight: docs/profiles.md and docs/real-model.md. The API key goes to the HTTP
client and nowhere else (:mod:`deliberation.inference.secrets`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import email.utils
import json
import logging
import math
import re
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import tenacity
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from deliberation import exit_codes
from deliberation.inference.base import (
    STAGE_HEADER,
    Backend,
    BackendIdentity,
    ChatRequest,
    ChatResponse,
    OnResponse,
    StructuredOutput,
    transport_only,
)
from deliberation.inference.interrupts import BatchStop, run_batch
from deliberation.inference.model_server import before_send
from deliberation.inference.secrets import (
    PLACEHOLDER_KEY,
    Secret,
    check_env_name,
    read_api_key,
)
from deliberation.inference.sim import SIM_SERVER_OWNER
from deliberation.inference.structured import (
    VLLM_SERVER_MODES,
    ServerStructuredMode,
    openai_structured_extra_body,
    vllm_server_mode_problem,
    wire_max_tokens,
    wire_seed,
)
from deliberation.inference.structured_answers import parse_structured_text
from deliberation.inference.urls import check_base_url, install_log_redaction
from deliberation.io import http
from deliberation.io.http import HttpLimitError, ReplyTimeout, ReplyTooLarge, httpx

log = logging.getLogger(__name__)

# The modes the pre-flight tries when the profile's is refused or ignored, strongest constraint
# first (JSON mode alone, which constrains no field, last), so it names the one to set.
_DISCOVERY_ORDER = (
    "structured_outputs", "guided", "response_format", "json_object_schema", "grammar",
    "json_object",
)  # fmt: skip

_RETRYABLE_STATUS = frozenset({408, 409, 429})
# The circuit breaker (_Breaker): identical failures in a row before any success.
BREAKER_ATTEMPTS = 8
# A reply body may hold this much beyond what max_tokens tokens can spell (JSON, usage, ids).
_REPLY_BASE_BYTES = 64 * 1024
_REPLY_BYTES_PER_TOKEN = 256
# A wait before a retry longer than this is logged at WARNING (shorter ones at DEBUG).
LONG_WAIT_S = 5.0
# The largest model list (GET /models) and version reply read (OpenRouter lists ~300 models
# with descriptions in about 1 MiB).
MODEL_LIST_BYTES = 16 * 2**20
VERSION_BYTES = 64 * 1024


_PREFLIGHT_STAGE = "preflight"
_PREFLIGHT_CHOICES = ("yes", "no")


class PreflightError(RuntimeError):
    """The server refused the pre-flight request; the message quotes it and names the key."""

    exit_code = exit_codes.PREFLIGHT_REFUSED


class ServerUnreachableError(PreflightError):
    """Nothing answers at the profile's ``openai.base_url``."""

    exit_code = exit_codes.SERVER_UNREACHABLE


class ModelMismatchError(PreflightError):
    """The server serves, or answers as, another model than the profile names: its answers
    would be cached and labelled as the profile's model. ``openai.allow_model_alias: true``
    accepts another name for the same model (a warning once per run instead)."""

    exit_code = exit_codes.MODEL_MISMATCH


def _model_ids(listing: Any) -> set[str] | None:
    """The model ids of a ``GET /models`` reply, or None when it is not such a listing."""
    data = listing.get("data") if isinstance(listing, Mapping) else None
    if not isinstance(data, list):
        return None
    return {str(m["id"]) for m in data if isinstance(m, Mapping) and "id" in m}


def _reply_text(reply: Any) -> str | None:
    try:
        content = reply["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        return None
    return content if isinstance(content, str) else None


def _error_text(reply: Any) -> str:
    if isinstance(reply, Mapping):
        error = reply.get("error", reply.get("detail", reply))
        if isinstance(error, Mapping) and error.get("message"):
            return str(error["message"])[:300]
        return json.dumps(error)[:300] if not isinstance(error, str) else error[:300]
    return str(reply)[:300]


class OpenAIOptions(BaseModel):
    """The ``openai:`` section of a profile. Options made with ``transport_only`` change how
    requests travel, never what is sent, so they stay out of the cache key."""

    # hide_input_in_errors: a key pasted into api_key_env must not reappear in the error.
    model_config = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)

    base_url: str
    api_key_env: str | None = transport_only(
        None, description="name of the environment variable holding the key (never the key)"
    )
    concurrency: int = transport_only(16, gt=0, le=1024)
    max_retries: int = transport_only(6, ge=0, le=100)
    timeout_s: float = transport_only(
        120.0, gt=0, le=86_400, description="the longest a whole reply may take (per attempt)"
    )
    backoff_base_s: float = transport_only(1.0, ge=0, le=3600)
    backoff_max_s: float = transport_only(60.0, ge=0, le=86_400)
    retry_after_max_s: float = transport_only(
        300.0,
        ge=0,
        le=86_400,
        description="longest wait a server's Retry-After can impose before a retry",
    )
    # How structured outputs travel (see inference/structured.py).
    structured_output: ServerStructuredMode = "structured_outputs"
    send_seed: bool = Field(
        True, description="send the per-draw seed (off for servers that reject it)"
    )
    allow_model_alias: bool = transport_only(
        False,
        description="accept a server that lists, or answers as, another model name than"
        " `model:` (a warning once per run); off: the run stops (exit code 6)",
    )
    strict_model: bool = transport_only(
        False,
        description="a reply naming any other model than `model:`, even a dated snapshot of it"
        " (gpt-4o-2024-08-06 for gpt-4o), fails that call (and the pre-flight, exit code 6)",
    )
    preflight: bool = transport_only(
        True,
        description="before a run's first request: one small request in structured_output's"
        " mode and a look at /models (deliberation run, make paper)",
    )

    @field_validator("api_key_env")
    @classmethod
    def _key_is_a_name(cls, value: str | None) -> str | None:
        return None if value is None else check_env_name(value)

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        return check_base_url(value, key_field="openai.api_key_env")

    @model_validator(mode="after")
    def _alias_or_strict(self) -> OpenAIOptions:
        if self.strict_model and self.allow_model_alias:
            raise ValueError(
                "strict_model and allow_model_alias contradict each other: set one of them"
            )
        return self


@dataclasses.dataclass(frozen=True)
class RetryPolicy:
    """How many times to retry and how long to wait in between (docs/libraries.md): the
    configuration of the tenacity retrying each request gets (:meth:`OpenAIBackend._retrying`)."""

    max_retries: int = 6
    backoff_base_s: float = 1.0
    backoff_max_s: float = 60.0
    retry_after_max_s: float = 300.0

    def wait(self, rng: Any) -> _FullJitter:
        """tenacity's wait for one request; ``rng()`` makes its seeded generator when needed."""
        return _FullJitter(self, rng)


class _FullJitter(tenacity.wait_exponential):
    """Full jitter: tenacity's exponential ceiling (``backoff_base_s * 2**k``, at most
    ``backoff_max_s``), the wait drawn below it by the request's seeded generator (so a batch's
    waits are reproducible), and at least the server's ``Retry-After``, but on the server's say-so
    never more than ``retry_after_max_s``."""

    def __init__(self, policy: RetryPolicy, rng: Any) -> None:
        super().__init__(multiplier=policy.backoff_base_s, max=policy.backoff_max_s)
        self.policy = policy
        self._make_rng = rng
        self._rng: np.random.Generator | None = None

    def __call__(self, retry_state: tenacity.RetryCallState) -> float:
        ceiling = super().__call__(retry_state)
        if self._rng is None:
            self._rng = self._make_rng()
        wait = float(self._rng.uniform(0.0, ceiling)) if ceiling > 0 else 0.0
        outcome = retry_state.outcome
        asked = getattr(outcome.exception(), "retry_after_s", None) if outcome else None
        if asked is not None:
            wait = max(wait, min(asked, self.policy.retry_after_max_s))
        return wait


def parse_retry_after(
    headers: Mapping[str, str] | None, *, now: float | None = None
) -> float | None:
    """Seconds the server asked us to wait: ``retry-after-ms``, or ``Retry-After`` as seconds
    (integer or decimal) or an HTTP date. None when absent or unreadable."""
    if not headers:
        return None
    lowered = {str(k).lower(): str(v) for k, v in headers.items()}
    millis = lowered.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    reference = datetime.now(UTC).timestamp() if now is None else now
    return max(0.0, when.timestamp() - reference)


class _Stopped(Exception):
    """The batch's circuit breaker tripped: nothing more is sent."""


class _Interrupted(Exception):
    """A stop (Ctrl-C, a cache that cannot take answers) came first: nothing more is sent."""


class _AttemptFailed(Exception):
    def __init__(
        self, kind: str, reason: str, *, retryable: bool, retry_after_s: float | None = None
    ):
        super().__init__(reason)
        self.kind = kind
        self.reason = reason
        self.retryable = retryable
        self.retry_after_s = retry_after_s


def _no_answer(finish: Any, message: Mapping[str, Any]) -> tuple[str, str]:
    """The failure kind and reason of a choice that carries no usable content."""
    if finish == "content_filter":
        return "content-filter", "the server's content filter withheld the reply"
    refusal = message.get("refusal")
    if refusal:
        return "refusal", f"the model refused: {str(refusal)[:200]}"
    if message.get("tool_calls") or message.get("function_call"):
        return "tool-call", "the reply is a tool call, not an answer (content null)"
    return "no-content", "the reply's message content is null"


def _names_another(asked: str, replied: Any) -> bool:
    """Whether a reply's ``model`` is a name, and not the one asked for (snapshots included)."""
    return isinstance(replied, str) and bool(replied) and replied != asked


def replied_as_other_model(asked: str, replied: Any) -> bool:
    """Whether a reply's ``model`` names another model than the one asked for. A dated
    snapshot of the same name (``gpt-4o`` answered as ``gpt-4o-2024-08-06``) is the same model;
    a missing field says nothing."""
    if not isinstance(replied, str) or not replied or replied == asked:
        return False
    return re.fullmatch(re.escape(asked) + r"-\d[\d-]*", replied) is None


def reply_byte_limit(max_tokens: int) -> int:
    """The largest reply body accepted for a request allowing ``max_tokens`` tokens: no token
    spells more than a few dozen bytes even JSON-escaped, so a body past this bound comes from a
    server that ignores ``max_tokens`` (it fails that call, before it is stored)."""
    return _REPLY_BASE_BYTES + _REPLY_BYTES_PER_TOKEN * max(0, int(max_tokens))


def _token_count(usage: Any, field: str) -> int:
    """A usage count as a non-negative int; anything else is a malformed reply."""
    value = usage.get(field) if isinstance(usage, Mapping) else None
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _AttemptFailed("malformed", f"usage.{field} is not a number", retryable=True)
    if not math.isfinite(value) or value < 0 or value != int(value) or value > 2**53:
        raise _AttemptFailed(
            "malformed", f"usage.{field} is not a non-negative integer", retryable=True
        )
    return int(value)


# What a server's complaint names -> the profile key that controls it.
_PROFILE_KEYS = (
    (("response_format", "structured_output", "guided_", "json_schema", "grammar", "regex"),
     "openai.structured_output"),
    (("seed",), "openai.send_seed"),
    (("temperature",), "sampling.temperature"),
    (("top_p",), "sampling.top_p"),
    (("max_tokens", "max_completion_tokens", "context length", "context_length"),
     "sampling.max_tokens"),
    (("model",), "model"),
)  # fmt: skip


def profile_hint(reason: str) -> str:
    """The profile key to change when a server's complaint concerns a field the profile
    controls (structured-output mode, seed, a sampling field, the model name); "" otherwise."""
    text = reason.lower()
    for words, key in _PROFILE_KEYS:
        if any(word in text for word in words):
            return f"; the profile controls this: check `{key}`"
    return ""


def _redact_url(url: str) -> str:
    """``url`` without user info, query or fragment (what a log line may show)."""
    from urllib.parse import urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparseable URL>"
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


class _Breaker:
    """The batch's circuit breaker: a server that rejects everything gets at most
    ``2 * threshold - 1`` requests a stage, not thousands. Until an attempt has succeeded at most
    ``threshold`` are in flight, and ``threshold`` failures in a row with the same reason (rate
    limits and waits the server asked for excepted) stop the batch (docs/profiles.md)."""

    def __init__(self, threshold: int = BREAKER_ATTEMPTS) -> None:
        self.threshold = threshold
        self.succeeded = False
        self.run_reason = ""
        self.run_length = 0
        self.reason: str | None = None  # set when tripped
        self.tripped = asyncio.Event()
        self.probe = asyncio.Semaphore(threshold)

    def gate(self) -> Any:
        """Hold a probe slot until the first success (then no limit beyond concurrency)."""
        return contextlib.nullcontext() if self.succeeded else self.probe

    def success(self) -> None:
        self.succeeded = True

    def failure(self, failure: _AttemptFailed) -> bool:
        """Count a failed attempt; True when this one trips the breaker."""
        if self.succeeded or self.reason is not None:
            return False
        if failure.kind == "429" or failure.retry_after_s is not None:
            return False  # the server asked us to wait, not to stop
        if failure.reason == self.run_reason:
            self.run_length += 1
        else:
            self.run_reason, self.run_length = failure.reason, 1
        if self.run_length >= self.threshold:
            self.reason = failure.reason
            self.tripped.set()
            return True
        return False


class OpenAIBackend(Backend):
    """Chat completions over HTTP with bounded concurrency and tenacity's retries."""

    Options = OpenAIOptions

    def __init__(
        self,
        *,
        model: str,
        base_url: str,
        api_key: str = PLACEHOLDER_KEY,
        revision: str = "",
        concurrency: int = 16,
        max_retries: int = 6,
        timeout_s: float = 120.0,
        backoff_base_s: float = 1.0,
        backoff_max_s: float = 60.0,
        retry_after_max_s: float = 300.0,
        structured_output: str = "structured_outputs",
        send_seed: bool = True,
        jitter_seed: int = 0,
        preflight: bool = True,
        allow_model_alias: bool = False,
        strict_model: bool = False,
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {concurrency}")
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
        openai_structured_extra_body(None, structured_output)  # validates the mode name
        check_base_url(base_url)
        install_log_redaction()  # the HTTP libraries log URLs at debug level
        self.model = model
        self.revision = revision
        self.base_url = base_url.rstrip("/")
        self.concurrency = concurrency
        self.timeout_s = timeout_s
        self.retry = RetryPolicy(max_retries, backoff_base_s, backoff_max_s, retry_after_max_s)
        self.structured_output = structured_output
        self.send_seed = send_seed
        self.jitter_seed = jitter_seed
        self.preflight_enabled = preflight
        self.allow_model_alias = allow_model_alias
        self.strict_model = strict_model
        self.served_as: set[str] = set()  # other names the server answered as (accepted)
        self._api_key = Secret(api_key)
        self._unresponsive: str | None = None  # why the server sent no whole reply in time

    @classmethod
    def from_profile(cls, profile: Any) -> OpenAIBackend:
        options: OpenAIOptions = profile.options
        key = read_api_key(options.api_key_env, profile=profile.name, field="openai.api_key_env")
        return cls._build(profile, key)

    @classmethod
    def for_planning(cls, profile: Any) -> OpenAIBackend:
        """Keys only: the key never enters a payload, so none is read (``deliberation plan``)."""
        return cls._build(profile, PLACEHOLDER_KEY)

    @classmethod
    def _build(cls, profile: Any, api_key: str) -> OpenAIBackend:
        options: OpenAIOptions = profile.options
        return cls(
            model=profile.model,
            revision=profile.revision,
            base_url=options.base_url,
            api_key=api_key,
            concurrency=options.concurrency,
            max_retries=options.max_retries,
            timeout_s=options.timeout_s,
            backoff_base_s=options.backoff_base_s,
            backoff_max_s=options.backoff_max_s,
            retry_after_max_s=options.retry_after_max_s,
            structured_output=options.structured_output,
            send_seed=options.send_seed,
            jitter_seed=profile.seed,
            preflight=options.preflight,
            allow_model_alias=options.allow_model_alias,
            strict_model=options.strict_model,
        )

    @property
    def identity(self) -> BackendIdentity:
        return BackendIdentity("openai", self.model, self.revision, self.base_url)

    def server_is_synthetic(self) -> bool:
        """True when ``GET /models`` lists a model owned by serve-sim (asked without the key;
        a server that refuses or cannot be reached is taken at its word: not synthetic). A
        server that sends no whole reply in time is remembered: the pre-flight stops on it."""
        try:
            reply = self._exchange("GET", "/models", key=False)
        except ReplyTimeout as exc:
            self._unresponsive = str(exc)
            return False
        except (HttpLimitError, httpx.HTTPError, OSError, ValueError):
            return False
        try:
            models = json.loads(reply.body).get("data", [])
        except (ValueError, AttributeError):
            return False
        if reply.status != 200 or not isinstance(models, list):
            return False
        return any(isinstance(m, Mapping) and m.get("owned_by") == SIM_SERVER_OWNER for m in models)

    # -- pre-flight -----------------------------------------------------------------------------
    def _exchange(
        self, method: str, path: str, body: dict[str, Any] | None = None, *, key: bool = True
    ) -> http.Reply:
        """One plain HTTP exchange (no retries) on the one HTTP path, within
        ``openai.timeout_s`` and the size bound of what is asked for: a chat reply's
        :func:`reply_byte_limit`, a model list's ``MODEL_LIST_BYTES``. ``path`` starting with
        ``//`` is taken from the server's root (``//version``)."""
        if path.startswith("//"):
            parts = urlsplit(self.base_url)
            url = f"{parts.scheme}://{parts.netloc}{path[1:]}"
        else:
            url = f"{self.base_url}{path}"
        if body is not None:
            limit, what = (
                reply_byte_limit(int(body.get("max_tokens") or 0)),
                "the bound for its max_tokens",
            )
        elif path == "/models":
            limit, what = MODEL_LIST_BYTES, "the bound for a model list"
        else:
            limit, what = VERSION_BYTES, "the bound for a version reply"
        headers = {"Content-Type": "application/json", STAGE_HEADER: _PREFLIGHT_STAGE}
        if key and self._api_key.reveal() != PLACEHOLDER_KEY:
            headers["Authorization"] = f"Bearer {self._api_key.reveal()}"
        return http.request(
            method, url, json=body, headers=headers, deadline_s=self.timeout_s,
            max_bytes=limit, deadline_what=f"openai.timeout_s={self.timeout_s:g}",
            size_what=f"{what}, {method} {path.lstrip('/')}",
        )  # fmt: skip

    def _http(self, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
        """Status and decoded JSON (the text when not JSON) of one pre-flight exchange; status 0
        with the reason when nothing answered. A server that sends no whole reply within
        ``openai.timeout_s`` stops the run (:class:`ServerUnreachableError`), and one whose
        reply passes its size bound too (:class:`PreflightError`); both messages name the bound."""
        if self._unresponsive is not None:
            raise ServerUnreachableError(f"the server at {self.server}: {self._unresponsive}")
        try:
            reply = self._exchange(method, path, body)
        except ReplyTimeout as exc:
            self._unresponsive = str(exc)
            raise ServerUnreachableError(
                f"the server at {self.server} ({method} {path.lstrip('/')}): {exc}"
            ) from None
        except HttpLimitError as exc:
            raise PreflightError(
                f"the server at {self.server} ({method} {path.lstrip('/')}): {exc}"
            ) from None
        except (httpx.HTTPError, OSError, ValueError) as exc:
            return 0, self._api_key.scrub(f"{type(exc).__name__}: {exc}")
        try:
            return reply.status, json.loads(reply.body)
        except ValueError:
            return reply.status, reply.body.decode("utf-8", "replace")[:300]

    def preflight_request(self) -> ChatRequest:
        """The one small request of the pre-flight: a choice between two options."""
        return ChatRequest.from_prompt(
            "Reply with yes or no: is 2 larger than 1?",
            stage=_PREFLIGHT_STAGE,
            max_tokens=12,
            seed=0,
            structured=StructuredOutput(choices=_PREFLIGHT_CHOICES),
        )

    def preflight(self) -> list[str]:
        """Check the server before a run: ``GET /models`` (a model name it does not list is a
        warning naming both) and one small request in the profile's structured-output mode. A
        refusal raises :class:`PreflightError` quoting the server and naming the profile key to
        change; an answer outside the constraint is a warning (the server may ignore the
        mode). Returns the warnings."""
        warnings = []
        status, listing = self._http("GET", "/models")
        served = _model_ids(listing) if status == 200 else None
        if served is not None and self.model not in served:
            self._other_model(
                f"the server at {self.base_url} lists the models {sorted(served)}, not the"
                f" profile's `model: {self.model}`",
                warnings,
            )
        version = self.vllm_version()
        problem = None if version is None else vllm_server_mode_problem(
            version, self.structured_output)  # fmt: skip
        if problem is not None:
            raise PreflightError(f"the server at {self.base_url} is vLLM {version}: {problem}")
        request = self.preflight_request()
        body = self.request_body(request)
        status, reply = self._http("POST", "/chat/completions", body)
        if status == 0:
            raise ServerUnreachableError(
                f"no server answers at {self.base_url} (openai.base_url): {reply}"
            )
        if status != 200:
            refusal = self._refusal(status, reply, body)
            raise PreflightError("; ".join([refusal, *warnings]))
        replied = reply.get("model") if isinstance(reply, Mapping) else None
        if self.strict_model and _names_another(self.model, replied):
            raise ModelMismatchError(
                f"the server at {self.base_url} answered as model {replied!r}, not the"
                f" profile's `model: {self.model}`, and openai.strict_model is true: set"
                " `model:` to the name it answers as, or strict_model: false to accept a dated"
                " snapshot of the same name"
            )
        if replied_as_other_model(self.model, replied):
            self._other_model(
                f"the server at {self.base_url} answered as model {replied!r}, not the"
                f" profile's `model: {self.model}`",
                warnings,
            )
        text = _reply_text(reply)
        if request.structured is not None and self.structured_output != "none":
            parsed = parse_structured_text(request.structured, text or "")
            if parsed is None:
                warnings.append(
                    f"the server at {self.base_url} answered the pre-flight request outside its"
                    f" constraint ({text!r} is not one of {list(_PREFLIGHT_CHOICES)}): it may"
                    f" ignore openai.structured_output={self.structured_output!r}; "
                    + self._mode_advice()
                )
        return warnings

    def vllm_version(self) -> str | None:
        """The release of the vLLM server behind the URL (``GET /version`` at its root, which
        ``vllm serve`` answers), asked only in one of vLLM's own modes; None otherwise or when
        nothing says so. A vLLM release drops the fields of a mode it does not define."""
        if self.structured_output not in VLLM_SERVER_MODES:
            return None
        status, reply = self._http("GET", "//version")
        version = reply.get("version") if status == 200 and isinstance(reply, Mapping) else None
        return version if isinstance(version, str) else None

    def working_structured_mode(self) -> str | None:
        """The first mode of :data:`_DISCOVERY_ORDER` (other than the profile's) in which the
        server answers the pre-flight request inside its constraint, or None: the dialect the
        server speaks, found by asking it (one small request per mode tried)."""
        request = self.preflight_request()
        assert request.structured is not None
        base = {k: v for k, v in self.request_body(request).items()
                if k in ("model", "messages", "temperature", "top_p", "seed")}  # fmt: skip
        for mode in _DISCOVERY_ORDER:
            if mode == self.structured_output:
                continue
            body = {
                **base,
                "max_tokens": wire_max_tokens(request.structured, mode, request.max_tokens),
                **openai_structured_extra_body(request.structured, mode),
            }
            status, reply = self._http("POST", "/chat/completions", body)
            text = _reply_text(reply) if status == 200 else None
            if text is not None and parse_structured_text(request.structured, text) is not None:
                return mode
        return None

    def served_models(self) -> list[str] | None:
        """The model ids ``GET /models`` lists, sorted; None when the server answers without
        such a listing. Nothing answering raises :class:`ServerUnreachableError`."""
        status, listing = self._http("GET", "/models")
        if status == 0:
            raise ServerUnreachableError(f"no server answers at {self.base_url}: {listing}")
        served = _model_ids(listing) if status == 200 else None
        return None if served is None else sorted(served)

    def _mode_advice(self) -> str:
        """What to set instead of the profile's structured-output mode, from asking the server."""
        mode = self.working_structured_mode()
        if mode is None:
            return (
                f"none of the modes {list(_DISCOVERY_ORDER)} kept its answer inside the"
                " constraint: set openai.structured_output: none (free text, read by the parser)"
            )
        return f"the server keeps to the constraint with it: set openai.structured_output: {mode}"

    def _other_model(self, problem: str, warnings: list[str]) -> None:
        """Another model name than the profile's: a stop, or with ``allow_model_alias`` a
        warning (the answers are cached under the profile's name either way, so a wrong name
        would label another model's answers as this one's)."""
        if self.allow_model_alias:
            warnings.append(f"{problem} (accepted: openai.allow_model_alias is true)")
            return
        raise ModelMismatchError(
            f"{problem}: set `model:` to the name it serves (the name is sent with every"
            " request and hashed into every cache key), or openai.allow_model_alias: true if"
            " it is the same model under another name"
        )

    def _refusal(self, status: int, reply: Any, body: dict[str, Any]) -> str:
        """Why the server refused the pre-flight request, and which profile key to change:
        the request is sent again without the structured-output fields, then without the
        seed, and the first change that is accepted names the key."""
        said = _error_text(reply)
        base = {k: v for k, v in body.items() if k in ("model", "messages", "temperature",
                                                        "top_p", "max_tokens", "seed")}  # fmt: skip
        trials = []
        if self.structured_output != "none":
            trials.append(("openai.structured_output", base, f"{self.structured_output!r}"))
        if "seed" in body:
            trials.append(("openai.send_seed", {k: v for k, v in body.items() if k != "seed"},
                           "true"))  # fmt: skip
        for key, trial, value in trials:
            if self._http("POST", "/chat/completions", trial)[0] == 200:
                advice = "; " + self._mode_advice() if key == "openai.structured_output" else ""
                return (
                    f"the server at {self.base_url} refused the pre-flight request (HTTP {status}:"
                    f" {said}) and accepts it without what {key}={value} adds: change {key} in"
                    f" the profile{advice}"
                )
        hint = ""
        if status == 404 or "model" in said.lower():
            hint = "; check the profile's `model:` (what the server serves: GET /models)"
        return (
            f"the server at {self.base_url} refused the pre-flight request (HTTP {status}:"
            f" {said}){hint}"
        )

    def __repr__(self) -> str:
        return (
            f"OpenAIBackend(model={self.model!r}, base_url={self.base_url!r},"
            f" concurrency={self.concurrency}, max_retries={self.retry.max_retries},"
            f" timeout_s={self.timeout_s}, structured_output={self.structured_output!r})"
        )

    # -- batch entry points ---------------------------------------------------------------------
    def generate(
        self, requests: Sequence[ChatRequest], on_response: OnResponse | None = None
    ) -> list[ChatResponse]:
        """Send the batch and wait for every response. Works inside a running event loop
        (Jupyter): the batch runs on its own loop in a worker thread. Ctrl-C stops sending at
        once; requests already sent finish and reach ``on_response`` (see ``interrupts.py``).
        So does an ``on_response`` that raises (a cache that cannot be written): nothing more
        is sent, the requests in flight end, and the first error is raised."""
        if not requests:
            return []
        # Inside `deliberation run` / `make paper`: start the profile's server, pre-flight it.
        before_send(self)
        return run_batch(lambda stop: self._run(requests, on_response, stop))

    async def _run(
        self,
        requests: Sequence[ChatRequest],
        on_response: OnResponse | None,
        stop: BatchStop,
    ) -> list[ChatResponse | None]:
        """One response per request; None for a request a stop kept from being sent."""
        semaphore = asyncio.Semaphore(self.concurrency)
        breaker = _Breaker()
        headers = {"User-Agent": "deliberation"}
        if self._api_key.reveal() != PLACEHOLDER_KEY:
            headers["Authorization"] = f"Bearer {self._api_key.reveal()}"
        client = http.new_client(
            deadline_s=self.timeout_s, connections=self.concurrency, headers=headers
        )

        refused: list[Exception] = []

        async def one(index: int, request: ChatRequest) -> ChatResponse | None:
            response = await self._complete(client, semaphore, index, request, stop, breaker)
            if response is not None and on_response is not None:
                try:
                    on_response(index, response)
                except Exception as exc:
                    # The caller cannot take answers (its cache is full): send nothing more, as
                    # after an interrupt; the requests in flight end and reach on_response too,
                    # so every answer received is handed over before the error is raised.
                    refused.append(exc)
                    stop.set()
            return response

        async with client:
            responses = list(await asyncio.gather(*(one(i, r) for i, r in enumerate(requests))))
        if refused:
            raise refused[0]
        return responses

    @property
    def server(self) -> str:
        """The server's URL as logs and messages show it (no credentials)."""
        return _redact_url(self.base_url)

    def _stopped(
        self, request: ChatRequest, breaker: _Breaker, attempts: int, started: float
    ) -> ChatResponse:
        reason = (
            f"not sent: stage {request.stage} stopped at {self.server} after"
            f" {breaker.threshold} attempts in a row failed with the same error and none"
            f" succeeded (circuit breaker): {breaker.reason}{profile_hint(breaker.reason or '')}"
        )
        return ChatResponse(
            text="", error=self._api_key.scrub(reason), attempts=attempts,
            latency_s=time.perf_counter() - started,
        )  # fmt: skip

    async def _pause(self, wait: float, stop: BatchStop, breaker: _Breaker) -> bool:
        """Sleep before a retry; True when an interrupt came first (the breaker wakes it too)."""
        sleeper = asyncio.ensure_future(stop.sleep(wait))
        tripped = asyncio.ensure_future(breaker.tripped.wait())
        await asyncio.wait({sleeper, tripped}, return_when=asyncio.FIRST_COMPLETED)
        for task in (sleeper, tripped):
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(sleeper, tripped, return_exceptions=True)
        return stop.is_set()

    # -- one request ----------------------------------------------------------------------------
    def _retrying(
        self, index: int, request: ChatRequest, stop: BatchStop, breaker: _Breaker
    ) -> tenacity.AsyncRetrying:
        """The request's retry policy as tenacity configuration: retryable failures only, at
        most ``max_retries`` retries, full-jitter waits honouring Retry-After, each wait logged
        (:meth:`_log_wait`) and cut short by an interrupt or the breaker."""

        async def pause(seconds: float) -> None:
            if await self._pause(seconds, stop, breaker):
                raise _Interrupted

        return tenacity.AsyncRetrying(
            stop=tenacity.stop_after_attempt(self.retry.max_retries + 1),
            wait=self.retry.wait(lambda: np.random.default_rng([abs(self.jitter_seed), index])),
            retry=tenacity.retry_if_exception(
                lambda e: isinstance(e, _AttemptFailed) and e.retryable
            ),
            before_sleep=lambda state: self._log_wait(index, request, state),
            sleep=pause,
            reraise=True,
        )

    async def _complete(
        self,
        client: httpx.AsyncClient,
        semaphore: asyncio.Semaphore,
        index: int,
        request: ChatRequest,
        stop: BatchStop,
        breaker: _Breaker,
    ) -> ChatResponse | None:
        history: Counter[str] = Counter()
        started = time.perf_counter()
        attempts = 0

        async def attempt() -> ChatResponse:
            nonlocal attempts
            async with semaphore:
                if stop.is_set():
                    raise _Interrupted  # send nothing more (not a failure of the request)
                async with breaker.gate():
                    if breaker.reason is not None:
                        raise _Stopped
                    if stop.is_set():
                        raise _Interrupted
                    attempts += 1
                    attempt_started = time.perf_counter()
                    try:
                        response = await self._attempt(client, request)
                    except _AttemptFailed as failure:
                        last = failure
                    else:
                        breaker.success()
                        latency = time.perf_counter() - attempt_started
                        return dataclasses.replace(response, latency_s=latency, attempts=attempts)
            history[last.kind] += 1
            if breaker.failure(last):
                log.warning(
                    "stage %s at %s: %d attempts in a row failed with the same error and none"
                    " succeeded; stopping the stage (circuit breaker): %s%s",
                    request.stage, self.server, breaker.threshold, last.reason,
                    profile_hint(last.reason),
                )  # fmt: skip
            if breaker.reason is not None:
                raise _Stopped
            raise last

        try:
            return await self._retrying(index, request, stop, breaker)(attempt)
        except _Interrupted:
            return None
        except _Stopped:
            return self._stopped(request, breaker, attempts, started)
        except _AttemptFailed as last:
            return self._failed(index, request, last, history, attempts, started)

    def _log_wait(self, index: int, request: ChatRequest, state: tenacity.RetryCallState) -> None:
        """A short wait at DEBUG; one longer than ``LONG_WAIT_S`` at WARNING, with the server's
        reason and what it asked for, so a stalled run says why."""
        last = state.outcome.exception() if state.outcome else None
        assert isinstance(last, _AttemptFailed)
        wait = state.upcoming_sleep
        asked = last.retry_after_s
        asked_text = "" if asked is None else f"; the server asked for {asked:g} s"
        if asked is not None and asked > self.retry.retry_after_max_s:
            asked_text += f", capped by openai.retry_after_max_s={self.retry.retry_after_max_s:g}"
        level = logging.WARNING if wait > LONG_WAIT_S else logging.DEBUG
        log.log(
            level,
            "request %d (stage %s, server %s): %s%s; waiting %.1f s before retry %d of %d",
            index, request.stage, self.server, last.reason, asked_text, wait,
            state.attempt_number, self.retry.max_retries,
        )  # fmt: skip

    def _failed(
        self,
        index: int,
        request: ChatRequest,
        last: _AttemptFailed,
        history: Counter[str],
        attempts: int,
        started: float,
    ) -> ChatResponse:
        if last.retryable:
            seen = ", ".join(f"{kind} x{count}" for kind, count in sorted(history.items()))
            reason = f"gave up after {attempts} attempts ({seen}); last: {last.reason}"
        else:
            reason = f"{last.reason} (not retried; attempt {attempts})"
        reason = self._api_key.scrub(reason + profile_hint(last.reason) * last.kind.isdigit())
        log.warning(
            "request %d (stage %s, server %s) failed: %s", index, request.stage, self.server, reason
        )
        return ChatResponse(
            text="", error=reason, attempts=attempts, latency_s=time.perf_counter() - started
        )

    def request_body(self, request: ChatRequest) -> dict[str, Any]:
        """The JSON body sent for ``request``: messages, sampling fields, the per-draw seed (when
        the profile sends seeds) and the structured-output fields for the profile's mode."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": request.messages_as_dicts(),
            "temperature": request.temperature,
            "top_p": request.top_p,
            "max_tokens": wire_max_tokens(
                request.structured, self.structured_output, request.max_tokens
            ),
        }
        seed = request.effective_seed() if self.send_seed else None
        if seed is not None:
            body["seed"] = wire_seed(seed, self.structured_output)
        body.update(openai_structured_extra_body(request.structured, self.structured_output))
        return body

    def request_payload(self, request: ChatRequest) -> dict[str, Any]:
        """What goes on the wire: the server, the JSON body and the stage header (never the key)."""
        return {
            "base_url": self.base_url,
            "body": self.request_body(request),
            "headers": {STAGE_HEADER: request.stage},
        }

    async def _attempt(self, client: httpx.AsyncClient, request: ChatRequest) -> ChatResponse:
        """One HTTP attempt: the parsed response, or :class:`_AttemptFailed` saying why not."""
        limit = reply_byte_limit(request.max_tokens)
        try:
            reply = await http.exchange(
                client, "POST", f"{self.base_url}/chat/completions",
                json=self.request_body(request), headers={STAGE_HEADER: request.stage},
                deadline_s=self.timeout_s, max_bytes=limit,
                deadline_what=f"openai.timeout_s={self.timeout_s:g}",
                size_what=f"the bound for max_tokens={request.max_tokens}",
            )  # fmt: skip
        except ReplyTooLarge as exc:
            raise _AttemptFailed(
                "too-large", f"{exc}: the server ignores max_tokens", retryable=False
            ) from None
        except (ReplyTimeout, httpx.TimeoutException):
            raise _AttemptFailed(
                "timeout",
                f"no response within {self.timeout_s:g} s (openai.timeout_s)",
                retryable=True,
            ) from None
        except HttpLimitError as exc:  # an encoding it did not ask for
            raise _AttemptFailed("malformed", str(exc), retryable=False) from None
        except httpx.LocalProtocolError:  # httpx refused to send what we built
            raise _AttemptFailed(
                "bad-request",
                "the request is not valid HTTP (LocalProtocolError: e.g. a header value"
                " with a newline or non-ASCII character)",
                retryable=False,
            ) from None
        except httpx.DecodingError as exc:
            raise _AttemptFailed("malformed", f"response body: {exc}", retryable=True) from None
        except (httpx.TransportError, OSError) as exc:
            raise _AttemptFailed(
                "connection", f"connection error ({type(exc).__name__})", retryable=True
            ) from None
        except Exception as exc:  # anything else is recorded against the request, not raised
            raise _AttemptFailed(
                "error", self._api_key.scrub(f"{type(exc).__name__}: {exc}"), retryable=False
            ) from None
        try:
            data = json.loads(reply.body)
        except ValueError as exc:
            if 200 <= reply.status < 300:
                raise _AttemptFailed(
                    "malformed",
                    f"response body is not valid JSON ({type(exc).__name__})",
                    retryable=True,
                ) from None
            data = reply.body.decode("utf-8", "replace")
        if not 200 <= reply.status < 300:
            status = reply.status
            raise _AttemptFailed(
                str(status),
                self._api_key.scrub(f"HTTP {status}: {_error_text(data)}"),
                retryable=status in _RETRYABLE_STATUS or status >= 500,
                retry_after_s=parse_retry_after(reply.headers),
            )
        response = self._to_response(request, data)
        replied = data.get("model")
        if not _names_another(self.model, replied):
            return response
        if self.strict_model:
            raise _AttemptFailed(
                "model-mismatch",
                f"the reply names model {replied!r}, not the profile's `model: {self.model}`"
                " (not stored; openai.strict_model is true: no other name, not even a dated"
                " snapshot, is accepted)",
                retryable=False,
            )
        if replied_as_other_model(self.model, replied) and not self.allow_model_alias:
            raise _AttemptFailed(
                "model-mismatch",
                f"the reply names model {replied!r}, not the profile's `model:"
                f" {self.model}` (not stored; openai.allow_model_alias: true accepts"
                " another name for the same model)",
                retryable=False,
            )
        if replied not in self.served_as:
            self.served_as.add(replied)
            why = (
                "openai.allow_model_alias is true"
                if replied_as_other_model(self.model, replied)
                else "a dated snapshot of that name; openai.strict_model: true refuses it"
            )
            log.warning(
                "the server at %s answers as model %r for the profile's %r (accepted: %s;"
                " recorded as served_as in the outputs' provenance)",
                self.server, replied, self.model, why,
            )  # fmt: skip
        return dataclasses.replace(response, served_model=replied[:200])

    @staticmethod
    def _to_response(request: ChatRequest, completion: Any) -> ChatResponse:
        """The response a chat-completion body (decoded JSON) holds, or :class:`_AttemptFailed`
        when it holds no usable answer."""
        choices = completion.get("choices") if isinstance(completion, Mapping) else None
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
            raise _AttemptFailed(
                "malformed", "response body is not a chat completion with choices", retryable=True
            )
        choice = choices[0]
        message = choice.get("message")
        content = message.get("content") if isinstance(message, Mapping) else None
        if not isinstance(message, Mapping) or (
            content is not None and not isinstance(content, str)
        ):
            raise _AttemptFailed(
                "malformed", "response choice has no message content", retryable=True
            )
        finish = choice.get("finish_reason")
        if content is None or finish == "content_filter":
            # HTTP 200 without an answer in it: not a wrong answer of the model's choosing but no
            # answer at all, so it fails (not stored; the next run sends it again).
            raise _AttemptFailed(*_no_answer(finish, message), retryable=False)
        usage = completion.get("usage")
        return ChatResponse(
            text=content,
            parsed=parse_structured_text(request.structured, content),
            finish_reason=finish if isinstance(finish, str) or finish is None else str(finish),
            prompt_tokens=_token_count(usage, "prompt_tokens"),
            completion_tokens=_token_count(usage, "completion_tokens"),
        )
