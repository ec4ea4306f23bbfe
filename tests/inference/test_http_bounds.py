"""Every request the project makes is bounded in total time and decoded size (issue 46 items 2
and 3): a server that trickles one byte every few seconds is stopped at the bound, a model list
of hundreds of megabytes is refused early, and a small gzip body that inflates past a reply's
bound is refused while it inflates, at any concurrency; each error names the bound."""

from __future__ import annotations

import time
import tracemalloc

import pytest
from helpers.misbehaving import gzip_bomb, misbehaving_server
from helpers.serve_sim import arithmetic_requests, openai_profile

from deliberation.inference.cache import ResponseCache
from deliberation.inference.client import CachedClient
from deliberation.inference.model_server import answers
from deliberation.inference.openai_api import (
    MODEL_LIST_BYTES,
    OpenAIBackend,
    PreflightError,
    ServerUnreachableError,
    reply_byte_limit,
)
from deliberation.io import http

MIB = 2**20


def test_a_trickling_reply_is_stopped_at_the_total_deadline() -> None:
    with misbehaving_server(behaviour="trickle", interval_s=0.3) as server:
        started = time.monotonic()
        with pytest.raises(http.ReplyTimeout, match=r"within 1\.5 s \(the test's bound\)"):
            http.request(
                "GET", server.base_url + "/models", deadline_s=1.5, max_bytes=MIB,
                deadline_what="the test's bound", size_what="-",
            )  # fmt: skip
        elapsed = time.monotonic() - started
        assert server.sent >= 3  # bytes kept arriving: no single read ever timed out
    assert 1.5 <= elapsed < 3.5


@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "chunked"])
def test_a_huge_model_list_is_refused_early(declared) -> None:
    with misbehaving_server(behaviour="huge", size=300 * MIB, declared=declared) as server:
        backend = OpenAIBackend(model="m", base_url=server.base_url, timeout_s=30)
        tracemalloc.start()
        try:
            with pytest.raises(PreflightError, match="16 MiB decoded .*model list"):
                backend.served_models()
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        sent = server.sent
    assert peak < 4 * MODEL_LIST_BYTES  # the list was never held whole
    # Refused on its declared length before the body is read (what the server sent sits in the
    # socket buffers), or as soon as the bound's worth has arrived.
    assert sent < (MODEL_LIST_BYTES if declared else MODEL_LIST_BYTES + 16 * MIB)


def test_the_preflight_stops_at_the_profiles_timeout_naming_it() -> None:
    with misbehaving_server(behaviour="trickle", interval_s=0.5) as server:
        backend = OpenAIBackend(model="m", base_url=server.base_url, timeout_s=1.0)
        started = time.monotonic()
        assert backend.server_is_synthetic() is False  # the first request, before the run
        with pytest.raises(ServerUnreachableError, match=r"openai\.timeout_s=1\b"):
            backend.preflight()
        elapsed = time.monotonic() - started
    assert elapsed < 4  # one deadline, not one per request asked


def test_the_readiness_check_is_bounded_too() -> None:
    with misbehaving_server(behaviour="trickle", interval_s=0.3) as server:
        started = time.monotonic()
        assert answers(server.base_url + "/models", timeout_s=1.0) is False
        assert time.monotonic() - started < 3


def test_a_gzip_bomb_is_refused_while_it_inflates_at_any_concurrency(tmp_path) -> None:
    bomb = gzip_bomb(150 * 10**6)
    assert len(bomb) < 200_000  # ~146 KB on the wire
    with misbehaving_server(behaviour="gzip", body=bomb) as server:
        profile = openai_profile(server.base_url, concurrency=4, max_retries=2, timeout_s=30)
        client = CachedClient(
            OpenAIBackend.from_profile(profile), ResponseCache(tmp_path / "c.sqlite"),
            profile=profile.name, progress=False,
        )  # fmt: skip
        requests = arithmetic_requests(6)  # fewer than the circuit breaker's 8
        tracemalloc.start()
        try:
            responses = client.generate(requests)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        posts = server.requests
    limit = reply_byte_limit(requests[0].max_tokens)
    assert not any(r.ok for r in responses)
    assert all(f"decoded (the bound for max_tokens={requests[0].max_tokens})" in r.error
               for r in responses)  # fmt: skip
    assert all("not retried" in r.error for r in responses) and posts == 6
    assert peak < 4 * (limit + len(bomb)) + 8 * MIB  # never more than a bound's worth each
    assert int(client.cache.stats()["calls"].sum()) == 0  # nothing stored


def test_an_encoding_it_did_not_ask_for_fails_the_call(tmp_path) -> None:
    with misbehaving_server(behaviour="gzip", body=b"\x00" * 10, encoding="br") as server:
        backend = OpenAIBackend(model="m", base_url=server.base_url, max_retries=3)
        (response,) = backend.generate(arithmetic_requests(1))
    assert not response.ok and "Content-Encoding 'br'" in response.error
    assert response.attempts == 1


def test_a_small_gzip_reply_is_read() -> None:
    body = (
        b'{"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices":'
        b' [{"index": 0, "message": {"role": "assistant", "content": "Answer: 1"},'
        b' "finish_reason": "stop"}], "usage": {"prompt_tokens": 3, "completion_tokens": 2}}'
    )
    import gzip

    with misbehaving_server(behaviour="gzip", body=gzip.compress(body)) as server:
        (response,) = OpenAIBackend(model="m", base_url=server.base_url).generate(
            arithmetic_requests(1)
        )
    assert response.ok and response.text == "Answer: 1" and response.completion_tokens == 2
