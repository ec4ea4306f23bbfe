"""Response cache: SQLite in WAL mode, one row per answered request, committed as it arrives.

A crashed or killed run resumes by re-running the same command: every request whose key is
already here is served from the cache and never reaches the backend again. Failed requests are
recorded in their own table (with the reason) and are retried on the next run, never served.

The key is :func:`request_key`; its fields are written down there and nowhere else.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from deliberation.inference.base import Backend, BackendIdentity, ChatRequest, ChatResponse

SCHEMA_VERSION = 1

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
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


def request_key(backend: Backend, request: ChatRequest) -> str:
    """SHA-256 of what an answer depends on: the request as the backend sends it.

    Hashed: the backend's identity (name, model id, revision, base URL), the stage tag, the
    sample index, and ``backend.request_payload(request)`` (for ``openai`` the JSON body and the
    stage header; for ``vllm`` the messages, every ``SamplingParams`` field, the structured
    spec, ``chat_template_kwargs`` and every output-changing engine option; for ``sim`` the
    request fields it reads). Never an API key. The stage is included because the sim dispatches
    on it; the sample index so that repeated draws keep their own rows even when no seed is sent.
    """
    identity = backend.identity
    payload = {
        "identity": dataclasses.asdict(identity),
        "stage": request.stage,
        "sample": request.sample,
        "sent": backend.request_payload(request),
    }
    blob = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


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


class ResponseCache:
    """Thread-safe (one connection behind a lock); safe to share with async callbacks."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute("PRAGMA busy_timeout=30000")
        self._conn.executescript(_SCHEMA)
        self._conn.execute(
            "INSERT OR IGNORE INTO meta(name, value) VALUES ('schema_version', ?)",
            (str(SCHEMA_VERSION),),
        )

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def get_many(self, keys: Iterable[str], *, count_hits: bool = True) -> dict[str, ChatResponse]:
        """Cached responses for the keys present (flagged ``cached=True``)."""
        wanted = list(dict.fromkeys(keys))
        found: dict[str, ChatResponse] = {}
        with self._lock:
            for start in range(0, len(wanted), 500):
                chunk = wanted[start : start + 500]
                marks = ",".join("?" * len(chunk))
                rows = self._conn.execute(
                    f"SELECT key, response, attempts FROM responses WHERE key IN ({marks})", chunk
                ).fetchall()
                for key, blob, attempts in rows:
                    data = json.loads(blob)
                    found[key] = ChatResponse(**data, cached=True, attempts=attempts)
                if count_hits and rows:
                    self._conn.execute(
                        f"UPDATE responses SET hits = hits + 1 WHERE key IN ({marks})", chunk
                    )
        return found

    def put(
        self,
        key: str,
        request: ChatRequest,
        response: ChatResponse,
        *,
        profile: str,
        identity: BackendIdentity,
    ) -> None:
        """Commit one answered request at once (so a crash loses nothing already paid for)."""
        if not response.ok:
            raise ValueError("failed responses go to record_failure, not put")
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO responses (key, profile, backend, model, stage, request,"
                " response, prompt_tokens, completion_tokens, latency_s, attempts, hits, created)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?)",
                (
                    key,
                    profile,
                    identity.backend,
                    identity.model,
                    request.stage,
                    _request_record(request),
                    response.to_json(),
                    response.prompt_tokens,
                    response.completion_tokens,
                    response.latency_s,
                    response.attempts,
                    time.time(),
                ),
            )

    def record_failure(
        self, key: str, request: ChatRequest, response: ChatResponse, *, profile: str
    ) -> None:
        with self._lock:
            self._conn.execute(
                "INSERT INTO failures (key, profile, stage, reason, attempts, created)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (key, profile, request.stage, response.error or "", response.attempts, time.time()),
            )

    def keys(self) -> set[str]:
        with self._lock:
            return {row[0] for row in self._conn.execute("SELECT key FROM responses")}

    def failures(self) -> pd.DataFrame:
        with self._lock:
            return pd.read_sql_query(
                "SELECT key, profile, stage, reason, attempts FROM failures ORDER BY id", self._conn
            )

    def stats(self) -> pd.DataFrame:
        """Calls (paid), hits, tokens, latency and failures by profile and stage."""
        with self._lock:
            answered = pd.read_sql_query(
                "SELECT profile, stage, COUNT(*) AS calls, SUM(hits) AS hits,"
                " SUM(prompt_tokens) AS prompt_tokens, SUM(completion_tokens) AS completion_tokens,"
                " SUM(latency_s) AS latency_total_s, AVG(latency_s) AS latency_mean_s"
                " FROM responses GROUP BY profile, stage",
                self._conn,
            )
            failed = pd.read_sql_query(
                "SELECT profile, stage, COUNT(*) AS failures FROM failures GROUP BY profile, stage",
                self._conn,
            )
        merged = answered.merge(failed, on=["profile", "stage"], how="outer")
        counts = ["calls", "hits", "prompt_tokens", "completion_tokens", "failures"]
        merged[counts] = merged[counts].fillna(0).astype(int)
        return merged.sort_values(["profile", "stage"]).reset_index(drop=True)
