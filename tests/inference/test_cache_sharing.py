"""Two processes on one cache: a request in flight in one is awaited, not paid for, by the other;
hit counts survive; a dead or silent lease holder never blocks a resume."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

from helpers.backends import CountingBackend, requests_for
from helpers.serve_sim import arithmetic_prompt

from deliberation.inference.base import ChatResponse
from deliberation.inference.cache import ResponseCache
from deliberation.inference.client import CachedClient
from deliberation.testing import running_sim_server

FIXTURE = Path(__file__).parents[1] / "helpers" / "serve_sim.py"


def _client(cache, backend):
    return CachedClient(backend, cache, profile="p", progress=False, poll_s=0.01)


def test_a_request_leased_by_another_process_is_awaited_not_sent(tmp_path):
    path = tmp_path / "shared.sqlite"
    requests = requests_for(["a", "b", "c"])
    other, mine = ResponseCache(path), ResponseCache(path)
    other_backend, my_backend = CountingBackend(), CountingBackend()
    other_client = _client(other, other_backend)
    keys = [other_client.key(r) for r in requests]
    assert other.claim(keys[:2]) == keys[:2]  # the other process is sending a and b

    def other_answers_later():
        time.sleep(0.2)
        for key, request in zip(keys[:2], requests[:2], strict=True):
            other.put(key, request, ChatResponse(text="from other"), profile="p",
                      identity=other_backend.identity)  # fmt: skip

    thread = threading.Thread(target=other_answers_later)
    thread.start()
    out = _client(mine, my_backend).generate(requests)
    thread.join()
    assert my_backend.sent == ["c"]  # only the request nobody else was sending
    assert [r.text for r in out] == ["from other", "from other", "C"]
    assert [r.cached for r in out] == [True, True, False]
    assert mine._conn.execute("SELECT COUNT(*) FROM leases").fetchone() == (0,)


def test_a_failure_recorded_by_the_lease_holder_is_returned_not_resent(tmp_path):
    path = tmp_path / "shared.sqlite"
    (request,) = requests_for(["a"])
    other, mine = ResponseCache(path), ResponseCache(path)
    backend = CountingBackend()
    key = _client(other, backend).key(request)
    other.claim([key])
    timer = threading.Timer(
        0.1,
        other.record_failure,
        (key, request, ChatResponse(text="", error="HTTP 500 after 7 attempts", attempts=7)),
        {"profile": "p"},
    )
    timer.start()
    (out,) = _client(mine, backend).generate([request])
    timer.join()
    assert backend.sent == [] and out.error == "HTTP 500 after 7 attempts"


def test_leases_of_a_dead_process_or_expired_ones_are_taken_over(tmp_path):
    path = tmp_path / "shared.sqlite"
    requests = requests_for(["a", "b"])
    backend = CountingBackend()
    keys = [_client(ResponseCache(path), backend).key(r) for r in requests]
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    with sqlite3.connect(path) as conn:
        host = ResponseCache(path)._owner.host
        conn.execute("INSERT INTO leases VALUES (?, 'killed', ?, ?, ?)",
                     (keys[0], host, int(dead.stdout), time.time() + 3600))  # fmt: skip
        conn.execute("INSERT INTO leases VALUES (?, 'silent', 'elsewhere', 1, ?)",
                     (keys[1], time.time() - 1))  # fmt: skip
    out = _client(ResponseCache(path), backend).generate(requests)
    assert backend.sent == ["a", "b"] and [r.text for r in out] == ["A", "B"]


def test_a_live_lease_holder_keeps_its_lease_and_renews_it(tmp_path, monkeypatch):
    import deliberation.inference.cache as cache_module

    clock = [1000.0]
    fake_time = SimpleNamespace(time=lambda: clock[0], monotonic=time.monotonic, sleep=time.sleep)
    monkeypatch.setattr(cache_module, "time", fake_time)
    path = tmp_path / "shared.sqlite"
    holder = ResponseCache(path, lease_ttl_s=30)
    assert holder.claim(["k"]) == ["k"]
    assert ResponseCache(path).claim(["k"]) == []  # same host, live pid, not expired
    clock[0] += 20
    holder.renew_leases()
    clock[0] += 20
    assert ResponseCache(path).claim(["k"]) == []  # renewed: still not expired
    clock[0] += 11
    assert ResponseCache(path).claim(["k"]) == ["k"]  # expired: taken over


def test_storing_an_answer_again_keeps_the_first_and_its_hit_count(tmp_path):
    """The probe: a second process's INSERT OR REPLACE reset the hit count to 0."""
    path = tmp_path / "c.sqlite"
    (request,) = requests_for(["a"])
    backend = CountingBackend()
    first, second = ResponseCache(path), ResponseCache(path)
    key = _client(first, backend).key(request)
    first.put(key, request, ChatResponse(text="first"), profile="p", identity=backend.identity)
    first.get_many([key])
    first.get_many([key])
    second.put(key, request, ChatResponse(text="second"), profile="p", identity=backend.identity)
    assert second.stats()["hits"].tolist() == [2]
    assert second.get_many([key])[key].text == "first"


def _fixture_client(base_url, cache, csv, count):
    return subprocess.Popen(
        [sys.executable, str(FIXTURE), "client", base_url, str(cache), str(csv), str(count), "8"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def test_two_processes_running_the_same_batch_pay_for_each_prompt_once(tmp_path):
    """The probe: two notebooks on one cache sent 1,200 requests for 600 prompts."""
    count = 150
    cache = tmp_path / "shared.sqlite"
    with running_sim_server(latency_ms=40) as server:
        processes = [
            _fixture_client(server.base_url, cache, tmp_path / f"{n}.csv", count) for n in (1, 2)
        ]
        for process in processes:
            _, stderr = process.communicate(timeout=120)
            assert process.returncode == 0, stderr.decode(errors="replace")[-2000:]
        stats = server.stats()
    assert stats["arrivals"] == count
    assert set(stats["arrivals_per_prompt"]) == {arithmetic_prompt(i) for i in range(count)}
    assert (tmp_path / "1.csv").read_bytes() == (tmp_path / "2.csv").read_bytes()
    with ResponseCache(cache) as reader:
        table = reader.stats()
    # Each prompt paid once, and read once by the process that did not pay for it.
    assert table["calls"].sum() == count and table["hits"].sum() == count
