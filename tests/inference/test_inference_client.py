"""The cached client: distinct misses sent once, answers committed as they arrive, order kept,
failures recorded and retried on the next run, a crash losing nothing already answered."""

from __future__ import annotations

import pytest
from helpers.backends import CountingBackend, requests_for

from deliberation.inference.cache import ResponseCache
from deliberation.inference.client import CachedClient


def _client(tmp_path, backend):
    return CachedClient(backend, ResponseCache(tmp_path / "c.sqlite"), profile="p", progress=False)


def test_second_run_is_served_entirely_from_cache(tmp_path):
    backend = CountingBackend()
    first = _client(tmp_path, backend).generate(requests_for(["a", "b", "c"]))
    again = _client(tmp_path, backend).generate(requests_for(["a", "b", "c"]))
    assert backend.sent == ["a", "b", "c"]
    assert [r.text for r in first] == [r.text for r in again] == ["A", "B", "C"]
    assert not any(r.cached for r in first) and all(r.cached for r in again)


def test_repeats_within_a_batch_are_sent_once_and_flagged(tmp_path):
    backend = CountingBackend()
    out = _client(tmp_path, backend).generate(requests_for(["a", "b", "a", "a"]))
    assert backend.sent == ["a", "b"]
    assert [r.text for r in out] == ["A", "B", "A", "A"]
    assert [r.cached for r in out] == [False, False, True, True]


def test_failures_are_returned_recorded_and_retried_next_run(tmp_path):
    backend = CountingBackend(fail={"b"})
    client = _client(tmp_path, backend)
    out = client.generate(requests_for(["a", "b"]))
    assert out[1].error == "HTTP 500 after 2 attempts" and out[0].ok
    assert client.cache.failures()["reason"].tolist() == ["HTTP 500 after 2 attempts"]
    backend.fail.clear()
    again = client.generate(requests_for(["a", "b"]))
    assert backend.sent == ["a", "b", "b"] and again[1].text == "B"


def test_a_crash_mid_batch_keeps_every_answer_already_received(tmp_path):
    crashing = CountingBackend(crash_after=2)
    with pytest.raises(KeyboardInterrupt):
        _client(tmp_path, crashing).generate(requests_for(["a", "b", "c", "d"]))
    resumed = CountingBackend()
    out = _client(tmp_path, resumed).generate(requests_for(["a", "b", "c", "d"]))
    assert resumed.sent == ["c", "d"]
    assert [r.text for r in out] == ["A", "B", "C", "D"]


def test_backends_that_do_not_stream_still_get_every_answer_written(tmp_path):
    backend = CountingBackend(stream=False)
    _client(tmp_path, backend).generate(requests_for(["a", "b"]))
    assert len(_client(tmp_path, backend).cache.keys()) == 2


def test_the_cached_and_the_planning_client_both_are_clients_with_its_signatures(tmp_path):
    import inspect

    from deliberation.inference.client import Client
    from deliberation.inference.sim import SimBackend
    from deliberation.paper.plan import PlanningClient

    sim = SimBackend()
    cache = ResponseCache(tmp_path / "c.sqlite")
    clients = [
        CachedClient(sim, cache, profile="smoke", progress=False),
        PlanningClient(sim, cache, sim, profile="smoke"),
    ]
    for client in clients:
        assert isinstance(client, Client), type(client).__name__
        for method in ("key", "generate"):
            assert inspect.signature(getattr(type(client), method)) == inspect.signature(
                getattr(Client, method)
            ), (type(client).__name__, method)
    assert not isinstance(object(), Client)


def test_experiment_code_takes_the_client_protocol_not_the_cached_client():
    """A signature naming CachedClient would refuse the planning client that `deliberation plan`
    passes in its place."""
    import re
    from pathlib import Path

    import deliberation

    root = Path(deliberation.__file__).parent
    offenders = [
        str(path.relative_to(root))
        for path in root.rglob("*.py")
        if path.parent.name != "inference"
        and re.search(r"client: CachedClient\b", path.read_text())
    ]
    assert offenders == []
