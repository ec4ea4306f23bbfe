"""A profile's answers as a published file: ``deliberation cache export`` and ``cache import``.

In full: ``docs/cache.md``, section "Published answers files (inference/published.py)".
"""

from __future__ import annotations

import gzip
import io
import json
import os
import zlib
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from deliberation.inference.backends import backend_class
from deliberation.inference.base import (
    Backend,
    BackendIdentity,
    ChatRequest,
    ChatResponse,
    InvalidRequestError,
    Message,
    StructuredOutput,
)
from deliberation.inference.cache import CacheError, ResponseCache, request_key
from deliberation.inference.openai_api import reply_byte_limit
from deliberation.inference.structured_answers import parse_structured_text
from deliberation.io import paths
from deliberation.io.atomic import atomic_path

_FORMAT = "deliberation-responses"
_VERSION = 1
FILE_NAME = "responses.jsonl.gz"


class PublishedFileError(CacheError):
    """A published responses file that cannot be imported; names the file, line and field."""


def published_path(profile: str, root: Path | None = None) -> Path:
    """``results/<profile>/responses.jsonl.gz`` under ``root`` (default: the output root)."""
    return (root or paths.output_root()) / "results" / profile / FILE_NAME


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, hide_input_in_errors=True)


class _Identity(_Strict):
    backend: str
    model: str
    revision: str
    base_url: str


# Every input is bounded like a server reply: a line longer than this (a prompt plus its answer)
# is refused before it is held in memory, and an answer's text by the same byte bound as a reply
# from a server (:func:`~deliberation.inference.openai_api.reply_byte_limit`).
MAX_LINE_CHARS = 4 * 1024 * 1024
_Count = Field(ge=0, le=10_000_000)


class _Header(_Strict):
    format: Literal["deliberation-responses"]
    version: Literal[1]
    profile: str = Field(pattern=r"^[A-Za-z0-9_-][A-Za-z0-9._-]*$", max_length=200)  # a name
    identity: _Identity
    answers: int = Field(ge=0)


class _Message(_Strict):
    role: Literal["system", "user", "assistant"]
    content: str


class _Structured(_Strict):
    choices: list[str] | None = None
    json_schema: dict[str, Any] | None = None


class _Request(_Strict):
    messages: list[_Message] = Field(min_length=1)
    stage: str = Field(max_length=200)
    sample: int = Field(ge=0)
    temperature: float = Field(ge=0, allow_inf_nan=False)
    max_tokens: int = Field(ge=1, le=1_000_000)
    top_p: float = Field(gt=0, le=1, allow_inf_nan=False)
    seed: int | None
    structured: _Structured | None


class _Response(_Strict):
    text: str
    parsed: Any
    finish_reason: str | None = Field(max_length=100)
    prompt_tokens: int = _Count
    completion_tokens: int = _Count
    latency_s: float = Field(ge=0, allow_inf_nan=False)
    # Written only when the reply named another model than the one asked for (base.ChatResponse).
    served_model: str | None = Field(None, min_length=1, max_length=200)


class _Answer(_Strict):
    key: str = Field(pattern=r"^[0-9a-f]{64}$")
    request: _Request
    response: _Response
    attempts: int = Field(ge=0, le=1000)


def _line(value: dict[str, Any]) -> bytes:
    # ASCII with \u escapes: a model's reply may hold a lone surrogate, which UTF-8 cannot.
    return (json.dumps(value, sort_keys=True, separators=(",", ":")) + "\n").encode("ascii")


def _request_from(record: _Request) -> ChatRequest:
    structured = None
    if record.structured is not None:
        spec = record.structured
        structured = StructuredOutput(
            choices=None if spec.choices is None else tuple(spec.choices),
            json_schema=spec.json_schema,
        )
    return ChatRequest(
        messages=tuple(Message(m.role, m.content) for m in record.messages),
        stage=record.stage,
        temperature=record.temperature,
        max_tokens=record.max_tokens,
        top_p=record.top_p,
        seed=record.seed,
        structured=structured,
        sample=record.sample,
    )


def _keying_backend(profile: Any) -> Backend:
    """The profile's backend as far as keys go: no API key, engine or network needed."""
    return backend_class(profile.backend).for_planning(profile)


def _secrets(profile: Any) -> list[str]:
    """Values that must never appear in a published file: the profile's API key, if set."""
    name = getattr(profile.options, "api_key_env", None)
    value = os.environ.get(name, "") if name else ""
    return [value] if len(value) >= 8 else []


@dataclass(frozen=True)
class _ExportResult:
    path: Path
    answers: int
    other_identity: int  # answers in the cache made with another identity: left out
    failed: int  # outstanding failed calls (no answer): left out
    size: int


def export_responses(
    profile: Any, out: Path | None = None, cache_file: Path | None = None
) -> _ExportResult:
    """Write every answer of ``profile``'s backend identity in its response cache to ``out``
    (default :func:`published_path`); see the module docstring for the format."""
    from deliberation.inference import cache_path

    source = Path(cache_file or cache_path(profile))
    target = Path(out or published_path(profile.name))
    backend = _keying_backend(profile)
    secrets = _secrets(profile)
    lines: list[bytes] = []
    other = 0
    with ResponseCache(source, read_only=True) as cache:
        for key, request, response, attempts in cache.answer_rows():
            try:
                record = _Request.model_validate(request)
                if request_key(backend, _request_from(record)) != key:
                    other += 1  # another revision, URL or backend shared this file
                    continue
                answer = _Answer(
                    key=key,
                    request=record,
                    response=_Response.model_validate(response),
                    attempts=attempts,
                )
            except (ValidationError, ValueError) as exc:  # a row an older version wrote
                raise PublishedFileError(
                    source, f"the answer under key {key} cannot be exported: {exc}"
                ) from None
            record = answer.model_dump(mode="json")
            if record["response"]["served_model"] is None:  # as before the field existed
                del record["response"]["served_model"]
            line = _line(record)
            if any(secret.encode("utf-8") in line for secret in secrets):
                raise PublishedFileError(
                    source,
                    f"the answer under key {key} holds the value of the profile's API-key"
                    " variable; nothing was exported",
                )
            lines.append(line)
        failed = int(cache.failures()["key"].nunique())
    header = _Header(
        format=_FORMAT,
        version=_VERSION,
        profile=profile.name,
        identity=_Identity(**asdict(backend.identity)),
        answers=len(lines),
    )
    payload = _line(header.model_dump(mode="json")) + b"".join(lines)
    buffer = io.BytesIO()
    # filename="" and mtime=0: the gzip header holds neither, so equal answers give equal bytes.
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, compresslevel=9, mtime=0) as zipped:
        zipped.write(payload)
    with atomic_path(target) as partial:
        partial.write_bytes(buffer.getvalue())
    return _ExportResult(target, len(lines), other, failed, len(buffer.getvalue()))


def _read_lines(file: Path) -> Iterator[tuple[int, str]]:
    try:
        with gzip.open(file, "rt", encoding="utf-8") as text:
            number = 0
            while line := text.readline(MAX_LINE_CHARS + 1):
                number += 1
                if len(line) > MAX_LINE_CHARS:
                    raise PublishedFileError(
                        file, f"line {number}: longer than {MAX_LINE_CHARS:,} characters (refused"
                        " unread: no answer of a bounded reply is that long)",
                    )  # fmt: skip
                yield number, line
    except FileNotFoundError:
        raise PublishedFileError(file, "no such file") from None
    except (OSError, EOFError, zlib.error, UnicodeDecodeError) as exc:
        raise PublishedFileError(
            file, f"not a readable gzip file of UTF-8 JSON lines ({exc}); truncated?"
        ) from None


def _validated(file: Path, number: int, line: str, model: type[_Strict]) -> Any:
    try:
        data = json.loads(line)
    except ValueError as exc:
        raise PublishedFileError(file, f"line {number}: not JSON ({exc})") from None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(line)'}: {err['msg']}"
            for err in exc.errors()
        )
        raise PublishedFileError(file, f"line {number}: {problems}") from None


@dataclass(frozen=True)
class ImportResult:
    file: Path
    cache: Path
    profile: str
    added: int
    present: int


def read_published(file: Path, profile: Any) -> list[tuple[str, ChatRequest, ChatResponse]]:
    """Every answer of a published file, checked line by line against ``profile``'s backend
    (see the module docstring); raises :class:`PublishedFileError` naming the line and field."""
    file = Path(file)
    backend = _keying_backend(profile)
    entries: list[tuple[str, ChatRequest, ChatResponse]] = []
    seen: set[str] = set()
    header: _Header | None = None
    for number, line in _read_lines(file):
        if header is None:
            header = _validated(file, number, line, _Header)
            if asdict(backend.identity) != header.identity.model_dump():
                raise PublishedFileError(
                    file,
                    f"line 1: identity: exported with {header.identity.model_dump()}, but profile"
                    f" {profile.name} keys with {asdict(backend.identity)}",
                )
            continue
        answer: _Answer = _validated(file, number, line, _Answer)
        try:
            request = _request_from(answer.request)
            key = request_key(backend, request)
        except (ValueError, InvalidRequestError) as exc:
            raise PublishedFileError(file, f"line {number}: request: {exc}") from None
        if key != answer.key:
            raise PublishedFileError(
                file,
                f"line {number}: key: {answer.key} is not the key of its request ({key} with"
                f" profile {profile.name}'s backend): edited, or exported with another identity",
            )
        if key in seen:
            raise PublishedFileError(file, f"line {number}: key: {key} appears twice")
        seen.add(key)
        limit = reply_byte_limit(request.max_tokens)
        if len(answer.response.text.encode("utf-8", "surrogatepass")) > limit:
            raise PublishedFileError(
                file, f"line {number}: response.text: longer than {limit} bytes, the bound of a"
                f" server reply for max_tokens={request.max_tokens}",
            )  # fmt: skip
        if answer.response.parsed != parse_structured_text(
            request.structured, answer.response.text
        ):
            raise PublishedFileError(
                file, f"line {number}: response.parsed: {answer.response.parsed!r} is not what"
                " its text parses to under the request's structured output: edited?",
            )  # fmt: skip
        response = ChatResponse(**answer.response.model_dump(), attempts=answer.attempts)
        entries.append((key, request, response))
    if header is None:
        raise PublishedFileError(file, "empty: no header line")
    if header.answers != len(entries):
        raise PublishedFileError(
            file, f"line 1: answers: the header says {header.answers}, the file holds"
            f" {len(entries)}; truncated?",
        )  # fmt: skip
    return entries


def published_profile(file: Path) -> str:
    """The profile named in a published file's header."""
    for number, line in _read_lines(Path(file)):
        return _validated(Path(file), number, line, _Header).profile
    raise PublishedFileError(Path(file), "empty: no header line")


def import_responses(file: Path, profile: Any, cache_file: Path | None = None) -> ImportResult:
    """Check every line of ``file`` against ``profile``, then store its answers in the profile's
    response cache (or ``cache_file``), all or none."""
    from deliberation.inference import cache_path

    entries = read_published(file, profile)
    target = Path(cache_file or cache_path(profile))
    identity: BackendIdentity = _keying_backend(profile).identity
    with ResponseCache(target) as cache:
        added, present = cache.put_all_or_none(entries, profile=profile.name, identity=identity)
    return ImportResult(Path(file), target, profile.name, added, present)
