"""A run killed with SIGKILL resumes by re-running it: nothing already answered is sent again,
and the final results equal an uninterrupted run's byte for byte.

The client runs in a subprocess (``tests/helpers/serve_sim.py client ...``: CachedClient +
OpenAIBackend into a SQLite cache, then a results CSV) against serve-sim in another subprocess,
whose counters tell which prompts reached it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from helpers.serve_sim import arithmetic_prompt, cached_prompts, wait_until

from deliberation.testing import running_sim_server

FIXTURE = Path(__file__).parents[1] / "helpers" / "serve_sim.py"
COUNT = 300
CONCURRENCY = 8
LATENCY_MS = 40  # 300 requests / 8 in flight x 40 ms: about 1.5 s per run, time enough to kill


def _client(base_url: str, cache: Path, csv: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, str(FIXTURE), "client", base_url, str(cache), str(csv), str(COUNT),
         str(CONCURRENCY)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )  # fmt: skip


def _finish(process: subprocess.Popen[bytes]) -> None:
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 0, stderr.decode(errors="replace")[-2000:]


def test_kill_9_then_rerun_sends_nothing_twice_and_matches_an_uninterrupted_run(tmp_path) -> None:
    all_prompts = {arithmetic_prompt(i) for i in range(COUNT)}
    with running_sim_server(latency_ms=LATENCY_MS, fault_500=0.05) as server:
        # 1. Start a run and kill -9 it once some, but not all, answers are in the cache.
        cache, csv = tmp_path / "resumed.sqlite", tmp_path / "resumed.csv"
        process = _client(server.base_url, cache, csv)
        try:
            assert wait_until(lambda: len(cached_prompts(cache)) >= 40, timeout_s=60), (
                "the client never cached 40 answers"
            )
        finally:
            os.kill(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
        assert process.returncode == -signal.SIGKILL
        answered_before = cached_prompts(cache)
        assert 40 <= len(answered_before) < COUNT, len(answered_before)
        assert not csv.exists()  # killed before it could write results

        # 2. Re-run the same command to completion; count what reaches the server.
        server.reset()
        _finish(_client(server.base_url, cache, csv))
        arrived_again = set(server.stats()["arrivals_per_prompt"])
        assert not arrived_again & answered_before, "answered requests were sent again"
        assert arrived_again == all_prompts - answered_before  # and everything else was sent
        assert cached_prompts(cache) == all_prompts

        # 3. An uninterrupted run into a fresh cache gives the same results, byte for byte.
        fresh_cache, fresh_csv = tmp_path / "fresh.sqlite", tmp_path / "fresh.csv"
        _finish(_client(server.base_url, fresh_cache, fresh_csv))
    resumed_bytes, fresh_bytes = csv.read_bytes(), fresh_csv.read_bytes()
    assert resumed_bytes.count(b"\n") == COUNT + 1
    assert resumed_bytes == fresh_bytes
