"""The response cache: a documented key, rows committed as they arrive, failures never served."""

from __future__ import annotations

import dataclasses
import logging
import os
import re
import shutil
import sqlite3
from pathlib import Path
from urllib.parse import unquote

import numpy as np
import pytest

from deliberation.inference.base import (
    Backend,
    BackendIdentity,
    ChatRequest,
    ChatResponse,
    Message,
    StructuredOutput,
)
from deliberation.inference.cache import CacheError, ResponseCache, request_key
from deliberation.inference.sim import sent_fields
from deliberation.inference.tokens import count_tokens

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


# -- answers in the write-ahead log (WAL) ----------------------------------------------------

WAL_PROMPTS = [f"wal prompt {i}" for i in range(60)]


def _cache_with_wal(folder, in_file=10):
    """``folder/c.sqlite`` + ``c.sqlite-wal`` and no ``-shm``, as copied from a running cache:
    the first ``in_file`` answers are in the database file, the other 50 only in the WAL."""
    from helpers.backends import CountingBackend
    from helpers.backends import requests_for as _requests

    from deliberation.inference.client import CachedClient

    live = folder.parent / f"{folder.name}-live" / "c.sqlite"
    with ResponseCache(live) as cache:
        client = CachedClient(CountingBackend(), cache, profile="p", progress=False)
        client.generate(_requests(WAL_PROMPTS[:in_file]))
        cache._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        cache._conn.execute("PRAGMA wal_autocheckpoint=0")
        client.generate(_requests(WAL_PROMPTS[in_file:]))
        folder.mkdir(parents=True)
        for suffix in ("", "-wal"):
            shutil.copyfile(f"{live}{suffix}", folder / f"c.sqlite{suffix}")
    path = folder / "c.sqlite"
    assert path.with_name("c.sqlite-wal").stat().st_size > 0
    assert not path.with_name("c.sqlite-shm").exists()
    return path


def _folder_read_only(monkeypatch, folder):
    """What a read-only folder does to SQLite, also for root: no -shm can be created there, so
    a plain read-only open fails, and nothing there is writable."""
    import deliberation.inference.cache as cache_module

    real_connect = sqlite3.connect
    real_access = os.access

    def connect(database, *args, **kwargs):
        if "mode=ro" in str(database) and str(folder.resolve()) in unquote(str(database)):
            raise sqlite3.OperationalError("unable to open database file")
        return real_connect(database, *args, **kwargs)

    monkeypatch.setattr(cache_module.sqlite3, "connect", connect)
    monkeypatch.setattr(
        os,
        "access",
        lambda p, mode: (
            (mode != os.W_OK or folder not in Path(p).parents and Path(p) != folder)
            and real_access(p, mode)
        ),
    )


def test_a_sound_wal_is_read_and_opened_without_a_warning(tmp_path, caplog):
    path = _cache_with_wal(tmp_path / "copy")
    with caplog.at_level(logging.WARNING), ResponseCache(path) as cache:
        assert len(cache.keys()) == 60
    assert caplog.text == "" and sorted(p.name for p in path.parent.iterdir()) == ["c.sqlite"]


def test_a_read_only_cache_is_read_with_its_wal(tmp_path, monkeypatch):
    path = _cache_with_wal(tmp_path / "archive")
    before = {p.name: p.read_bytes() for p in path.parent.iterdir()}
    _folder_read_only(monkeypatch, path.parent)
    with ResponseCache(path) as cache:
        assert cache.read_only
        assert len(cache.keys()) == 60 and int(cache.stats()["calls"].sum()) == 60
    assert {p.name: p.read_bytes() for p in path.parent.iterdir()} == before


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads and writes read-only folders anyway")
def test_a_cache_in_a_really_read_only_folder_is_read_with_its_wal(tmp_path):
    path = _cache_with_wal(tmp_path / "archive")
    path.parent.chmod(0o555)
    try:
        with ResponseCache(path) as cache:
            assert cache.read_only and len(cache.keys()) == 60
    finally:
        path.parent.chmod(0o755)


def test_cache_stats_counts_the_answers_in_the_wal_of_a_read_only_cache(
    tmp_path, monkeypatch, capsys
):
    from deliberation.cli import main

    path = _cache_with_wal(tmp_path / "archive")
    _folder_read_only(monkeypatch, path.parent)
    assert main(["cache", "stats", str(path)]) == 0
    assert re.search(r"\b60\b", capsys.readouterr().out)


def test_a_wal_that_cannot_be_read_is_an_error_naming_it(tmp_path):
    path = _cache_with_wal(tmp_path / "copy")
    wal = path.with_name("c.sqlite-wal")
    wal.unlink()
    wal.mkdir()  # unreadable as a file, also for root
    for read_only in (None, True):
        with pytest.raises(CacheError, match=rf"{wal}: .*write-ahead log"):
            ResponseCache(path, read_only=read_only)


@pytest.mark.parametrize("where", ["header", "middle"])
def test_a_corrupt_wal_is_kept_aside_and_named_never_dropped_silently(tmp_path, caplog, where):
    path = _cache_with_wal(tmp_path / "copy")
    wal = path.with_name("c.sqlite-wal")
    data = bytearray(wal.read_bytes())
    frame = 24 + 4096
    start = 0 if where == "header" else 32 + 20 * frame + 100
    data[start : start + 16] = b"\xde\xad\xbe\xef" * 4
    wal.write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING), ResponseCache(path) as cache:
        kept = cache.keys()
    message = caplog.text
    assert str(wal) in message and "sent again" in message
    aside = [p for p in path.parent.iterdir() if p.name.startswith("c.sqlite-wal.")]
    assert len(aside) == 1 and str(aside[0]) in message
    assert aside[0].read_bytes() == bytes(data)  # kept exactly as found
    assert len(kept) >= 10  # the database file's answers (and the WAL's before the damage)
    # Opening again keeps no second copy of the same log.
    caplog.clear()
    with caplog.at_level(logging.WARNING), ResponseCache(path) as cache:
        assert cache.keys() == kept
    assert len([p for p in path.parent.iterdir() if p.name.startswith("c.sqlite-wal.")]) == 1


def test_the_frames_before_damage_in_the_middle_of_the_wal_are_still_served(tmp_path):
    path = _cache_with_wal(tmp_path / "copy")
    wal = path.with_name("c.sqlite-wal")
    data = bytearray(wal.read_bytes())
    frames = (len(data) - 32) // (24 + 4096)
    start = 32 + (frames - 2) * (24 + 4096) + 500  # in the second-to-last frame
    data[start : start + 4] = b"\x00\x01\x02\x03"
    wal.write_bytes(bytes(data))
    with ResponseCache(path) as cache:
        assert len(cache.keys()) > 10


@pytest.mark.parametrize("order", ["<", ">"])
@pytest.mark.parametrize("size", [8, 24, 8 + 4096, 8 + 65536])
def test_the_wal_checksum_equals_sqlite_s_word_by_word_definition(order, size):
    """fileformat.html: for each pair of 32-bit words, s0 += x[i] + s1; s1 += x[i+1] + s0."""
    import struct

    from deliberation.inference.cache import _wal_checksum

    rng = np.random.default_rng(size)
    data = rng.integers(0, 256, size, dtype=np.uint8).tobytes()
    start = tuple(int(v) for v in rng.integers(0, 2**32, 2))
    s0, s1 = start
    words = struct.unpack(f"{order}{size // 4}I", data)
    for first, second in zip(words[::2], words[1::2], strict=True):
        s0 = (s0 + first + s1) & 0xFFFFFFFF
        s1 = (s1 + second + s0) & 0xFFFFFFFF
    assert _wal_checksum(data, order, *start) == (s0, s1)
