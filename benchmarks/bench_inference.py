"""Inference-layer speed: the ``openai`` backend against ``serve-sim`` and cache-hit reads.

Runs ``deliberation serve-sim`` with 100 ms injected latency on a free loopback port, then
measures in one run and prints side by side:

* throughput of the ``openai`` backend at concurrency 32 (320 requests) and sequentially
  (concurrency 1, 30 requests; a rate per request, so fewer requests suffice), and their ratio
  (goal: at least 15x; the ideal is 32x, CPU on the client and server eats the rest);
* cache-hit reads per second: ``CachedClient.generate`` over 10,000 requests that are all in the
  cache (none reaches the server, checked from the server's counters).

Usage: ``python benchmarks/bench_inference.py [--latency-ms 100] [--concurrency 32]``.
"""

from __future__ import annotations

import argparse
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path

from deliberation.inference.base import ChatRequest, ChatResponse
from deliberation.inference.cache import ResponseCache
from deliberation.inference.client import CachedClient
from deliberation.inference.openai_api import OpenAIBackend
from deliberation.paper.bench import BenchRow, write_rows
from deliberation.testing import running_sim_server

SPEEDUP_GOAL = 15.0


def arithmetic_requests(count: int, offset: int = 0) -> list[ChatRequest]:
    """Distinct smoke.arithmetic requests (the sim answers them from the prompt text)."""
    return [
        ChatRequest.from_prompt(
            f"What is {i} + {2 * i + 1}?", stage="smoke.arithmetic", max_tokens=16, seed=i
        )
        for i in range(offset, offset + count)
    ]


def throughput(backend: OpenAIBackend, requests: list[ChatRequest]) -> float:
    """Requests per second for one batch (every request must be answered)."""
    started = time.perf_counter()
    responses = backend.generate(requests)
    elapsed = time.perf_counter() - started
    failed = [r.error for r in responses if not r.ok]
    if failed:
        raise RuntimeError(f"{len(failed)} requests failed, e.g. {failed[0]}")
    return len(requests) / elapsed


def cache_hit_rate(backend: OpenAIBackend, count: int) -> float:
    """Cache-hit reads per second through ``CachedClient.generate`` on a fully cached batch."""
    requests = arithmetic_requests(count, offset=1_000_000)
    with tempfile.TemporaryDirectory() as folder:
        cache = ResponseCache(Path(folder) / "bench.sqlite")
        client = CachedClient(backend, cache, profile="bench", progress=False)
        for request in requests:
            answer = ChatResponse(text="Answer: 0", finish_reason="stop", completion_tokens=2)
            cache.put(
                client.key(request), request, answer, profile="bench", identity=backend.identity
            )
        client.generate(requests[:100])  # warm the connection and the page cache
        started = time.perf_counter()
        responses = client.generate(requests)
        elapsed = time.perf_counter() - started
        cache.close()
    if not all(r.cached for r in responses):
        raise RuntimeError("a request that was in the cache was not served from it")
    return count / elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency-ms", type=float, default=100.0)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--requests", type=int, default=320, help="requests per concurrent run")
    parser.add_argument("--sequential", type=int, default=30, help="requests in the sequential run")
    parser.add_argument("--cache-reads", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3, help="concurrent runs (median reported)")
    parser.add_argument("--rows", help="write this benchmark's rows of the make-bench table here")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)

    with running_sim_server(latency_ms=args.latency_ms) as server:

        def backend(concurrency: int) -> OpenAIBackend:
            return OpenAIBackend(
                model="sim-mechanism",
                base_url=server.base_url,
                concurrency=concurrency,
                max_retries=0,
                timeout_s=30.0,
            )

        concurrent = backend(args.concurrency)
        concurrent.generate(arithmetic_requests(args.concurrency, offset=500_000))  # warm up
        rates = [
            throughput(concurrent, arithmetic_requests(args.requests, offset=run * args.requests))
            for run in range(args.repeats)
        ]
        concurrent_rate = statistics.median(rates)
        sequential_rate = throughput(backend(1), arithmetic_requests(args.sequential, 900_000))
        server.reset()
        hit_rate = cache_hit_rate(concurrent, args.cache_reads)
        reached = server.stats()["arrivals"]
    if reached:
        raise RuntimeError(f"{reached} cache hits reached the server")

    ratio = concurrent_rate / sequential_rate
    rows = [
        ("openai backend, sequential (concurrency 1)", f"{sequential_rate:,.1f} req/s", ""),
        (
            f"openai backend, concurrency {args.concurrency}",
            f"{concurrent_rate:,.1f} req/s",
            f"median of {args.repeats} x {args.requests}",
        ),
        (
            "  speed-up over sequential",
            f"{ratio:,.1f}x",
            f"goal >= {SPEEDUP_GOAL:g}x: {'met' if ratio >= SPEEDUP_GOAL else 'NOT met'}",
        ),
        (
            "cache-hit reads (CachedClient.generate)",
            f"{hit_rate:,.0f} /s",
            f"{args.cache_reads:,} hits",
        ),
    ]
    print(f"bench_inference: serve-sim with {args.latency_ms:g} ms injected latency, loopback")
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    header = ("measure", "value", "note")
    widths = [max(w, len(h)) for w, h in zip(widths, header, strict=True)]
    for row in (header, tuple("-" * w for w in widths), *rows):
        print(f"{row[0]:<{widths[0]}}  {row[1]:>{widths[1]}}  {row[2]}")
    write_rows(
        args.rows,
        [
            BenchRow(
                f"openai backend over serve-sim ({args.latency_ms:g} ms latency),"
                f" concurrency {args.concurrency}",
                f"{concurrent_rate:,.1f} req/s",
                f"sequential: {sequential_rate:,.1f} req/s ({ratio:,.1f}x)",
                f">= {SPEEDUP_GOAL:g}x: {'met' if ratio >= SPEEDUP_GOAL else 'NOT met'}",
            ),
            BenchRow("cache-hit reads (CachedClient.generate)", f"{hit_rate:,.0f} /s"),
        ],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
