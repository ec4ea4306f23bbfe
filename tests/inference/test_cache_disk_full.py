"""Disk full: answers received while the cache cannot be written are kept, the write is retried,
and the error names the file. SQLite's ``max_page_count`` makes the file "full" (SQLITE_FULL,
the error a full disk gives) without filling a disk."""

from __future__ import annotations

import logging

import pytest
from helpers.backends import CountingBackend, requests_for

from deliberation.inference.base import ChatResponse
from deliberation.inference.cache import CacheWriteError, ResponseCache
from deliberation.inference.client import CachedClient

PROMPTS = [f"{i:03d} " + "x" * 3000 for i in range(10)]  # one page per answer


def _fill_disk(cache):
    pages = cache._conn.execute("PRAGMA page_count").fetchone()[0]
    cache._conn.execute(f"PRAGMA max_page_count={pages}")


def _free_space(cache):
    cache._conn.execute("PRAGMA max_page_count=1000000")


class FreesSpaceAfter(CountingBackend):
    """Streams answers; space is freed (as a user would) after ``after`` answers."""

    def __init__(self, cache, after):
        super().__init__()
        self.cache, self.after = cache, after

    def generate(self, requests, on_response=None):
        def deliver(index, response):
            if index == self.after:
                _free_space(self.cache)
            on_response(index, response)

        return super().generate(requests, on_response=deliver)


def test_answers_arriving_while_the_disk_is_full_are_kept_and_written_later(tmp_path, caplog):
    path = tmp_path / "c.sqlite"
    with ResponseCache(path) as cache:
        _fill_disk(cache)
        backend = FreesSpaceAfter(cache, after=6)
        client = CachedClient(backend, cache, profile="p", progress=False)
        with caplog.at_level(logging.ERROR):
            out = client.generate(requests_for(PROMPTS))
        assert [r.text for r in out] == [p.upper() for p in PROMPTS]
        assert len(cache.keys()) == len(PROMPTS)
    assert f"{path}: cannot store an answer: the disk holding this file" in caplog.text
    rerun = CountingBackend()
    with ResponseCache(path) as cache:
        CachedClient(rerun, cache, profile="p", progress=False).generate(requests_for(PROMPTS))
    assert rerun.sent == []


def test_space_freed_during_the_final_retries_still_saves_every_answer(tmp_path, caplog):
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        _fill_disk(cache)
        backend = CountingBackend()
        client = CachedClient(backend, cache, profile="p", progress=False, write_retry_s=30)
        real_sleep_calls = []

        def sleep_and_free(seconds):  # the user frees space while the client waits
            real_sleep_calls.append(seconds)
            _free_space(cache)

        import deliberation.inference.client as client_module

        original = client_module.time.sleep
        client_module.time.sleep = sleep_and_free
        try:
            with caplog.at_level(logging.WARNING):
                client.generate(requests_for(PROMPTS))
        finally:
            client_module.time.sleep = original
        assert len(cache.keys()) == len(PROMPTS) and real_sleep_calls == [1.0]
    assert "received answers held in memory, retrying" in caplog.text


def test_a_disk_that_stays_full_gives_an_error_naming_the_file_with_the_answers(tmp_path):
    path = tmp_path / "c.sqlite"
    with ResponseCache(path) as cache:
        _fill_disk(cache)
        client = CachedClient(CountingBackend(), cache, profile="p", progress=False,
                              write_retry_s=0.2)  # fmt: skip
        with pytest.raises(CacheWriteError, match=rf"{path}: 10 received answers") as caught:
            client.generate(requests_for(PROMPTS))
        assert caught.value.disk_full
        assert "MiB free on its disk; storing them needs about" in str(caught.value)
        assert [r.text for _, r in caught.value.unwritten] == [p.upper() for p in PROMPTS]
        # Nothing was half-written, and the answers can still be stored by hand.
        assert cache.keys() == set()
        _free_space(cache)
        for request, response in caught.value.unwritten:
            cache.put(client.key(request), request, response, profile="p",
                      identity=client.backend.identity)  # fmt: skip
        assert len(cache.keys()) == len(PROMPTS)


class FailsLoudly(CountingBackend):
    def generate(self, requests, on_response=None):
        response = ChatResponse(text="", error="HTTP 500: " + "x" * 5000, attempts=3)
        on_response(0, response)
        return [response]


def test_a_full_disk_on_a_failure_row_keeps_the_failure_too(tmp_path):
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        _fill_disk(cache)
        client = CachedClient(FailsLoudly(), cache, profile="p", progress=False,
                              write_retry_s=0.1)  # fmt: skip
        with pytest.raises(CacheWriteError, match="cannot record a failure") as caught:
            client.generate(requests_for(["a"]))
        ((_, failure),) = caught.value.unwritten
        assert failure.error.startswith("HTTP 500: xxx") and failure.attempts == 3


def test_a_fully_cached_run_is_served_when_hit_counts_cannot_be_written(tmp_path, caplog):
    path = tmp_path / "c.sqlite"
    with ResponseCache(path) as cache:
        CachedClient(CountingBackend(), cache, profile="p", progress=False).generate(
            requests_for(["a", "b"])
        )
        cache._conn.execute("PRAGMA query_only=1")  # every write now fails, as on a full disk
        backend = CountingBackend()
        with caplog.at_level(logging.WARNING):
            out = CachedClient(backend, cache, profile="p", progress=False).generate(
                requests_for(["a", "b"])
            )
    assert [r.text for r in out] == ["A", "B"] and backend.sent == []
    assert f"{path}: hit counts not updated" in caplog.text


def test_the_write_ahead_log_stays_small_during_a_long_run(tmp_path):
    from deliberation.inference.cache import WAL_SIZE_LIMIT, wal_path

    path = tmp_path / "c.sqlite"
    prompts = [f"{i:04d} " + "x" * 3000 for i in range(400)]  # about 2.4 MB of answers
    with ResponseCache(path) as cache:
        client = CachedClient(CountingBackend(), cache, profile="p", progress=False)
        largest = 0
        for start in range(0, len(prompts), 20):
            client.generate(requests_for(prompts[start : start + 20]))
            largest = max(largest, wal_path(path).stat().st_size)
        assert len(cache.keys()) == len(prompts)
    assert largest <= WAL_SIZE_LIMIT + 200 * 4096  # bounded, not growing with the run
