"""Response cache: SQLite in WAL mode, one row per answered request, committed as it arrives.

It is what makes runs resumable and answers paid for once: a rerun serves every cached key and
sends only the rest; failures are kept apart (with their reason) and retried, never served.
Processes sharing the file split a batch key by key through *lease rows* rather than a file
lock: a lock would serialise whole batches, while rows live in the same transaction as the
answers, can be inspected, and end when their owner's process is gone. The key is
:func:`request_key` (its fields are written down there and nowhere else). Leases, the
write-ahead log's checks, import and export: docs/cache.md; a full disk (spill files) and a
damaged file: docs/failed-calls.md.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import glob
import hashlib
import json
import logging
import math
import os
import re
import shutil
import sqlite3
import struct
import tempfile
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np
import pandas as pd

from deliberation import exit_codes
from deliberation.inference.base import (
    Backend,
    BackendIdentity,
    ChatRequest,
    ChatResponse,
    InvalidRequestError,
    unencodable_text,
)
from deliberation.inference.tokens import count_tokens
from deliberation.io import disk, paths
from deliberation.io.processes import HOST, process_alive

log = logging.getLogger(__name__)

SCHEMA_VERSION = 2
# Versions this code can read as they are (read-only opens cannot migrate).
_READABLE_VERSIONS = frozenset({1, 2})
_SQLITE_HEADER = b"SQLite format 3\x00"
# The write-ahead log during a run: checkpointed every this many pages, truncated to this size.
_WAL_CHECKPOINT_PAGES = 100
WAL_SIZE_LIMIT = 1024 * 1024

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    profile TEXT NOT NULL,
    backend TEXT NOT NULL,
    model TEXT NOT NULL,
    stage TEXT NOT NULL,
    request TEXT NOT NULL,
    response TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    latency_s REAL NOT NULL,
    attempts INTEGER NOT NULL,
    hits INTEGER NOT NULL DEFAULT 0,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS failures (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    key TEXT NOT NULL,
    profile TEXT NOT NULL,
    stage TEXT NOT NULL,
    reason TEXT NOT NULL,
    attempts INTEGER NOT NULL,
    created REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS failures_by_key ON failures (key);
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS leases (
    key TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    expires REAL NOT NULL
);
"""


# Answers this process committed as they arrived (what an interrupted command says it kept).
ANSWERS_STORED = 0


class CacheError(RuntimeError):
    """A problem with one cache file; the message names the file."""

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


class CacheFileError(CacheError):
    """The file is not a response cache this code can use (foreign, damaged, other schema)."""


class CacheDamagedError(CacheFileError):
    """The file is damaged (SQLite finds malformed pages or indexes): not a full disk."""

    exit_code = exit_codes.BAD_INPUT  # the message names the file, as for any bad input file

    def __init__(self, path: Path, detail: str, *, kept: str = "") -> None:
        super().__init__(path, damaged_advice(path, detail, kept))
        self.detail = detail
        # (request, response) pairs received but not stored, when a client gives up writing.
        self.unwritten: list[tuple[ChatRequest, ChatResponse]] = []


def damaged_advice(path: Path, detail: str, kept: str = "") -> str:
    """What a damaged cache's error says: that it is damaged, what was kept, the ways on."""
    return (
        f"the response cache is damaged ({detail}); {kept + '; ' if kept else ''}"
        f"move it aside (mv {path} {path}.damaged)"
        " and rerun to start a new cache (its calls are then sent again; published answers"
        " come back with `deliberation cache import results/<profile>/responses.jsonl.gz`),"
        " or restore it from a copy, or recover what is readable with the sqlite3 tool"
        f" (sqlite3 {path} .recover | sqlite3 {path}.recovered)"
    )


_SQLITE_CORRUPT, _SQLITE_NOTADB = 11, 26


def is_damage(error: BaseException) -> bool:
    """Whether an SQLite error says the file is damaged (not full, not locked)."""
    if not isinstance(error, sqlite3.DatabaseError):
        return False
    code = getattr(error, "sqlite_errorcode", None)
    if code is not None and code & 0xFF in (_SQLITE_CORRUPT, _SQLITE_NOTADB):
        return True
    text = str(error).lower()
    signs = ("malformed", "not a database", "corrupt", "could not decode to utf-8")
    return any(sign in text for sign in signs)


class CacheConflictError(CacheError):
    """An answer to import differs from the one the cache already holds for its key."""


# What makes two stored answers the same answer (latency and attempts describe the call).
_ANSWER_FIELDS = ("text", "parsed", "finish_reason", "prompt_tokens", "completion_tokens")


def _same_answer(stored: dict, new: dict) -> bool:
    return all(stored.get(name) == new.get(name) for name in _ANSWER_FIELDS)


class CacheWriteError(CacheError):
    """A write did not reach the file (disk full, read-only); the caller still holds the data."""

    exit_code = exit_codes.OUTPUT_UNWRITABLE

    def __init__(self, path: Path, problem: str, *, disk_full: bool = False) -> None:
        super().__init__(path, problem)
        self.disk_full = disk_full
        # (request, response) pairs received but not stored, when a client gives up writing.
        self.unwritten: list[tuple[ChatRequest, ChatResponse]] = []


def request_key(backend: Backend, request: ChatRequest) -> str:
    """SHA-256 of what an answer depends on: the request as the backend sends it.

    Hashed: the backend's identity (name, model id, revision, base URL), the stage tag, the
    sample index, and ``backend.request_payload(request)`` (for ``openai`` the JSON body and the
    stage header; for ``vllm`` the messages, every ``SamplingParams`` field, the structured
    spec, ``chat_template_kwargs`` and every output-changing engine option; for ``sim`` the
    request fields it reads). Never an API key. The stage is included because the sim dispatches
    on it; the sample index so that repeated draws keep their own rows even when no seed is sent.
    Raises :class:`InvalidRequestError` (naming the field) for a request that cannot be sent.
    """
    try:
        payload = {
            "identity": dataclasses.asdict(backend.identity),
            "stage": request.stage,
            "sample": request.sample,
            "sent": backend.request_payload(request),
        }
        blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()
    except (TypeError, ValueError) as exc:  # UnicodeEncodeError is a ValueError
        seen = {"messages": request.messages_as_dicts(), "stage": request.stage}
        where = unencodable_text(seen, "request")
        reason = f"{where} (not valid Unicode text)" if where else f"{type(exc).__name__}: {exc}"
        raise InvalidRequestError(f"cannot send this request: {reason}") from None


def _request_record(request: ChatRequest) -> str:
    return json.dumps(
        {
            "messages": request.messages_as_dicts(),
            "stage": request.stage,
            **request.sampling_fields(),
        },
        sort_keys=True,
        ensure_ascii=False,
    )


def _create_tables(conn: sqlite3.Connection) -> None:
    # One statement at a time: executescript would commit the caller's open transaction.
    for statement in _SCHEMA.split(";"):
        if statement.strip():
            conn.execute(statement)


def _migrate_1_to_2(conn: sqlite3.Connection) -> None:
    """Version 2 adds the leases table and keeps only outstanding failures."""
    _create_tables(conn)
    conn.execute("DELETE FROM failures WHERE key IN (SELECT key FROM responses)")


_MIGRATIONS = {1: _migrate_1_to_2}


def _enable_wal(conn: sqlite3.Connection, timeout_s: float = 30.0) -> None:
    """Switch to WAL. SQLite does not wait for a lock to change the journal mode, so a new
    file another process is creating at the same moment is retried, not reported."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _chunks(items: list[str], size: int = 500) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _check_cache_file(path: Path) -> None:
    """Refuse, naming the file, what is not an SQLite database or is shorter than its header
    says (a truncated copy); an empty file is a new cache."""
    size = path.stat().st_size
    if size == 0:
        return
    with path.open("rb") as handle:
        header = handle.read(100)
    if not header.startswith(_SQLITE_HEADER):
        raise CacheFileError(path, "not a response cache (not an SQLite database)")
    if len(header) < 100:
        raise CacheFileError(path, f"truncated SQLite file ({size} bytes)")
    page_size = struct.unpack(">H", header[16:18])[0]
    page_size = 65536 if page_size == 1 else page_size
    change_counter, pages = struct.unpack(">II", header[24:32])
    valid_for = struct.unpack(">I", header[92:96])[0]
    # The page count in the header is trustworthy only when valid_for matches the counter, and
    # only with no write-ahead log beside the file (a checkpoint in progress writes page 1
    # before the pages that extend the file).
    wal = path.with_name(path.name + "-wal")
    settled = not (wal.exists() and wal.stat().st_size > 0)
    if settled and pages and valid_for == change_counter and size < pages * page_size:
        raise CacheFileError(
            path,
            f"truncated SQLite file: {size} bytes, its header says {pages * page_size};"
            " restore it from a copy or move it aside to start a new cache",
        )


# The check on open, sized to the file: SQLite's integrity_check (pages, b-trees, and every index
# against its table) up to FULL_CHECK_BYTES, quick_check (the same without the index-content
# comparison) up to QUICK_CHECK_BYTES; each reads the whole file (about 0.2 s per 40 MiB on a
# loaded 2-core machine). Larger files are not checked on open (`deliberation cache check`).
FULL_CHECK_BYTES = 256 * 2**20
QUICK_CHECK_BYTES = 2 * 2**30
# Files already found sound in this process: (path, size, mtime, log size).
_SOUND: set[tuple[str, int, int, int]] = set()


def _integrity_problem(conn: sqlite3.Connection, path: Path, *, force: bool = False) -> str | None:
    """What SQLite's check finds wrong with the open file (the first problems it lists), or
    None when it is sound or too large to check on open (``force`` checks any size)."""
    wal = wal_path(path)
    try:
        stat = path.stat()
        state = (str(path.resolve()), stat.st_size, stat.st_mtime_ns,
                 wal.stat().st_size if wal.exists() else 0)  # fmt: skip
    except OSError:
        return None
    if state in _SOUND:
        return None
    size = stat.st_size + state[3]
    if size > FULL_CHECK_BYTES and not force:
        if size > QUICK_CHECK_BYTES:
            log.info("%s: %s, not checked on open (`deliberation cache check` checks it)",
                     path, disk.mib(size))  # fmt: skip
            return None
        rows = conn.execute("PRAGMA quick_check(5)").fetchall()
    else:
        rows = conn.execute("PRAGMA integrity_check(5)").fetchall()
    found = [str(row[0]) for row in rows]
    if found == ["ok"]:
        _SOUND.add(state)
        return None
    return "SQLite's check: " + "; ".join(found)[:400]


# The write-ahead log's format (https://www.sqlite.org/fileformat.html#the_write_ahead_log): a
# 32-byte header, then frames of a 24-byte header and one page. The magic's last bit says in which
# byte order the checksums read the data.
_WAL_MAGICS = {0x377F0682: "<", 0x377F0683: ">"}
_WAL_VERSION = 3007000
_WAL_HEADER = 32
_WAL_FRAME_HEADER = 24


def wal_path(path: Path) -> Path:
    return path.with_name(path.name + "-wal")


_MASK32 = 0xFFFFFFFF


@functools.lru_cache(maxsize=8)
def _checksum_powers(pairs: int) -> np.ndarray:
    """Rows ``j = 0..pairs``: the entries (p, q, r, t) of ``[[1, 1], [1, 2]] ** j`` mod 2**32."""
    rows = np.empty((pairs + 1, 4), dtype=np.uint64)
    p, q, r, t = 1, 0, 0, 1
    for j in range(pairs + 1):
        rows[j] = (p, q, r, t)
        # M^(j+1) = M^j @ [[1, 1], [1, 2]]
        p, q, r, t = (
            (p + q) & _MASK32,
            (p + 2 * q) & _MASK32,
            (r + t) & _MASK32,
            (r + 2 * t) & _MASK32,
        )
    return rows


def _wal_checksum(data: bytes, order: str, s0: int, s1: int) -> tuple[int, int]:
    """SQLite's WAL checksum of ``data`` continuing from ``(s0, s1)``: for each pair of 32-bit
    words ``(a, b)``, ``s0 += a + s1; s1 += b + s0`` (mod 2**32). That step is linear,
    ``(s0, s1) <- M (s0, s1) + (a, a + b)`` with ``M = [[1, 1], [1, 2]]``, so the whole run is
    summed at once with powers of ``M`` (a Python loop costs ~0.6 ms per 4 KiB frame). uint64
    arithmetic wraps mod 2**64, which keeps every result right mod 2**32."""
    words = np.frombuffer(data, dtype=np.dtype(f"{order}u4")).astype(np.uint64)
    a, b = words[0::2], words[1::2]
    pairs = len(a)
    powers = _checksum_powers(pairs)
    back = powers[pairs - 1 :: -1] if pairs else powers[:0]  # M^(n-1-i) for pair i
    u0, u1 = a, a + b
    sum0 = int((back[:, 0] * u0 + back[:, 1] * u1).sum())
    sum1 = int((back[:, 2] * u0 + back[:, 3] * u1).sum())
    p, q, r, t = (int(x) for x in powers[pairs])
    return (p * s0 + q * s1 + sum0) & _MASK32, (r * s0 + t * s1 + sum1) & _MASK32


def _read_wal(wal: Path) -> bytes:
    try:
        with wal.open("rb") as handle:
            return handle.read()
    except FileNotFoundError:  # the last connection closed meanwhile: checkpointed, removed
        return b""
    except OSError as exc:
        raise CacheError(
            wal,
            f"cannot read the write-ahead log beside the response cache ({exc.strerror or exc});"
            " it holds answers not yet in the cache file: make it readable (do not delete it)",
        ) from None


def _wal_damage(data: bytes) -> tuple[str, int] | None:
    """What is wrong with a write-ahead log, and how many frames SQLite will still read; None
    when it is sound. Frames of an earlier generation (other salts) after the valid ones are
    normal leftovers, not damage."""
    if not data:
        return None
    if len(data) < _WAL_HEADER:
        return f"shorter ({len(data)} bytes) than a write-ahead log's header", 0
    magic, version, page_size, _, salt1, salt2, c1, c2 = struct.unpack(">8I", data[:32])
    order = _WAL_MAGICS.get(magic)
    if order is None or version != _WAL_VERSION:
        return "its header is damaged (not a write-ahead log header)", 0
    if page_size < 512 or page_size > 65536 or page_size & (page_size - 1):
        return f"its header is damaged (page size {page_size})", 0
    if _wal_checksum(data[:24], order, 0, 0) != (c1, c2):
        return "its header is damaged (checksum mismatch)", 0
    frame_size = _WAL_FRAME_HEADER + page_size
    frames = (len(data) - _WAL_HEADER) // frame_size
    checksum = (c1, c2)
    first_bad: int | None = None
    for index in range(frames):
        start = _WAL_HEADER + index * frame_size
        header = data[start : start + _WAL_FRAME_HEADER]
        _, _, f_salt1, f_salt2, f_c1, f_c2 = struct.unpack(">6I", header)
        ours = (f_salt1, f_salt2) == (salt1, salt2)
        if first_bad is None:
            if ours:
                page = data[start + _WAL_FRAME_HEADER : start + frame_size]
                checksum = _wal_checksum(header[:8] + page, order, *checksum)
                if checksum == (f_c1, f_c2):
                    continue
                return f"frame {index + 1} of {frames} fails its checksum", index
            first_bad = index  # an earlier generation's leftovers start here
        elif ours:
            return f"frame {first_bad + 1} of {frames} is damaged", first_bad
    return None


def _check_wal(path: Path) -> None:
    """Check the write-ahead log beside cache ``path`` (docs/cache.md) before SQLite reads it: an
    unreadable log raises :class:`CacheError` naming it; a damaged one is copied aside and
    named in a warning (once: a log already kept aside is not copied again)."""
    wal = wal_path(path)
    if not os.path.lexists(wal):
        return
    data = _read_wal(wal)
    found = _wal_damage(data)
    if found is not None:
        time.sleep(0.2)  # another process may be writing the last frame: look again
        again = _read_wal(wal)
        if again != data:
            return
    if found is None:
        return
    problem, readable = found
    kept = _keep_aside(wal, data)
    where = (
        f"the whole log, as found, is kept as {kept}"
        if kept is not None
        else "the log is left in place, unchanged (no copy could be written beside it)"
    )
    log.warning(
        "%s: the write-ahead log of this response cache is damaged: %s. SQLite reads at most"
        " the %d frame(s) before the damage; answers stored after it are not in the cache and"
        " will be sent again; %s",
        wal,
        problem,
        readable,
        where,
    )


def _keep_aside(wal: Path, data: bytes) -> Path | None:
    """A copy of the damaged log beside it (an earlier identical copy is reused), written to a
    temporary name and renamed; None when none can be written (a read-only folder)."""
    for earlier in sorted(wal.parent.glob(f"{glob.escape(wal.name)}.damaged-*")):
        with contextlib.suppress(OSError):
            if earlier.read_bytes() == data:
                return earlier
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    target = wal.with_name(f"{wal.name}.damaged-{stamp}-{uuid.uuid4().hex[:6]}")
    temp = target.with_name(f".{target.name}.tmp")
    try:
        temp.write_bytes(data)
        temp.replace(target)
    except OSError as exc:
        log.warning("%s: cannot keep a copy of the damaged log (%s)", wal, exc)
        with contextlib.suppress(OSError):
            temp.unlink()
        return None
    return target


# The columns of an answer row as stored (and spilled), in the order of the responses table;
# the first seven hold text, the others non-negative numbers.
ANSWER_COLUMNS = (
    "key", "profile", "backend", "model", "stage", "request", "response", "prompt_tokens",
    "completion_tokens", "latency_s", "attempts",
)  # fmt: skip
_TEXT_COLUMNS = ANSWER_COLUMNS[:7]


def _answer_row(
    key: str,
    request: ChatRequest,
    response: ChatResponse,
    profile: str,
    identity: BackendIdentity,
) -> dict:
    return {
        "key": key, "profile": profile, "backend": identity.backend, "model": identity.model,
        "stage": request.stage, "request": _request_record(request),
        "response": response.to_json(), "prompt_tokens": response.prompt_tokens,
        "completion_tokens": response.completion_tokens, "latency_s": response.latency_s,
        "attempts": response.attempts,
    }  # fmt: skip


_SPILL_FORMAT = "deliberation-spill"
_SPILL_DIR_ENV = "DELIBERATION_SPILL_DIR"
_SPILL_MAX_LINE = 64 * 1024 * 1024
_KEY = re.compile(r"[0-9a-f]{64}")


def _spill_dir() -> Path:
    """Where answers go when the cache's own disk has no room: ``$DELIBERATION_SPILL_DIR``, else
    ``deliberation-spill`` in the system's temporary folder (often another disk, or memory)."""
    return paths.folder_from_env(_SPILL_DIR_ENV) or _default_spill_dir()


def _default_spill_dir() -> Path:
    return Path(tempfile.gettempdir()) / "deliberation-spill"


def _spill_dirs() -> list[Path]:
    """The spill folders looked in: the configured one, and the default one as its fallback
    (alone when the configured one cannot be a folder: answers are never lost to a typo)."""
    try:
        configured = _spill_dir()
    except paths.PathSettingError as exc:
        log.warning("%s; spill files go to %s", exc, _default_spill_dir())
        return [_default_spill_dir()]
    return list(dict.fromkeys([configured, _default_spill_dir()]))


def _spill_targets(path: Path) -> list[Path]:
    """Where a spill file of cache ``path`` may go, in order: beside it, then in the spill
    folders, under the cache file's name (found there by any cache of that name)."""
    stamp = f"{time.strftime('%Y%m%dT%H%M%S', time.gmtime())}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    name = f"{path.name}.spill-{stamp}.jsonl"
    return [path.with_name(name), *(folder / name for folder in _spill_dirs())]


def _spill_header(spill: Path) -> dict:
    """A spill file's first line (``{}`` when it cannot be read: the import names the problem)."""
    try:
        with spill.open(encoding="ascii") as handle:
            header = json.loads(handle.readline(_SPILL_MAX_LINE))
    except (OSError, ValueError):
        return {}
    return header if isinstance(header, dict) else {}


def is_spill_file(path: Path) -> bool:
    return _spill_header(Path(path)).get("format") == _SPILL_FORMAT


def spill_profile(spill: Path) -> str:
    """The profile whose answers a spill file holds (its header; the first answer's for older
    files), for ``deliberation cache import``."""
    header = _spill_header(Path(spill))
    name = header.get("profile")
    if not isinstance(name, str):
        rows = _read_spill(Path(spill), Path(str(header.get("cache", "?"))))
        name = rows[0]["profile"] if rows else None
    if not isinstance(name, str) or not name:
        raise CacheFileError(Path(spill), "names no profile: give one with --profile")
    return name


def _stamp_order(spill: Path) -> str:
    return spill.name.rsplit(".spill-", 1)[1]


def _spills_named(path: Path) -> tuple[list[Path], list[Path]]:
    """Spill files of caches named like ``path`` in the spill folders: (written for this cache,
    or for one of its name that is no longer there; written for another cache that still is).
    In the default folder, when ``$DELIBERATION_SPILL_DIR`` names another one, only those
    written for this very cache are taken (that folder is shared by every run on the machine).
    Older spill files carry a 16-hex tag of their cache's path before the name."""
    name = glob.escape(path.name)
    here = str(path.resolve())
    ours: list[Path] = []
    others: list[Path] = []
    folders = _spill_dirs()
    for folder in folders:
        if not folder.is_dir():
            continue
        adopt = folder == folders[0]  # the folder this machine's runs are told to spill into
        found = [
            *folder.glob(f"{name}.spill-*.jsonl"),
            *folder.glob(f"{'?' * 16}-{name}.spill-*.jsonl"),
        ]
        for spill in found:
            written_for = _spill_header(spill).get("cache")
            gone = not (isinstance(written_for, str) and Path(written_for).exists())
            if written_for == here or (gone and adopt):
                ours.append(spill)
            else:
                others.append(spill)
    return ours, others


def spill_files(path: Path) -> list[Path]:
    """The spill files an open of cache ``path`` imports, oldest first: beside it, and in the
    spill folders those written for it or for a cache of its name that is gone (moved)."""
    path = Path(path)
    beside = list(path.parent.glob(f"{glob.escape(path.name)}.spill-*.jsonl"))
    ours, _ = _spills_named(path)
    return sorted(dict.fromkeys([*beside, *ours]), key=_stamp_order)


def _read_spill(spill: Path, cache: Path) -> list[dict]:
    """A spill file's answers, each line checked (a bounded input like any other)."""

    def refuse(problem: str) -> CacheFileError:
        return CacheFileError(
            spill,
            f"{problem}; not a spill file of {cache}: move it aside to go on (its answers, if"
            " any, are sent again)",
        )

    rows: list[dict] = []
    try:
        with spill.open(encoding="ascii") as handle:
            header = json.loads(handle.readline(_SPILL_MAX_LINE))
            if not isinstance(header, dict) or header.get("format") != _SPILL_FORMAT:
                raise refuse("line 1: no spill header")
            while line := handle.readline(_SPILL_MAX_LINE):
                row = json.loads(line)
                if not isinstance(row, dict) or set(row) != set(ANSWER_COLUMNS):
                    raise refuse(f"line {len(rows) + 2}: not a spilled answer")
                numbers = [row[name] for name in ANSWER_COLUMNS if name not in _TEXT_COLUMNS]
                if (
                    not all(isinstance(row[name], str) for name in _TEXT_COLUMNS)
                    or not _KEY.fullmatch(row["key"])
                    or not all(isinstance(n, int | float) and 0 <= n < math.inf for n in numbers)
                ):
                    raise refuse(f"line {len(rows) + 2}: a field of the wrong type")
                ChatResponse(**json.loads(row["response"]))  # a response the cache can serve
                rows.append(row)
    except (ValueError, TypeError) as exc:  # bad JSON, non-ASCII bytes, wrong response fields
        raise refuse(f"unreadable ({exc})") from None
    except OSError as exc:
        raise CacheError(spill, f"cannot read this spill file ({exc.strerror or exc})") from None
    if header.get("answers") != len(rows):
        raise refuse(f"holds {len(rows)} answers, its header says {header.get('answers')}")
    return rows


@dataclass(frozen=True)
class _Owner:
    """Who holds a lease: this process (host and pid) and this cache object."""

    host: str
    pid: int
    token: str

    @property
    def name(self) -> str:
        return f"{self.host}:{self.pid}:{self.token}"


class ResponseCache:
    """Thread-safe (one connection behind a lock); safe to share with async callbacks.

    ``read_only=None`` opens read-only when the file or its folder is not writable.
    ``lease_ttl_s`` is how long a lease lasts without renewal (see :meth:`renew_leases`).
    """

    def __init__(
        self, path: str | Path, *, read_only: bool | None = None, lease_ttl_s: float = 120.0
    ) -> None:
        self.path = Path(path)
        self.lease_ttl_s = lease_ttl_s
        self._lock = threading.Lock()
        self._owner = _Owner(HOST, os.getpid(), uuid.uuid4().hex[:12])
        self._private_copy: Path | None = None
        exists = self.path.exists()
        if exists:
            if not self.path.is_file():
                raise CacheFileError(self.path, "not a file")
            _check_cache_file(self.path)
            _check_wal(self.path)
        if read_only is None:
            read_only = exists and not (
                os.access(self.path, os.W_OK) and os.access(self.path.parent, os.W_OK)
            )
        if read_only and not exists:
            raise CacheFileError(self.path, "no such cache file")
        self.read_only = read_only
        try:
            self._conn = self._connect()
            if exists:
                problem = _integrity_problem(self._conn, self.path)
                if problem is not None:
                    raise CacheDamagedError(self.path, problem)
            if self.read_only:
                self._check_schema()
            else:  # check and create (or migrate) in one transaction: processes may race here
                with self._transaction():
                    self._check_schema()
                # Only now, so a file that is not a cache is left exactly as it was.
                _enable_wal(self._conn)
                self._conn.execute("PRAGMA synchronous=NORMAL")
            if not self.read_only:
                self._import_spills()
        except BaseException as exc:
            with contextlib.suppress(AttributeError, sqlite3.Error):
                self._conn.close()
            self._remove_private_copy()
            if is_damage(exc):
                raise CacheDamagedError(self.path, f"SQLite: {exc}") from exc
            if disk.is_disk_full(exc) and not isinstance(exc, CacheError):
                raise CacheWriteError(
                    self.path,
                    f"cannot open the response cache: its disk is full ({exc}),"
                    f" {disk.free_space(self.path)}; free space, then rerun the same command",
                    disk_full=True,
                ) from exc
            if isinstance(exc, sqlite3.OperationalError):
                raise CacheError(self.path, f"cannot open the response cache ({exc})") from exc
            raise

    def _connect(self) -> sqlite3.Connection:
        if not self.read_only:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            conn.execute("PRAGMA busy_timeout=30000")
            # Keep the -wal journal small during long runs (it grew to 4 MB for 158 answers
            # beside a 40 KB file): checkpoint every _WAL_CHECKPOINT_PAGES pages and truncate
            # the journal to WAL_SIZE_LIMIT after each checkpoint.
            conn.execute(f"PRAGMA wal_autocheckpoint={_WAL_CHECKPOINT_PAGES}")
            conn.execute(f"PRAGMA journal_size_limit={WAL_SIZE_LIMIT}")
            return conn
        uri = f"file:{quote(str(self.path.resolve()))}"
        try:
            conn = sqlite3.connect(
                f"{uri}?mode=ro", uri=True, check_same_thread=False, isolation_level=None
            )
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.OperationalError:
            # A WAL database in a read-only folder without its -shm file cannot be opened in
            # plain read-only mode (SQLite must create the -shm). Nobody can change it there.
            wal = wal_path(self.path)
            if not (wal.exists() and wal.stat().st_size > 0):
                conn = sqlite3.connect(
                    f"{uri}?immutable=1", uri=True, check_same_thread=False, isolation_level=None
                )
            else:  # immutable=1 would ignore the log's answers: read a private copy of both
                conn = self._connect_private_copy()
        conn.execute("PRAGMA busy_timeout=30000")
        return conn

    def _connect_private_copy(self) -> sqlite3.Connection:
        """Copy the file and its write-ahead log to a private temporary folder (removed on
        close) and open the copy read-only there, where SQLite can build the log's index."""
        folder = Path(tempfile.mkdtemp(prefix="deliberation-cache-"))
        self._private_copy = folder
        copy = folder / self.path.name
        try:
            shutil.copyfile(self.path, copy)
            shutil.copyfile(wal_path(self.path), wal_path(copy))
        except OSError as exc:
            raise CacheError(
                self.path, f"cannot copy the read-only cache and its log to read them ({exc})"
            ) from None
        log.info("%s: read-only with a write-ahead log; reading a private copy", self.path)
        return sqlite3.connect(
            f"file:{quote(str(copy))}?mode=ro",
            uri=True,
            check_same_thread=False,
            isolation_level=None,
        )

    def _remove_private_copy(self) -> None:
        if self._private_copy is not None:
            shutil.rmtree(self._private_copy, ignore_errors=True)
            self._private_copy = None

    def _check_schema(self) -> None:
        tables = {
            row[0]
            for row in self._conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
        if not tables:
            if self.read_only:
                raise CacheFileError(self.path, "empty file, not a response cache")
            _create_tables(self._conn)
            self._conn.execute(
                "INSERT INTO meta(name, value) VALUES ('schema_version', ?)",
                (str(SCHEMA_VERSION),),
            )
            return
        row = None
        if {"meta", "responses", "failures"} <= tables:
            row = self._conn.execute(
                "SELECT value FROM meta WHERE name = 'schema_version'"
            ).fetchone()
        if row is None:
            raise CacheFileError(
                self.path,
                "an SQLite file but not a response cache (no meta.schema_version);"
                " point the profile at another cache file",
            )
        try:
            version = int(row[0])
        except ValueError:
            raise CacheFileError(self.path, f"unreadable schema_version {row[0]!r}") from None
        if version > SCHEMA_VERSION:
            raise CacheFileError(
                self.path,
                f"written with cache schema {version}, newer than this code's {SCHEMA_VERSION};"
                " update the deliberation package to read it",
            )
        if version == SCHEMA_VERSION:
            return
        if self.read_only:
            if version not in _READABLE_VERSIONS:
                raise CacheFileError(
                    self.path,
                    f"cache schema {version} must be migrated to {SCHEMA_VERSION}, which needs"
                    " write access; open it once writable",
                )
            return
        if version not in _MIGRATIONS:
            raise CacheFileError(
                self.path,
                f"cache schema {version} is older than this code reads ({SCHEMA_VERSION})"
                " and has no migration",
            )
        while version < SCHEMA_VERSION:
            _MIGRATIONS[version](self._conn)
            version += 1
        self._conn.execute(
            "UPDATE meta SET value = ? WHERE name = 'schema_version'", (str(version),)
        )
        log.info("%s: migrated the response cache to schema %d", self.path, version)

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    @contextlib.contextmanager
    def _writing(self, what: str) -> Iterator[None]:
        """Run a write under the lock; a failed write raises CacheWriteError naming the file."""
        if self.read_only:
            raise CacheWriteError(self.path, f"cannot {what}: the cache is open read-only")
        with self._lock:
            try:
                with self._transaction():
                    yield
            except sqlite3.Error as exc:
                if is_damage(exc):
                    raise CacheDamagedError(self.path, f"SQLite: {exc}") from exc
                full = disk.is_disk_full(exc)
                problem = (
                    f"cannot {what}: the disk holding this file (or its -wal journal) is full,"
                    f" {disk.free_space(self.path)}"
                    if full
                    else f"cannot {what}"
                )
                raise CacheWriteError(self.path, f"{problem} ({exc})", disk_full=full) from exc

    @contextlib.contextmanager
    def _reading(self) -> Iterator[None]:
        """Run a read under the lock; damage found only now still names the file."""
        with self._lock:
            try:
                yield
            except sqlite3.DatabaseError as exc:
                if is_damage(exc):
                    detail = str(exc).split(" with text ", 1)[0]  # not the damaged bytes
                    raise CacheDamagedError(self.path, f"cannot read it: SQLite: {detail}") from exc
                raise CacheError(self.path, f"cannot read the response cache ({exc})") from exc

    # -- spilled answers (docs/failed-calls.md#a-full-disk) ----------------------------------------
    def spill(
        self,
        answers: Sequence[tuple[str, ChatRequest, ChatResponse]],
        *,
        profile: str,
        identity: BackendIdentity,
    ) -> tuple[Path | None, list[str]]:
        """Write answers that could not be stored to a spill file the next open imports: the
        file (beside the cache, else in :func:`_spill_dir`; None when neither could be written)
        and the problems met on the way."""
        header = {"format": _SPILL_FORMAT, "version": 1, "cache": str(self.path.resolve()),
                  "answers": len(answers), "profile": profile}  # fmt: skip
        lines = [json.dumps(header)]
        for key, request, response in answers:
            row = _answer_row(key, request, response, profile, identity)
            lines.append(json.dumps(row, ensure_ascii=True))
        text = "\n".join(lines) + "\n"
        problems: list[str] = []
        for target in _spill_targets(self.path):
            temp = target.with_name(f".{target.name}.tmp")
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                with temp.open("w", encoding="ascii") as handle:
                    handle.write(text)
                    handle.flush()
                    os.fsync(handle.fileno())
                temp.replace(target)
                return target, problems
            except OSError as exc:
                problems.append(f"{target.parent}: {exc.strerror or exc}")
                with contextlib.suppress(OSError):
                    temp.unlink()
        return None, problems

    def _import_spills(self) -> None:
        """Store the answers of every spill file of this cache (:func:`spill_files`), one
        transaction per file, and remove the file (a disk still full raises
        :class:`CacheWriteError` naming it). Spill files of another cache of the same name that
        still exists are left to it, and named."""
        for spill in spill_files(self.path):
            added = self.import_spill(spill)
            log.info("%s: imported %d answers spilled by an earlier run (%s)", self.path, added,
                     spill)  # fmt: skip
        _, others = _spills_named(self.path)
        for spill in others:
            log.warning(
                "%s: answers spilled for another cache of this name (%s) wait in %s; they are"
                " imported when that cache is opened, or here by `deliberation cache import %s`",
                self.path, _spill_header(spill).get("cache"), spill, spill,
            )  # fmt: skip

    def import_spill(self, spill: Path) -> int:
        """Store a spill file's answers (all or none; answers already here are kept), then
        remove the file; the number of its answers."""
        rows = _read_spill(spill, self.path)
        try:
            with self._writing("import spilled answers"):
                for row in rows:
                    self._insert_row(row)
        except CacheWriteError as exc:
            why = (
                f"its disk is full, {disk.free_space(self.path)}" if exc.disk_full else exc.problem
            )
            raise CacheWriteError(
                self.path,
                f"cannot import the {len(rows)} answers an earlier run spilled to {spill}"
                f" ({why}); free space, then rerun the same command",
                disk_full=exc.disk_full,
            ) from exc
        spill.unlink(missing_ok=True)
        return len(rows)

    def close(self) -> None:
        with self._lock:
            self._conn.close()
            self._remove_private_copy()

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def get_many(self, keys: Iterable[str], *, count_hits: bool = True) -> dict[str, ChatResponse]:
        """Cached responses for the keys present (flagged ``cached=True``). Hits are counted
        unless the cache is read-only."""
        wanted = list(dict.fromkeys(keys))
        found: dict[str, ChatResponse] = {}
        with self._reading():
            for chunk in _chunks(wanted):
                marks = ",".join("?" * len(chunk))
                rows = self._conn.execute(
                    f"SELECT key, response, attempts FROM responses WHERE key IN ({marks})", chunk
                ).fetchall()
                for key, blob, attempts in rows:
                    (data,) = self._decoded(key, blob)
                    found[key] = ChatResponse(**data, cached=True, attempts=attempts)
                if count_hits and rows and not self.read_only:
                    # Only the rows served: another process may add a key between the two
                    # statements, and its answer was not served here.
                    served = [row[0] for row in rows]
                    try:
                        self._conn.execute(
                            "UPDATE responses SET hits = hits + 1 WHERE key IN"
                            f" ({','.join('?' * len(served))})",
                            served,
                        )
                    except sqlite3.OperationalError as exc:  # disk full: still serve the answers
                        log.warning("%s: hit counts not updated (%s)", self.path, exc)
        return found

    def _decoded(self, key: str, *blobs: str) -> list[Any]:
        """The JSON of a stored row; a row whose bytes were damaged (SQLite checks pages, not
        the bytes inside a record) is :class:`CacheDamagedError` naming its key."""
        try:
            return [json.loads(blob) for blob in blobs]
        except (ValueError, TypeError) as exc:
            raise CacheDamagedError(
                self.path, f"the stored answer of key {key} does not decode ({type(exc).__name__})"
            ) from None

    def put(
        self,
        key: str,
        request: ChatRequest,
        response: ChatResponse,
        *,
        profile: str,
        identity: BackendIdentity,
    ) -> None:
        """Commit one answered request at once (so a crash loses nothing already paid for).

        The first answer stored for a key stays (with its hit count); the key's failure rows
        and lease go in the same transaction."""
        if not response.ok:
            raise ValueError("failed responses go to record_failure, not put")
        with self._writing("store an answer"):
            self._insert_answer(key, request, response, profile, identity)
            self._conn.execute("DELETE FROM leases WHERE key = ?", (key,))
        global ANSWERS_STORED
        ANSWERS_STORED += 1

    def _insert_answer(
        self,
        key: str,
        request: ChatRequest,
        response: ChatResponse,
        profile: str,
        identity: BackendIdentity,
    ) -> None:
        """One answer row (the first stored for a key stays), and the key's failures go."""
        self._insert_row(_answer_row(key, request, response, profile, identity))

    def _insert_row(self, row: dict) -> None:
        """An answer row as :func:`_answer_row` makes it (or a spill file holds it)."""
        self._conn.execute(
            "INSERT INTO responses (key, profile, backend, model, stage, request,"
            " response, prompt_tokens, completion_tokens, latency_s, attempts, hits, created)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?) ON CONFLICT(key) DO NOTHING",
            (*(row[name] for name in ANSWER_COLUMNS), time.time()),
        )
        self._conn.execute("DELETE FROM failures WHERE key = ?", (row["key"],))

    def put_all_or_none(
        self,
        entries: Iterable[tuple[str, ChatRequest, ChatResponse]],
        *,
        profile: str,
        identity: BackendIdentity,
    ) -> tuple[int, int]:
        """Store answers made elsewhere (``deliberation cache import``) in one transaction:
        (added, already present). A key already holding the same answer (text, parsed value,
        finish reason, token counts; latency aside) is left as it is; one holding another answer
        is a :class:`CacheConflictError` naming the key, and nothing is stored."""
        added = present = 0
        with self._writing("import answers"):
            for key, request, response in entries:
                row = self._conn.execute(
                    "SELECT response FROM responses WHERE key = ?", (key,)
                ).fetchone()
                if row is not None:
                    (stored,) = self._decoded(key, row[0])
                    if _same_answer(stored, json.loads(response.to_json())):
                        present += 1
                        continue
                    raise CacheConflictError(
                        self.path,
                        f"key {key} (stage {request.stage}) already holds another answer;"
                        " nothing was imported",
                    )
                self._insert_answer(key, request, response, profile, identity)
                added += 1
        return added, present

    def answer_rows(self) -> Iterator[tuple[str, dict, dict, int]]:
        """Every stored answer as (key, request record, response, attempts), sorted by key
        (``deliberation cache export`` writes them in this order, so its bytes are stable)."""
        with self._reading():
            rows = self._conn.execute(
                "SELECT key, request, response, attempts FROM responses ORDER BY key"
            ).fetchall()
        for key, request, response, attempts in rows:
            decoded_request, decoded_response = self._decoded(key, request, response)
            yield key, decoded_request, decoded_response, attempts

    def record_failure(
        self, key: str, request: ChatRequest, response: ChatResponse, *, profile: str
    ) -> None:
        """Record a failed request with its reason (and end this process's lease on it)."""
        with self._writing("record a failure"):
            self._conn.execute(
                "INSERT INTO failures (key, profile, stage, reason, attempts, created)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (key, profile, request.stage, response.error or "", response.attempts, time.time()),
            )
            self._conn.execute(
                "DELETE FROM leases WHERE key = ? AND owner = ?", (key, self._owner.name)
            )

    # -- leases: one process sends a key, the others wait for its answer ------------------------
    def claim(self, keys: Iterable[str], *, failed_since: float | None = None) -> list[str]:
        """Lease the keys that are neither answered nor leased by a live owner (nor, with
        ``failed_since``, failed since then); the keys now leased by this cache object, in the
        order given. Stale leases are taken over."""
        wanted = list(dict.fromkeys(keys))
        if not wanted:
            return []
        now = time.time()
        owner = self._owner
        with self._writing("lease requests"):
            for chunk in _chunks(wanted):
                marks = ",".join("?" * len(chunk))
                held = self._conn.execute(
                    f"SELECT key, host, pid, expires, owner FROM leases WHERE key IN ({marks})",
                    chunk,
                ).fetchall()
                stale = [
                    key
                    for key, host, pid, expires, holder in held
                    if holder != owner.name
                    and (expires < now or (host == owner.host and not process_alive(pid)))
                ]
                self._conn.executemany("DELETE FROM leases WHERE key = ?", [(k,) for k in stale])
                cutoff = float("inf") if failed_since is None else failed_since
                self._conn.executemany(
                    "INSERT OR IGNORE INTO leases (key, owner, host, pid, expires)"
                    " SELECT ?, ?, ?, ?, ? WHERE NOT EXISTS (SELECT 1 FROM responses WHERE key = ?)"
                    " AND NOT EXISTS (SELECT 1 FROM failures WHERE key = ? AND created >= ?)",
                    [
                        (key, owner.name, owner.host, owner.pid, now + self.lease_ttl_s, key, key,
                         cutoff)
                        for key in chunk
                    ],
                )  # fmt: skip
            mine: set[str] = set()
            for chunk in _chunks(wanted):
                marks = ",".join("?" * len(chunk))
                mine.update(
                    row[0]
                    for row in self._conn.execute(
                        f"SELECT key FROM leases WHERE owner = ? AND key IN ({marks})",
                        (owner.name, *chunk),
                    )
                )
        return [key for key in wanted if key in mine]

    def renew_leases(self) -> None:
        """Push back the expiry of every lease this cache object holds."""
        with self._writing("renew leases"):
            self._conn.execute(
                "UPDATE leases SET expires = ? WHERE owner = ?",
                (time.time() + self.lease_ttl_s, self._owner.name),
            )

    def release(self, keys: Iterable[str] | None = None) -> None:
        """End this cache object's leases on ``keys`` (all of them when None)."""
        with self._writing("release leases"):
            if keys is None:
                self._conn.execute("DELETE FROM leases WHERE owner = ?", (self._owner.name,))
                return
            for chunk in _chunks(list(keys)):
                marks = ",".join("?" * len(chunk))
                self._conn.execute(
                    f"DELETE FROM leases WHERE owner = ? AND key IN ({marks})",
                    (self._owner.name, *chunk),
                )

    def failures_since(self, keys: Iterable[str], since: float) -> dict[str, ChatResponse]:
        """The latest failure recorded for each key after ``since`` (by any process)."""
        found: dict[str, ChatResponse] = {}
        with self._reading():
            for chunk in _chunks(list(keys)):
                marks = ",".join("?" * len(chunk))
                for key, reason, attempts in self._conn.execute(
                    f"SELECT key, reason, attempts FROM failures WHERE created >= ?"
                    f" AND key IN ({marks}) ORDER BY id",
                    (since, *chunk),
                ):
                    found[key] = ChatResponse(text="", error=reason, attempts=attempts)
        return found

    # -- reading --------------------------------------------------------------------------------
    def keys(self) -> set[str]:
        with self._reading():
            return {row[0] for row in self._conn.execute("SELECT key FROM responses")}

    def answered(self) -> pd.DataFrame:
        """One row per stored answer, oldest first: ``key, stage, created`` (no texts, so a
        large cache is cheap to filter before :meth:`records` reads the few wanted)."""
        with self._reading():
            return pd.read_sql_query(
                "SELECT key, stage, created FROM responses ORDER BY created, rowid", self._conn
            )

    def records(self, keys: Iterable[str]) -> dict[str, tuple[dict, dict]]:
        """The request as recorded (messages, stage, sampling fields) and the response, by key,
        for the keys present. Reading never counts a hit."""
        found: dict[str, tuple[dict, dict]] = {}
        with self._reading():
            for chunk in _chunks(list(dict.fromkeys(keys))):
                marks = ",".join("?" * len(chunk))
                for key, request, response in self._conn.execute(
                    f"SELECT key, request, response FROM responses WHERE key IN ({marks})", chunk
                ):
                    decoded = self._decoded(key, request, response)
                    found[key] = (decoded[0], decoded[1])
        return found

    def _counted_prompt_tokens(self) -> dict[tuple[str, str], int]:
        """The model-free counter's prompt tokens of every stored request, by profile and
        stage (the request record holds the messages as sent)."""
        totals: dict[tuple[str, str], int] = {}
        for profile, stage, record in self._conn.execute(
            "SELECT profile, stage, request FROM responses"
        ):
            try:
                messages = json.loads(record).get("messages", [])
            except (ValueError, AttributeError):
                continue
            tokens = sum(count_tokens(str(m.get("content", ""))) for m in messages)
            totals[(profile, stage)] = totals.get((profile, stage), 0) + tokens
        return totals

    def failures(self) -> pd.DataFrame:
        """Outstanding failures (requests with no answer yet), oldest first."""
        with self._reading():
            return pd.read_sql_query(
                "SELECT key, profile, stage, reason, attempts FROM failures"
                " WHERE key NOT IN (SELECT key FROM responses) ORDER BY id",
                self._conn,
            )

    def completion_means(self, profile: str, *, min_calls: int = 1) -> dict[str, float]:
        """Mean completion tokens per stage of ``profile``'s stored answers, for stages with at
        least ``min_calls`` of them (one aggregate query: no record is decoded)."""
        with self._reading():
            rows = self._conn.execute(
                "SELECT stage, AVG(completion_tokens) FROM responses WHERE profile = ?"
                " GROUP BY stage HAVING COUNT(*) >= ?",
                (profile, min_calls),
            ).fetchall()
        return {stage: float(mean) for stage, mean in rows}

    def stats(self) -> pd.DataFrame:
        """Calls (paid), hits, tokens, latency and outstanding failures (requests still without
        an answer) by profile and stage. ``prompt_tokens`` is what the backend reported (a real
        server's own tokenizer); ``counted_prompt_tokens`` is the project's model-free counter
        (:mod:`deliberation.inference.tokens`, which budgets use) over the same prompts, so the two can
        be compared."""
        with self._reading():
            answered = pd.read_sql_query(
                "SELECT profile, stage, COUNT(*) AS calls, SUM(hits) AS hits,"
                " SUM(prompt_tokens) AS prompt_tokens, SUM(completion_tokens) AS completion_tokens,"
                " SUM(latency_s) AS latency_total_s, AVG(latency_s) AS latency_mean_s"
                " FROM responses GROUP BY profile, stage",
                self._conn,
            )
            counted = self._counted_prompt_tokens()
            failed = pd.read_sql_query(
                "SELECT profile, stage, COUNT(DISTINCT key) AS failures FROM failures"
                " WHERE key NOT IN (SELECT key FROM responses) GROUP BY profile, stage",
                self._conn,
            )
        answered.insert(
            int(answered.columns.get_loc("prompt_tokens")) + 1,
            "counted_prompt_tokens",
            [counted.get(k, 0) for k in zip(answered["profile"], answered["stage"], strict=True)],
        )
        merged = answered.merge(failed, on=["profile", "stage"], how="outer")
        counts = [
            "calls", "hits", "prompt_tokens", "counted_prompt_tokens", "completion_tokens",
            "failures",
        ]  # fmt: skip
        merged[counts] = merged[counts].fillna(0).astype(int)
        return merged.sort_values(["profile", "stage"]).reset_index(drop=True)
