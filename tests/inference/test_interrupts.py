"""Ctrl-C during a batch, from a script and inside a running event loop (as in Jupyter): sending
stops at once, and every answer paid for is in the cache."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time

import pytest
from helpers.serve_sim import arithmetic_requests, openai_profile

from deliberation.inference.cache import ResponseCache
from deliberation.inference.client import CachedClient
from deliberation.inference.interrupts import run_batch
from deliberation.inference.openai_api import OpenAIBackend
from deliberation.testing import sim_server_in_thread

LATENCY_MS = 100
CONCURRENCY = 8
COUNT = 400  # 400 / 8 x 0.1 s = 5 s if nothing stopped it


def _interrupt_after(seconds: float) -> threading.Timer:
    timer = threading.Timer(seconds, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    return timer


def _interrupted_batch(tmp_path, call):
    with sim_server_in_thread(latency_ms=LATENCY_MS) as server:
        profile = openai_profile(server.base_url, concurrency=CONCURRENCY)
        with ResponseCache(tmp_path / "c.sqlite") as cache:
            client = CachedClient(
                OpenAIBackend.from_profile(profile), cache, profile="p", progress=False
            )
            timer = _interrupt_after(0.5)
            started = time.monotonic()
            with pytest.raises(KeyboardInterrupt):
                call(client, arithmetic_requests(COUNT))
            elapsed = time.monotonic() - started
            timer.join()
            arrived = server.stats()["arrivals"]
            time.sleep(0.3)  # anything still being sent would arrive now
            stats = server.stats()
            cached = len(cache.keys())
            leases = cache._conn.execute("SELECT COUNT(*) FROM leases").fetchone()[0]
    return elapsed, arrived, stats, cached, leases


def _check(elapsed, arrived, stats, cached, leases):
    # Stopped at once: the interrupt plus the requests in flight (0.1 s; the slack is for a
    # loaded machine), far from the 5 s the whole batch takes.
    assert elapsed < 0.5 + 2.0, elapsed
    assert stats["arrivals"] == arrived < COUNT // 4
    # Every request sent was answered, and every answer is in the cache; no lease left behind.
    assert cached == stats["answered"] == stats["arrivals"] and leases == 0


def test_ctrl_c_in_a_script_stops_sending_and_caches_every_answer(tmp_path):
    _check(*_interrupted_batch(tmp_path, lambda client, requests: client.generate(requests)))


def test_ctrl_c_inside_a_running_event_loop_stops_sending_at_once(tmp_path):
    """The probe: in Jupyter the batch ran to its end before the interrupt landed."""

    def in_running_loop(client, requests):
        async def cell():
            return client.generate(requests)

        return asyncio.run(cell())

    _check(*_interrupted_batch(tmp_path, in_running_loop))


def test_a_second_ctrl_c_abandons_the_requests_in_flight():
    finished = []

    async def batch(stop):
        await asyncio.sleep(30)  # a request in flight that would take long
        finished.append(True)

    first, second = _interrupt_after(0.1), _interrupt_after(0.3)
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        run_batch(batch)
    first.join()
    second.join()
    assert time.monotonic() - started < 5 and finished == []


def test_after_one_ctrl_c_requests_in_flight_finish_and_no_new_one_starts():
    log = []

    async def batch(stop):
        async def request(index):
            if stop.is_set():
                return
            log.append(f"sent {index}")
            await asyncio.sleep(0.4)
            log.append(f"answered {index}")

        await request(0)
        await request(1)

    timer = _interrupt_after(0.1)
    with pytest.raises(KeyboardInterrupt):
        run_batch(batch)
    timer.join()
    assert log == ["sent 0", "answered 0"]
