"""The response cache: a documented key, rows committed as they arrive, failures never served."""

from __future__ import annotations

import dataclasses

import pytest

from deliberation.inference.base import (
    Backend,
    BackendIdentity,
    ChatRequest,
    ChatResponse,
    Message,
    StructuredOutput,
)
from deliberation.inference.cache import ResponseCache, request_key
from deliberation.inference.sim import sent_fields
from deliberation.tokens import count_tokens

IDENTITY = BackendIdentity(
    backend="openai", model="m", revision="r1", base_url="http://127.0.0.1:1/v1"
)


class FixedBackend(Backend):
    """A backend with a given identity that sends what the sim reads (no generation)."""

    def __init__(self, identity: BackendIdentity) -> None:
        self._identity = identity

    @property
    def identity(self) -> BackendIdentity:
        return self._identity

    def request_payload(self, request):
        return sent_fields(request)

    def generate(self, requests, on_response=None):
        raise AssertionError("never called")


def key_for(identity, request):
    return request_key(FixedBackend(identity), request)


REQUEST = ChatRequest(
    messages=(Message("system", "be brief"), Message("user", "pick one")),
    stage="crossprofile.decision",
    temperature=0.7,
    max_tokens=64,
    top_p=0.9,
    seed=3,
    structured=StructuredOutput(choices=("A", "B")),
    sample=0,
)

REQUEST_CHANGES = {
    "messages": dict(messages=(Message("system", "be brief"), Message("user", "pick two"))),
    "role": dict(messages=(Message("user", "be brief"), Message("user", "pick one"))),
    "stage": dict(stage="crossprofile.summary"),
    "temperature": dict(temperature=0.8),
    "max_tokens": dict(max_tokens=65),
    "top_p": dict(top_p=0.95),
    "seed": dict(seed=4),
    "structured": dict(structured=StructuredOutput(choices=("A", "C"))),
    "structured_kind": dict(structured=StructuredOutput(json_schema={"type": "string"})),
    "sample": dict(sample=1),
}
IDENTITY_CHANGES = {
    "backend": dict(backend="vllm"),
    "model": dict(model="m2"),
    "revision": dict(revision="r2"),
    "base_url": dict(base_url="http://127.0.0.1:2/v1"),
}


def test_equal_requests_share_a_key():
    copy = dataclasses.replace(REQUEST)
    assert key_for(IDENTITY, REQUEST) == key_for(IDENTITY, copy)


@pytest.mark.parametrize("field", sorted(REQUEST_CHANGES))
def test_changing_any_request_field_misses_the_cache(field):
    changed = dataclasses.replace(REQUEST, **REQUEST_CHANGES[field])
    assert key_for(IDENTITY, changed) != key_for(IDENTITY, REQUEST)


@pytest.mark.parametrize("field", sorted(IDENTITY_CHANGES))
def test_changing_any_backend_field_misses_the_cache(field):
    changed = dataclasses.replace(IDENTITY, **IDENTITY_CHANGES[field])
    assert key_for(changed, REQUEST) != key_for(IDENTITY, REQUEST)


def _answer(text="A", **kw):
    return ChatResponse(
        text=text,
        parsed=text,
        finish_reason="stop",
        prompt_tokens=5,
        completion_tokens=1,
        latency_s=0.25,
        **kw,
    )


def test_round_trip_flags_hits_and_counts_them(tmp_path):
    path = tmp_path / "c.sqlite"
    key = key_for(IDENTITY, REQUEST)
    with ResponseCache(path) as cache:
        assert cache.get_many([key]) == {}
        cache.put(key, REQUEST, _answer(), profile="p", identity=IDENTITY)
    with ResponseCache(path) as cache:  # committed: survives closing and reopening
        got = cache.get_many([key, key])[key]
        assert got.cached and got.text == "A" and got.parsed == "A" and got.prompt_tokens == 5
        cache.get_many([key])
        stats = cache.stats()
    row = stats.set_index("stage").loc["crossprofile.decision"]
    assert (row["calls"], row["hits"], row["prompt_tokens"]) == (1, 2, 5)
    # Beside the backend's count, the project's model-free counter over the stored prompt.
    counted = sum(count_tokens(m.content) for m in REQUEST.messages)
    assert counted != 5 and row["counted_prompt_tokens"] == counted


def test_failures_are_recorded_with_reason_and_never_served(tmp_path):
    key = key_for(IDENTITY, REQUEST)
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        failed = ChatResponse(text="", error="HTTP 500 after 3 attempts", attempts=3)
        with pytest.raises(ValueError):
            cache.put(key, REQUEST, failed, profile="p", identity=IDENTITY)
        cache.record_failure(key, REQUEST, failed, profile="p")
        assert cache.get_many([key]) == {}
        failures = cache.failures()
        stats = cache.stats()
    assert failures["reason"].tolist() == ["HTTP 500 after 3 attempts"]
    assert failures["attempts"].tolist() == [3]
    assert stats["failures"].tolist() == [1] and stats["calls"].tolist() == [0]


def test_cache_file_uses_write_ahead_logging(tmp_path):
    path = tmp_path / "c.sqlite"
    with ResponseCache(path) as cache:
        mode = cache._conn.execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_cache_stats_command_prints_calls_and_hits_by_stage(tmp_path, capsys):
    from deliberation.cli import main

    path = tmp_path / "c.sqlite"
    with ResponseCache(path) as cache:
        cache.put(key_for(IDENTITY, REQUEST), REQUEST, _answer(), profile="p", identity=IDENTITY)
        cache.get_many([key_for(IDENTITY, REQUEST)])
    assert main(["cache", "stats", str(path)]) == 0
    out = capsys.readouterr().out
    assert "crossprofile.decision" in out and "calls" in out and "hits" in out
    assert main(["cache", "stats", str(tmp_path / "missing.sqlite")]) == 2
