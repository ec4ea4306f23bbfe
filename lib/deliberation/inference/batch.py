"""Experiment runner: requests -> cached client -> results frame (one row per call).

Results frames hold only what is deterministic for a given profile and seed (no latency, no
cache-hit flags), so re-running or resuming a run yields byte-identical tables. Cost accounting
(tokens, latency, hits) lives in the cache: ``deliberation cache stats``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from deliberation.inference.base import ChatRequest, ChatResponse
from deliberation.inference.client import Client, keys_or_failures

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StageCounts:
    """What one stage's batch did: requests built, distinct prompts, already cached, and,
    counted after the fact, sent and answered by this run and failed (no usable reply)."""

    stage: str
    built: int
    unique: int
    cached: int
    sent: int
    failed: int = 0

    def line(self) -> str:
        failed = f", {self.failed} FAILED" if self.failed else ""
        return (
            f"{self.stage}: {self.built} requests built, {self.unique} unique prompts,"
            f" {self.cached} already cached, {self.sent} sent{failed}"
        )


def send(
    client: Client,
    requests: Sequence[ChatRequest],
    stage: str,
    counts: list[StageCounts] | None = None,
) -> tuple[list[ChatResponse], list[str]]:
    """One stage's batch through the cache (identical prompts sent once); returns the responses
    and each request's key, and appends the stage's :class:`StageCounts` to ``counts``.
    Counted by distinct prompt from the responses: "already cached" those served from the cache
    (also one another process sharing it answered meanwhile), "sent" those this run sent and got
    answered, "failed" those without a usable reply."""
    # A request that cannot be sent fails alone (its key is ""), as in Client.generate, which
    # reuses these keys (the client remembers a batch's keys until it sends it).
    maybe_keys, _ = keys_or_failures(client.key, requests)
    keys = [k or "" for k in maybe_keys]
    responses = client.generate(requests, desc=stage) if requests else []
    first: dict[str, ChatResponse] = {}
    failed = 0
    for key, response in zip(keys, responses, strict=True):
        if not key:
            failed += 1
        elif key not in first:
            first[key] = response
    cached = sum(r.ok and r.cached for r in first.values())
    answered = sum(r.ok and not r.cached for r in first.values())
    failed += sum(not r.ok for r in first.values())
    stage_counts = StageCounts(stage, len(requests), len(first), cached, answered, failed)
    if counts is not None:
        counts.append(stage_counts)
    # The commands print the stage's counts once, in their summary (StageCounts.line); the log
    # line is for --verbose (the client's INFO line before sending says what will be sent).
    log.debug(stage_counts.line())
    return responses, keys


_RESULT_COLUMNS = [
    "key",
    "stage",
    "sample",
    "text",
    "parsed",
    "finish_reason",
    "error",
    "prompt_tokens",
    "completion_tokens",
]


def run_requests(
    client: Client, requests: Sequence[ChatRequest], *, desc: str = ""
) -> tuple[list[ChatResponse], pd.DataFrame]:
    """Send requests through the cache; return responses and their results frame."""
    responses = client.generate(requests, desc=desc)
    keys = [client.key(r) for r in requests]
    return responses, results_frame(requests, responses, keys)


def results_frame(
    requests: Sequence[ChatRequest], responses: Sequence[ChatResponse], keys: Sequence[str]
) -> pd.DataFrame:
    rows: list[dict[str, Any]] = []
    for request, response, key in zip(requests, responses, keys, strict=True):
        rows.append(
            {
                "key": key,
                "stage": request.stage,
                "sample": request.sample,
                "text": response.text,
                "parsed": None if response.parsed is None else json.dumps(response.parsed),
                "finish_reason": response.finish_reason,
                "error": response.error,
                "prompt_tokens": response.prompt_tokens,
                "completion_tokens": response.completion_tokens,
            }
        )
    return pd.DataFrame(rows, columns=_RESULT_COLUMNS)
