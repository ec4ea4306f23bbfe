"""Disk full: the batch stops at once, the answers received are stored after a few tries or
spilled where the next run imports them, and the one-line error names the file and the space. SQLite's ``max_page_count`` makes the file "full" (SQLITE_FULL,
the error a full disk gives) without filling a disk."""

from __future__ import annotations

import logging
import subprocess

import pytest
from helpers.backends import CountingBackend, requests_for

from deliberation import exit_codes
from deliberation.inference import cache as cache_module
from deliberation.inference.base import ChatResponse
from deliberation.inference.cache import (
    CacheFileError,
    CacheWriteError,
    ResponseCache,
    spill_files,
)
from deliberation.inference.client import CachedClient

PROMPTS = [f"{i:03d} " + "x" * 3000 for i in range(10)]  # one page per answer


def _fill_disk(cache):
    pages = cache._conn.execute("PRAGMA page_count").fetchone()[0]
    cache._conn.execute(f"PRAGMA max_page_count={pages}")


def _free_space(cache):
    cache._conn.execute("PRAGMA max_page_count=1000000")


def test_a_full_disk_stops_the_batch_at_once_and_a_rerun_sends_only_what_never_arrived(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("DELIBERATION_SPILL_DIR", str(tmp_path / "elsewhere"))
    path = tmp_path / "c.sqlite"
    backend = CountingBackend()
    with ResponseCache(path) as cache:
        client = CachedClient(backend, cache, profile="p", progress=False, write_wait_s=0.01)
        client.generate(requests_for(PROMPTS[:2]))  # two answers stored while there was room
        _fill_disk(cache)
        with pytest.raises(CacheWriteError) as caught:
            client.generate(requests_for(PROMPTS))
        assert caught.value.exit_code == exit_codes.OUTPUT_UNWRITABLE and caught.value.disk_full
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"{path}: stopped, its disk is full")
    assert "MiB free on its disk, storing them needs about" in message
    # Stopped at the first answer it could not store: nothing more was sent.
    assert backend.sent == PROMPTS[:2] + PROMPTS[2:3]
    (spill,) = spill_files(path)
    assert spill.parent == tmp_path and f"1 received answers saved in {spill}" in message
    assert caught.value.unwritten == []
    rerun = CountingBackend()
    with ResponseCache(path) as cache:  # a new connection: the space is back
        out = CachedClient(rerun, cache, profile="p", progress=False).generate(
            requests_for(PROMPTS)
        )
        assert len(cache.keys()) == len(PROMPTS)
    assert [r.text for r in out] == [p.upper() for p in PROMPTS]
    assert rerun.sent == PROMPTS[3:]  # the spilled answer is served, not paid again
    assert spill_files(path) == []


def test_space_freed_during_the_bounded_retries_stores_the_answers_and_still_stops(
    tmp_path, monkeypatch
):
    import deliberation.inference.client as client_module

    with ResponseCache(tmp_path / "c.sqlite") as cache:
        _fill_disk(cache)
        waits = []

        def sleep_and_free(seconds):  # the user frees space while the client waits
            waits.append(seconds)
            _free_space(cache)

        monkeypatch.setattr(client_module.time, "sleep", sleep_and_free)
        client = CachedClient(CountingBackend(), cache, profile="p", progress=False)
        with pytest.raises(CacheWriteError, match="the 1 replies held are stored now"):
            client.generate(requests_for(PROMPTS))
        assert len(cache.keys()) == 1 and waits == [1.0]
        assert spill_files(cache.path) == []


def test_retries_are_bounded(tmp_path, monkeypatch):
    import deliberation.inference.client as client_module

    waits = []
    monkeypatch.setattr(client_module.time, "sleep", waits.append)
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        _fill_disk(cache)
        client = CachedClient(CountingBackend(stream=False), cache, profile="p",
                              progress=False, write_attempts=4)  # fmt: skip
        with pytest.raises(CacheWriteError, match="10 received answers saved in"):
            client.generate(requests_for(PROMPTS))
    assert waits == [1.0, 2.0, 4.0]  # a non-streaming backend's whole batch is spilled too


def test_answers_with_no_room_anywhere_stay_in_the_error(tmp_path, monkeypatch):
    """The line says truthfully that they are lost when the process ends and that the rerun
    sends those calls again; a Python caller still finds them in the error."""
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    monkeypatch.setattr(cache_module, "_spill_targets", lambda path: [blocked / "x.jsonl"])
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        _fill_disk(cache)
        client = CachedClient(CountingBackend(), cache, profile="p", progress=False,
                              write_wait_s=0)  # fmt: skip
        with pytest.raises(CacheWriteError, match="could not be saved anywhere") as caught:
            client.generate(requests_for(PROMPTS))
        message = str(caught.value)
        assert "are lost when this process ends" in message
        assert "it sends those 1 calls again" in message and "only the calls never" not in message
        ((request, response),) = caught.value.unwritten
        assert response.text == PROMPTS[0].upper()
        # Nothing was half-written, and the answer can still be stored by hand.
        assert cache.keys() == set()
        _free_space(cache)
        cache.put(client.key(request), request, response, profile="p",
                  identity=client.backend.identity)  # fmt: skip
        assert len(cache.keys()) == 1


class FailsLoudly(CountingBackend):
    def generate(self, requests, on_response=None):
        response = ChatResponse(text="", error="HTTP 500: " + "x" * 5000, attempts=3)
        on_response(0, response)
        return [response]


def test_a_full_disk_on_a_failure_row_keeps_the_failure_too(tmp_path):
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        _fill_disk(cache)
        client = CachedClient(FailsLoudly(), cache, profile="p", progress=False,
                              write_wait_s=0)  # fmt: skip
        with pytest.raises(CacheWriteError, match="no answer is lost") as caught:
            client.generate(requests_for(["a"]))
        ((_, failure),) = caught.value.unwritten
        assert failure.error.startswith("HTTP 500: xxx") and failure.attempts == 3
        assert spill_files(cache.path) == []


def test_a_damaged_spill_file_is_refused_naming_it(tmp_path):
    path = tmp_path / "c.sqlite"
    ResponseCache(path).close()
    spill = tmp_path / "c.sqlite.spill-20260101T000000-1-abcdef.jsonl"
    spill.write_text('{"format": "deliberation-spill", "answers": 1}\n{"key": 3}\n')
    with pytest.raises(CacheFileError, match=rf"{spill}: line 2: not a spilled answer"):
        ResponseCache(path)


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


def test_a_really_full_disk_spills_elsewhere_and_exits_7_until_space_is_freed(
    tiny_disk, tmp_path, monkeypatch
):
    elsewhere = tmp_path / "elsewhere"
    monkeypatch.setenv("DELIBERATION_SPILL_DIR", str(elsewhere))
    path = tiny_disk / "c.sqlite"
    prompts = [f"{i:03d} " + "y" * 20_000 for i in range(40)]  # ~1.6 MB of answers, 300 KiB disk
    backend = CountingBackend()
    with ResponseCache(path) as cache:
        client = CachedClient(backend, cache, profile="p", progress=False, write_wait_s=0)
        with pytest.raises(CacheWriteError, match="stopped, its disk is full") as caught:
            client.generate(requests_for(prompts))
    stored = len(backend.sent) - 1
    assert 0 < stored < len(prompts)
    (spill,) = spill_files(path)
    assert spill.parent == elsewhere  # no room beside the cache either
    assert f"1 received answers saved in {spill}" in str(caught.value)
    # A rerun with the disk still full stops at once too (exit 7, not "bad input").
    again = CountingBackend()
    with pytest.raises(CacheWriteError, match="cannot import the 1 answers") as caught:
        ResponseCache(path)
    assert caught.value.exit_code == exit_codes.OUTPUT_UNWRITABLE and again.sent == []
    subprocess.run(["mount", "-o", "remount,size=20m", str(tiny_disk)], check=True)
    with ResponseCache(path) as cache:
        CachedClient(again, cache, profile="p", progress=False).generate(requests_for(prompts))
    assert again.sent == prompts[stored + 1 :]  # only what was never received
    assert spill_files(path) == []


def test_over_http_a_full_disk_stops_sending_and_the_rerun_sends_only_the_rest(tmp_path):
    """The openai backend at concurrency 4: the first answer that cannot be stored stops the
    batch (nothing more is sent; the requests in flight end and are spilled with it); the rerun
    sends only the others."""
    from helpers.failing_server import cached_openai_client, failing_server
    from helpers.serve_sim import arithmetic_requests

    cache_file = tmp_path / "c.sqlite"
    with failing_server() as server:
        _, client = cached_openai_client(server.base_url, cache_file, concurrency=4)
        client.write_wait_s = 0

        def fill_at_first_post(stage, body):  # leases are taken: the disk fills as replies come
            with client.cache._lock:
                _fill_disk(client.cache)
            return False  # forwarded to serve-sim, answered

        server.fail = fill_at_first_post
        with pytest.raises(CacheWriteError, match="stopped, its disk is full"):
            client.generate(arithmetic_requests(40))
        sent, stored = server.total_posts, len(client.cache.keys())
        client.cache.close()
        (spill,) = spill_files(cache_file)
        spilled = len(spill.read_text().splitlines()) - 1
        # Stopped at once: at most the requests in flight (concurrency 4) after the first
        # answer that could not be stored, each of them received and spilled.
        assert 1 <= spilled <= 4 and sent == stored + spilled < 40
        server.reset()
        server.fail = lambda stage, body: False
        _, again = cached_openai_client(server.base_url, cache_file, concurrency=4)
        assert all(r.ok for r in again.generate(arithmetic_requests(40)))
        assert server.total_posts == 40 - sent  # only what was never received


def test_the_stop_on_a_really_full_disk_is_one_line_with_no_warning_beside_it(
    tiny_disk, tmp_path, monkeypatch, caplog
):
    monkeypatch.setenv("DELIBERATION_SPILL_DIR", str(tmp_path / "elsewhere"))
    prompts = [f"{i:03d} " + "y" * 20_000 for i in range(40)]
    with ResponseCache(tiny_disk / "c.sqlite") as cache:
        client = CachedClient(CountingBackend(), cache, profile="p", progress=False,
                              write_wait_s=0)  # fmt: skip
        with caplog.at_level(logging.DEBUG), pytest.raises(CacheWriteError, match="stopped"):
            client.generate(requests_for(prompts))
    # The error says it all: no warning beside it (a lease that cannot be released is DEBUG).
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


def _spill_one(path, profile="p", prompts=PROMPTS[:3]):
    """Fill the disk of a new cache at ``path`` (SQLite's page limit) under a batch: one answer
    is spilled beside it. The spill file."""
    with ResponseCache(path) as cache:
        _fill_disk(cache)
        client = CachedClient(CountingBackend(), cache, profile=profile, progress=False,
                              write_wait_s=0)  # fmt: skip
        with pytest.raises(CacheWriteError):
            client.generate(requests_for(prompts))
    (spill,) = spill_files(path)
    return spill


def _stop_on_a_full_disk(path, prompts, profile="p"):
    """Run ``prompts`` on a cache at ``path`` whose disk fills: (backend, the error)."""
    backend = CountingBackend()
    with ResponseCache(path) as cache:
        client = CachedClient(backend, cache, profile=profile, progress=False, write_wait_s=0)
        with pytest.raises(CacheWriteError) as caught:
            client.generate(requests_for(prompts))
    return backend, caught.value


def test_spilled_answers_follow_the_profile_to_a_moved_cache(tiny_disk, tmp_path, monkeypatch):
    """Issue 46 item 4: after exit 7 the cache moves to a bigger disk (DELIBERATION_CACHE_DIR);
    the rerun finds the spill by the cache's name, imports it, and pays only for the rest."""
    import shutil

    monkeypatch.setenv("DELIBERATION_SPILL_DIR", str(tmp_path / "spill"))
    prompts = [f"{i:03d} " + "y" * 20_000 for i in range(40)]
    backend, error = _stop_on_a_full_disk(tiny_disk / "p.sqlite", prompts)
    (spill,) = spill_files(tiny_disk / "p.sqlite")
    assert spill.parent == tmp_path / "spill"
    message = str(error)
    assert f"saved in {spill}: the next run of profile p imports them first" in message
    assert f"deliberation cache import {spill}" in message
    assert "it sends only the calls never answered" in message
    bigger = tmp_path / "bigger"
    bigger.mkdir()
    for part in tiny_disk.glob("p.sqlite*"):
        shutil.move(part, bigger / part.name)
    again = CountingBackend()
    with ResponseCache(bigger / "p.sqlite") as cache:
        CachedClient(again, cache, profile="p", progress=False).generate(requests_for(prompts))
    assert again.sent == prompts[len(backend.sent) :]  # the spilled answer was not paid again
    assert not spill.exists()


def test_a_spill_of_another_cache_still_there_is_left_to_it_and_named(tmp_path, monkeypatch,
                                                                      caplog):  # fmt: skip
    monkeypatch.setenv("DELIBERATION_SPILL_DIR", str(tmp_path / "spill"))
    first = tmp_path / "a" / "p.sqlite"
    beside = _spill_one(first)
    parked = tmp_path / "spill" / beside.name
    parked.parent.mkdir()
    beside.rename(parked)  # as if the cache's own disk had had no room
    assert spill_files(first) == [parked]
    with caplog.at_level(logging.WARNING), ResponseCache(tmp_path / "b" / "p.sqlite") as other:
        assert other.keys() == set()  # not imported into another cache of the same name
    assert (
        f"wait in {parked}" in caplog.text and f"deliberation cache import {parked}" in caplog.text
    )
    with ResponseCache(first) as cache:
        assert len(cache.keys()) == 1 and not parked.exists()


def test_cache_import_takes_a_spill_file(tmp_path, monkeypatch, capsys):
    from deliberation.cli import main
    from deliberation.io import paths

    monkeypatch.setenv("DELIBERATION_SPILL_DIR", str(tmp_path / "spill"))
    spill = _spill_one(tmp_path / "old" / "sim.sqlite", profile="sim")
    assert main(["cache", "import", str(spill)]) == 0
    assert "imported the 1 spilled answers" in capsys.readouterr().out
    with ResponseCache(paths.cache_dir() / "sim.sqlite", read_only=True) as cache:
        assert len(cache.keys()) == 1
    assert not spill.exists()


def test_the_shared_default_folder_gives_up_only_spills_written_for_this_cache(tmp_path,
                                                                               monkeypatch):  # fmt: skip
    """With DELIBERATION_SPILL_DIR naming the run's own folder, a spill left in the system's
    default folder by a cache of the same name that is gone (another run's temporary one) is not
    taken; the folder runs spill into adopts it."""
    shared = tmp_path / "system-tmp"
    monkeypatch.setattr(cache_module, "_default_spill_dir", lambda: shared)
    gone = tmp_path / "gone" / "p.sqlite"
    spill = _spill_one(gone)
    shared.mkdir()
    spill = spill.rename(shared / spill.name)
    for part in gone.parent.iterdir():
        part.unlink()
    gone.parent.rmdir()
    with ResponseCache(tmp_path / "mine" / "p.sqlite") as cache:  # SPILL_DIR: the test's own
        assert cache.keys() == set() and spill.exists()
    monkeypatch.delenv("DELIBERATION_SPILL_DIR")
    with ResponseCache(tmp_path / "mine" / "p.sqlite") as cache:  # the default is the folder
        assert len(cache.keys()) == 1 and not spill.exists()
