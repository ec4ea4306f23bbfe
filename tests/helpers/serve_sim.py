"""Helpers shared by the openai-backend, serve-sim and resume tests (imported, not collected).

Also runnable as a script: ``python tests/helpers/serve_sim.py client BASE_URL CACHE CSV N``
sends N ``smoke.arithmetic`` requests through ``CachedClient`` + ``OpenAIBackend`` into the
cache file and writes the results CSV; the resume test kills it with SIGKILL mid-run.
"""

from __future__ import annotations

import csv
import io
import os
import sqlite3
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from deliberation.inference.base import ChatRequest, ChatResponse
from deliberation.inference.openai_api import OpenAIOptions
from deliberation.profiles.profile import Profile

SIM_MODEL = "sim-mechanism"  # the model id params/sim.yaml serves


def openai_profile(base_url: str, *, name: str = "openai-test", **options: Any) -> Profile:
    """An ``openai`` profile pointing at a serve-sim URL, with test-sized timeouts/backoff."""
    defaults: dict[str, Any] = {
        "base_url": base_url,
        "concurrency": 8,
        "max_retries": 3,
        "timeout_s": 5.0,
        "backoff_base_s": 0.01,
        "backoff_max_s": 0.05,
    }
    return Profile(
        name=name,
        backend="openai",
        model=SIM_MODEL,
        openai=OpenAIOptions(**{**defaults, **options}),
    )


def arithmetic_prompt(index: int) -> str:
    return f"What is {index} + {3 * index + 7}?"


def arithmetic_requests(count: int) -> list[ChatRequest]:
    """``count`` distinct requests the sim answers from the prompt text (``Answer: <sum>``)."""
    return [
        ChatRequest.from_prompt(
            arithmetic_prompt(i), stage="smoke.arithmetic", max_tokens=16, seed=i
        )
        for i in range(count)
    ]


def wait_until(predicate: Callable[[], bool], timeout_s: float, interval_s: float = 0.01) -> bool:
    """Poll ``predicate()`` until it holds or ``timeout_s`` passes; its last value."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval_s)
    return bool(predicate())


def cached_prompts(cache_file: Path) -> set[str]:
    """Last user message of every answered row in a cache file (read-only, safe mid-run)."""
    if not cache_file.exists():
        return set()
    import json

    connection = sqlite3.connect(f"file:{cache_file}?mode=ro", uri=True, timeout=5)
    try:
        rows = connection.execute("SELECT request FROM responses").fetchall()
    except sqlite3.OperationalError:  # the table is not created yet
        return set()
    finally:
        connection.close()
    prompts = set()
    for (blob,) in rows:
        messages = json.loads(blob)["messages"]
        prompts.add([m["content"] for m in messages if m["role"] == "user"][-1])
    return prompts


def results_csv(requests: list[ChatRequest], responses: list[ChatResponse]) -> str:
    """What an experiment would keep per request (no timings, attempts or cache flags)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(
        ["index", "prompt", "ok", "text", "finish_reason", "prompt_tokens", "completion_tokens"]
    )
    for index, (request, response) in enumerate(zip(requests, responses, strict=True)):
        writer.writerow(
            [
                index,
                request.messages[-1].content,
                response.ok,
                response.text,
                response.finish_reason,
                response.prompt_tokens,
                response.completion_tokens,
            ]
        )
    return buffer.getvalue()


def run_client(
    base_url: str, cache_file: Path, csv_file: Path, count: int, concurrency: int
) -> int:
    """The resume test's client: send, cache as answers arrive, write the CSV atomically."""
    from deliberation.inference.cache import ResponseCache
    from deliberation.inference.client import CachedClient
    from deliberation.inference.openai_api import OpenAIBackend

    profile = openai_profile(base_url, concurrency=concurrency, max_retries=8)
    requests = arithmetic_requests(count)
    with ResponseCache(cache_file) as cache:
        client = CachedClient(
            OpenAIBackend.from_profile(profile), cache, profile=profile.name, progress=False
        )
        responses = client.generate(requests)
    temporary = csv_file.with_suffix(".tmp")
    temporary.write_text(results_csv(requests, responses))
    os.replace(temporary, csv_file)
    return 0 if all(r.ok for r in responses) else 1


if __name__ == "__main__":
    if len(sys.argv) != 7 or sys.argv[1] != "client":
        sys.exit("usage: serve_sim.py client BASE_URL CACHE CSV COUNT CONCURRENCY")
    _, _, url, cache_arg, csv_arg, count_arg, concurrency_arg = sys.argv
    sys.exit(run_client(url, Path(cache_arg), Path(csv_arg), int(count_arg), int(concurrency_arg)))
