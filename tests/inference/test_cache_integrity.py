"""The cache checks itself: schema version, foreign or truncated files, read-only use,
`cache stats` read-only, resolved failures leaving the failures table."""

from __future__ import annotations

import contextlib
import os
import sqlite3

import pytest
from helpers.backends import CountingBackend, requests_for
from helpers.damage import LEAF_INDEX, LEAF_TABLE, change_an_indexed_key, damage_page

from deliberation import exit_codes
from deliberation.cli import main
from deliberation.inference.base import ChatResponse
from deliberation.inference.cache import (
    SCHEMA_VERSION,
    CacheDamagedError,
    CacheFileError,
    CacheWriteError,
    ResponseCache,
)
from deliberation.inference.client import CachedClient

PROMPTS = [f"prompt {i}" for i in range(200)]


def _filled(path, prompts=PROMPTS):
    """A cache holding answers to ``prompts`` (closed again)."""
    with ResponseCache(path) as cache:
        CachedClient(CountingBackend(), cache, profile="p", progress=False).generate(
            requests_for(prompts)
        )
    return path


def _set_version(path, version):
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("UPDATE meta SET value = ? WHERE name = 'schema_version'", (str(version),))


def test_a_cache_from_a_newer_schema_is_refused_naming_the_file(tmp_path):
    path = _filled(tmp_path / "c.sqlite", PROMPTS[:3])
    _set_version(path, SCHEMA_VERSION + 1)
    with pytest.raises(CacheFileError, match=rf"{path}: .*schema {SCHEMA_VERSION + 1}.*newer"):
        ResponseCache(path)
    with pytest.raises(CacheFileError, match=str(path)):
        ResponseCache(path, read_only=True)


def test_a_version_1_cache_is_migrated_and_keeps_its_answers(tmp_path):
    """Version 1 had no leases table and kept failures of answered requests forever."""
    path = _filled(tmp_path / "c.sqlite", PROMPTS[:3])
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("DROP TABLE leases")
        answered = conn.execute("SELECT key FROM responses LIMIT 1").fetchone()[0]
        conn.execute(
            "INSERT INTO failures (key, profile, stage, reason, attempts, created)"
            " VALUES (?, 'p', 't', 'HTTP 500', 3, 0), ('open', 'p', 't', 'HTTP 500', 3, 0)",
            (answered,),
        )
    _set_version(path, 1)
    with ResponseCache(path) as cache:
        assert len(cache.keys()) == 3 and cache.failures()["key"].tolist() == ["open"]
        assert cache.claim(["new"]) == ["new"]  # the leases table exists again
        version = cache._conn.execute("SELECT value FROM meta").fetchone()[0]
    assert int(version) == SCHEMA_VERSION


@pytest.mark.parametrize(
    "content",
    [b"key,answer\n1,A\n", b"SQLite format 3\x00" + b"\x00" * 20, os.urandom(4096)],
    ids=["csv", "short header", "random bytes"],
)
def test_a_file_that_is_not_a_cache_is_refused_naming_it_and_left_unchanged(tmp_path, content):
    path = tmp_path / "notes.sqlite"
    path.write_bytes(content)
    with pytest.raises(CacheFileError, match=str(path)):
        ResponseCache(path)
    assert path.read_bytes() == content


def test_a_foreign_sqlite_database_is_refused_and_not_modified(tmp_path):
    path = tmp_path / "other.sqlite"
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("CREATE TABLE people (name TEXT)")
    before = path.read_bytes()
    with pytest.raises(CacheFileError, match=rf"{path}: .*not a response cache"):
        ResponseCache(path)
    assert path.read_bytes() == before


def test_a_truncated_cache_is_refused_naming_the_file(tmp_path):
    path = _filled(tmp_path / "c.sqlite")
    data = path.read_bytes()
    assert len(data) > 8192
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(CacheFileError, match=rf"{path}: truncated"):
        ResponseCache(path)


def test_a_fully_cached_run_works_on_a_read_only_cache(tmp_path):
    path = _filled(tmp_path / "c.sqlite")
    before = path.read_bytes()
    backend = CountingBackend()
    with ResponseCache(path, read_only=True) as cache:
        out = CachedClient(backend, cache, profile="p", progress=False).generate(
            requests_for(PROMPTS)
        )
        assert [r.text for r in out] == [p.upper() for p in PROMPTS] and backend.sent == []
        # A request not in the cache cannot be sent; the error names the file.
        with pytest.raises(CacheWriteError, match=rf"{path}: 1 of 1 requests .* read-only"):
            CachedClient(backend, cache, profile="p", progress=False).generate(
                requests_for(["new"])
            )
    assert path.read_bytes() == before and backend.sent == []


def test_a_cache_the_process_may_not_write_opens_read_only(tmp_path, monkeypatch):
    path = _filled(tmp_path / "c.sqlite", PROMPTS[:2])
    monkeypatch.setattr(os, "access", lambda p, mode: mode != os.W_OK)
    with ResponseCache(path) as cache:
        assert cache.read_only and len(cache.get_many(cache.keys())) == 2


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes read-only files anyway")
def test_a_cache_in_a_read_only_folder_serves_a_fully_cached_run(tmp_path):
    folder = tmp_path / "archive"
    path = _filled(folder / "c.sqlite", PROMPTS[:5])
    path.chmod(0o444)
    folder.chmod(0o555)
    try:
        with ResponseCache(path) as cache:
            out = CachedClient(CountingBackend(), cache, profile="p", progress=False).generate(
                requests_for(PROMPTS[:5])
            )
        assert all(r.cached for r in out)
    finally:
        folder.chmod(0o755)


def test_cache_stats_opens_read_only_and_refuses_a_file_that_is_not_a_cache(tmp_path, capsys):
    path = _filled(tmp_path / "c.sqlite", PROMPTS[:2])
    _set_version(path, 1)  # a read-write open would migrate it
    before = path.read_bytes()
    assert main(["cache", "stats", str(path)]) == 0
    assert path.read_bytes() == before  # not migrated, hits not counted
    capsys.readouterr()

    notes = tmp_path / "notes.sqlite"
    notes.write_text("not a cache\n")
    assert main(["cache", "stats", str(notes)]) == 2
    assert str(notes) in capsys.readouterr().out and notes.read_text() == "not a cache\n"
    empty = tmp_path / "empty.sqlite"
    empty.touch()
    assert main(["cache", "stats", str(empty)]) == 2 and empty.read_bytes() == b""


def test_answered_failures_leave_the_failures_table_and_stats(tmp_path):
    backend = CountingBackend(fail={"b", "c"})
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        client = CachedClient(backend, cache, profile="p", progress=False)
        client.generate(requests_for(["a", "b", "c"]))
        client.generate(requests_for(["a", "b", "c"]))  # b and c fail twice: one failure each
        assert cache.stats()["failures"].tolist() == [2]
        backend.fail = {"c"}
        client.generate(requests_for(["a", "b", "c"]))
        rows = cache._conn.execute("SELECT DISTINCT key FROM failures").fetchall()
        assert [key for (key,) in rows] == [client.key(requests_for(["c"])[0])]
        assert cache.stats()["failures"].tolist() == [1]
        assert cache.failures()["reason"].tolist() == ["HTTP 500 after 2 attempts"] * 3


def test_record_failure_then_put_clears_the_failure(tmp_path):
    (request,) = requests_for(["a"])
    backend = CountingBackend()
    with ResponseCache(tmp_path / "c.sqlite") as cache:
        cache.record_failure("k", request, ChatResponse(text="", error="x"), profile="p")
        cache.put("k", request, ChatResponse(text="A"), profile="p", identity=backend.identity)
        assert cache.failures().empty and cache.stats()["failures"].tolist() == [0]


def test_damage_found_only_when_reading_still_names_the_file(tmp_path):
    path = _filled(tmp_path / "c.sqlite")
    cache = ResponseCache(path)
    with path.open("r+b") as handle:  # damaged while open (a failing disk, a bad copy-back)
        handle.truncate(path.stat().st_size // 2)
    with pytest.raises(CacheDamagedError, match=rf"{path}: the response cache is damaged \(cannot"):
        cache.get_many(cache.keys())


@pytest.mark.parametrize("damage", ["data page", "index page", "index content", "stored answer"])
def test_a_damaged_cache_is_found_on_open_before_anything_is_sent(tmp_path, damage):
    path = _filled(tmp_path / "c.sqlite")
    if damage == "index content":
        change_an_indexed_key(path, offset=40)
    elif damage == "stored answer":  # bytes inside a record: no SQLite check can see them
        damage_page(path, LEAF_TABLE, at="cells")
        with ResponseCache(path) as cache, pytest.raises(CacheDamagedError, match="damaged"):
            cache.get_many(cache.keys())
        return
    else:
        kind, at = (LEAF_TABLE, "header") if damage == "data page" else (LEAF_INDEX, "cells")
        damage_page(path, kind, at=at)
    for read_only in (False, True):
        with pytest.raises(CacheDamagedError) as caught:
            ResponseCache(path, read_only=read_only)
        message = str(caught.value)
        assert message.startswith(f"{path}: the response cache is damaged (")
        assert f"mv {path} {path}.damaged" in message and ".recover" in message
        assert "disk is full" not in message and "free space" not in message


def test_damage_met_while_writing_is_told_apart_from_a_full_disk(tmp_path, monkeypatch):
    """A page that turns bad during a run: the answers received are spilled, and the one line
    says the file is damaged and what to do, never "free space"."""
    monkeypatch.setenv("DELIBERATION_SPILL_DIR", str(tmp_path / "spill"))
    path = _filled(tmp_path / "c.sqlite", PROMPTS[:5])
    cache = ResponseCache(path)

    def malformed(row):
        raise sqlite3.DatabaseError("database disk image is malformed")

    monkeypatch.setattr(cache, "_insert_row", malformed)
    client = CachedClient(CountingBackend(), cache, profile="p", progress=False, write_wait_s=0)
    with pytest.raises(CacheDamagedError) as caught:
        client.generate(requests_for(PROMPTS[5:8]))
    message = str(caught.value)
    assert "damaged (SQLite: database disk image is malformed)" in message
    assert "received answers saved in" in message and "free space" not in message
    assert caught.value.exit_code == exit_codes.BAD_INPUT != CacheWriteError.exit_code
