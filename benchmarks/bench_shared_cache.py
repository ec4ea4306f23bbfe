"""Two processes, one cache: the same 600-prompt batch run by two processes at once (notebooks in
parallel) must reach the server 600 times, not 1,200.

Starts ``deliberation serve-sim`` (20 ms injected latency), then two worker processes that each
send the same batch through ``CachedClient`` + ``OpenAIBackend`` (concurrency 16) into one cache
file, and prints the requests that reached the server (its own counters), the answers stored,
the hits, and the wall time. Exits non-zero when any prompt was sent twice.

Usage: ``python benchmarks/bench_shared_cache.py [--prompts 600] [--processes 2]``.
"""

from __future__ import annotations

import argparse
import logging
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from deliberation.inference.base import ChatRequest
from deliberation.inference.cache import ResponseCache
from deliberation.inference.client import CachedClient
from deliberation.inference.openai_api import OpenAIBackend
from deliberation.paper.bench import BenchRow, write_rows
from deliberation.testing import running_sim_server


def batch(count: int) -> list[ChatRequest]:
    return [
        ChatRequest.from_prompt(
            f"What is {i} + {2 * i + 1}?", stage="smoke.arithmetic", max_tokens=16, seed=i
        )
        for i in range(count)
    ]


def worker(base_url: str, cache_file: Path, count: int) -> int:
    """One process's run: the whole batch through the shared cache."""
    backend = OpenAIBackend(
        model="sim-mechanism", base_url=base_url, concurrency=16, max_retries=2, timeout_s=30.0
    )
    with ResponseCache(cache_file) as cache:
        responses = CachedClient(backend, cache, profile="bench", progress=False).generate(
            batch(count)
        )
    return 0 if all(r.ok for r in responses) else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=600)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--rows", help="write this benchmark's rows of the make-bench table here")
    parser.add_argument("--worker", nargs=2, metavar=("BASE_URL", "CACHE"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    if args.worker:
        return worker(args.worker[0], Path(args.worker[1]), args.prompts)

    with (
        tempfile.TemporaryDirectory() as folder,
        running_sim_server(latency_ms=args.latency_ms) as server,
    ):
        cache_file = Path(folder) / "shared.sqlite"
        command = [sys.executable, __file__, "--prompts", str(args.prompts), "--worker"]
        started = time.perf_counter()
        workers = [
            subprocess.Popen([*command, server.base_url, str(cache_file)])
            for _ in range(args.processes)
        ]
        codes = [process.wait(timeout=600) for process in workers]
        elapsed = time.perf_counter() - started
        arrivals = server.stats()["arrivals"]
        with ResponseCache(cache_file, read_only=True) as cache:
            table = cache.stats()
    stored, hits = int(table["calls"].sum()), int(table["hits"].sum())
    print(
        f"bench_shared_cache: {args.processes} processes x the same {args.prompts}-prompt batch,"
        f" one cache, serve-sim {args.latency_ms:g} ms"
    )
    print(f"  requests that reached the server  {arrivals:>6,}  (goal {args.prompts:,};"
          f" without leases {args.processes * args.prompts:,})")  # fmt: skip
    print(f"  answers stored / hits             {stored:>6,} / {hits:,}")
    print(f"  wall time                         {elapsed:>6.1f} s")
    met = not any(codes) and arrivals == args.prompts == stored
    write_rows(
        args.rows,
        [
            BenchRow(
                f"{args.processes} processes, one cache, the same {args.prompts}-prompt batch:"
                " requests sent",
                f"{arrivals:,}",
                f"without leases: {args.processes * args.prompts:,}; wall {elapsed:.1f} s",
                f"= {args.prompts:,}: {'met' if met else 'NOT met'}",
            )
        ],
    )
    if any(codes) or arrivals != args.prompts or stored != args.prompts:
        print("  NOT met: a prompt was sent more than once or a worker failed")
        return 1
    print("  met: every prompt paid for once")
    return 0


if __name__ == "__main__":
    sys.exit(main())
