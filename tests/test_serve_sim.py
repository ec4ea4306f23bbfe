"""serve-sim: the sim backend over the OpenAI chat-completions protocol, with fault injection."""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import sys
import time
import urllib.parse
from typing import Any

import pytest
from serve_sim_fixture import SIM_MODEL, arithmetic_prompt

from deliberation.inference.base import ChatRequest, StructuredOutput
from deliberation.inference.serve_sim import FaultOptions, check_loopback
from deliberation.inference.sim import SimBackend
from deliberation.inference.structured import openai_structured_extra_body
from deliberation.inference.testing import running_sim_server, sim_server_in_thread
from deliberation.params import load_profile


def _call(
    base_url: str,
    method: str,
    path: str,
    body: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
    timeout: float = 5.0,
) -> tuple[int, dict[str, str], bytes]:
    url = urllib.parse.urlsplit(base_url)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=timeout)
    try:
        blob = None if body is None else json.dumps(body).encode()
        connection.request(method, url.path + path, body=blob, headers=headers or {})
        reply = connection.getresponse()
        return reply.status, {k.lower(): v for k, v in reply.getheaders()}, reply.read()
    finally:
        connection.close()


def _chat(base_url: str, body: dict[str, Any], stage: str | None = None, **kw: Any):
    headers = {"Content-Type": "application/json"}
    if stage is not None:
        headers["X-Deliberation-Stage"] = stage
    return _call(base_url, "POST", "/chat/completions", {"model": SIM_MODEL, **body}, headers, **kw)


@pytest.fixture(scope="module")
def server():
    with sim_server_in_thread() as handle:
        yield handle


@pytest.fixture(scope="module")
def sim() -> SimBackend:
    return SimBackend.from_profile(load_profile("sim"))


def test_models_endpoint_lists_the_profiles_model(server) -> None:
    status, _, blob = _call(server.base_url, "GET", "/models")
    assert status == 200
    assert [entry["id"] for entry in json.loads(blob)["data"]] == [SIM_MODEL]


def test_http_answer_equals_the_in_process_sim_answer(server, sim) -> None:
    for i in range(12):
        request = ChatRequest.from_prompt(arithmetic_prompt(i), stage="smoke.arithmetic", seed=i)
        expected = sim.answer(request)
        status, _, blob = _chat(
            server.base_url,
            {
                "messages": request.messages_as_dicts(),
                "temperature": 0.0,
                "top_p": 1.0,
                "max_tokens": request.max_tokens,
                "seed": request.effective_seed(),
            },
            stage="smoke.arithmetic",
        )
        assert status == 200
        payload = json.loads(blob)
        choice = payload["choices"][0]
        assert choice["message"]["content"] == expected.text
        assert choice["finish_reason"] == expected.finish_reason
        assert payload["usage"]["prompt_tokens"] == expected.prompt_tokens
        assert payload["usage"]["completion_tokens"] == expected.completion_tokens
        assert payload["created"] == 1_700_000_000  # constant: bodies are deterministic


def test_missing_stage_header_means_echo(server) -> None:
    status, _, blob = _chat(server.base_url, {"messages": [{"role": "user", "content": "hello"}]})
    assert status == 200
    assert json.loads(blob)["choices"][0]["message"]["content"] == "echo: hello"


@pytest.mark.parametrize("mode", ["structured_outputs", "guided"])
def test_structured_choice_over_the_wire_matches_in_process(server, sim, mode) -> None:
    spec = StructuredOutput(choices=("alpha", "beta", "gamma"))
    for i in range(8):
        request = ChatRequest.from_prompt(f"pick one, case {i}", stage="echo", structured=spec)
        body = {"messages": request.messages_as_dicts(), "temperature": 0.0, "max_tokens": 512}
        body.update(openai_structured_extra_body(spec, mode))
        status, _, blob = _chat(server.base_url, body, stage="echo")
        assert status == 200
        assert json.loads(blob)["choices"][0]["message"]["content"] == sim.answer(request).text


def test_response_format_choice_is_answered_as_an_answer_object(server, sim) -> None:
    spec = StructuredOutput(choices=("alpha", "beta"))
    request = ChatRequest.from_prompt("pick one", stage="echo", structured=spec)
    body = {"messages": request.messages_as_dicts(), "temperature": 0.0, "max_tokens": 512}
    body.update(openai_structured_extra_body(spec, "response_format"))
    _, _, blob = _chat(server.base_url, body, stage="echo")
    content = json.loads(blob)["choices"][0]["message"]["content"]
    assert json.loads(content) == {"answer": sim.answer(request).text}


def test_stats_count_arrivals_per_prompt_and_reset_zeroes_them() -> None:
    with sim_server_in_thread() as handle:
        for prompt in ["one", "two", "one"]:
            _chat(handle.base_url, {"messages": [{"role": "user", "content": prompt}]})
        stats = handle.stats()
        assert stats["arrivals"] == 3 and stats["answered"] == 3
        assert stats["arrivals_per_prompt"] == {"one": 2, "two": 1}
        handle.reset()
        assert handle.stats()["arrivals"] == 0
        assert handle.stats()["arrivals_per_prompt"] == {}


def test_bad_requests_get_4xx_naming_the_problem(server) -> None:
    status, _, blob = _call(
        server.base_url,
        "POST",
        "/chat/completions",
        {"model": "no-such-model", "messages": [{"role": "user", "content": "x"}]},
    )
    assert status == 404 and "no-such-model" in json.loads(blob)["error"]["message"]
    status, _, blob = _chat(server.base_url, {"messages": []})
    assert status == 400 and "messages" in json.loads(blob)["error"]["message"]
    status, _, blob = _chat(
        server.base_url, {"messages": [{"role": "user", "content": "x"}]}, stage="no.such.stage"
    )
    assert status == 400 and "no.such.stage" in json.loads(blob)["error"]["message"]


def test_fault_pick_splits_the_unit_interval_in_order() -> None:
    faults = FaultOptions(rate_429=0.2, rate_500=0.2, rate_hang=0.2, rate_malformed=0.2)
    assert [faults.pick(d) for d in (0.1, 0.3, 0.5, 0.7, 0.9)] == [
        "429",
        "500",
        "hang",
        "malformed",
        None,
    ]
    with pytest.raises(ValueError, match="add up"):
        FaultOptions(rate_429=0.6, rate_500=0.6)
    with pytest.raises(ValueError, match="rate_hang"):
        FaultOptions(rate_hang=1.5)


def test_injected_fault_rates_are_roughly_as_asked() -> None:
    # 400 arrivals at 20% each: each count is Binomial(400, 0.2) (sd 8), so 50..110 is > 3.5 sd.
    with sim_server_in_thread(fault_429=0.2, fault_500=0.2, fault_malformed=0.2) as handle:
        for i in range(400):
            _chat(handle.base_url, {"messages": [{"role": "user", "content": str(i)}]})
        stats = handle.stats()
    for kind in ("429", "500", "malformed"):
        assert 50 <= stats["faults"][kind] <= 110
    assert stats["faults"]["hang"] == 0
    assert stats["answered"] + sum(stats["faults"].values()) == 400


def test_429_carries_retry_after_and_500_is_a_json_error() -> None:
    with sim_server_in_thread(fault_429=1.0, retry_after=2.5) as handle:
        status, headers, blob = _chat(
            handle.base_url, {"messages": [{"role": "user", "content": "x"}]}
        )
    assert status == 429 and headers["retry-after"] == "2.5"
    assert json.loads(blob)["error"]["type"] == "rate_limit_error"
    with sim_server_in_thread(fault_500=1.0) as handle:
        status, _, blob = _chat(handle.base_url, {"messages": [{"role": "user", "content": "x"}]})
    assert status == 500 and "error" in json.loads(blob)


def test_malformed_fault_is_a_200_whose_body_is_not_json() -> None:
    with sim_server_in_thread(fault_malformed=1.0) as handle:
        status, _, blob = _chat(handle.base_url, {"messages": [{"role": "user", "content": "x"}]})
    assert status == 200
    with pytest.raises(ValueError):
        json.loads(blob)


def test_hang_fault_hangs_then_closes_without_a_response() -> None:
    with sim_server_in_thread(fault_hang=1.0, hang_s=0.3) as handle:
        started = time.monotonic()
        with pytest.raises((http.client.RemoteDisconnected, ConnectionError)):
            _chat(handle.base_url, {"messages": [{"role": "user", "content": "x"}]})
        assert time.monotonic() - started >= 0.25
        # A client that gives up first sees a timeout; the server shuts down anyway.
        with pytest.raises(socket.timeout):
            _chat(handle.base_url, {"messages": [{"role": "user", "content": "y"}]}, timeout=0.05)
        assert handle.stats()["faults"]["hang"] == 2


def test_server_requiring_a_key_rejects_requests_without_it(monkeypatch) -> None:
    monkeypatch.setenv("SERVE_SIM_TEST_KEY", "test-key-123")
    with sim_server_in_thread(require_key_env="SERVE_SIM_TEST_KEY") as handle:
        status, _, _ = _chat(handle.base_url, {"messages": [{"role": "user", "content": "x"}]})
        assert status == 401
        status, _, _ = _call(
            handle.base_url,
            "POST",
            "/chat/completions",
            {"model": SIM_MODEL, "messages": [{"role": "user", "content": "x"}]},
            {"Authorization": "Bearer test-key-123"},
        )
        assert status == 200


@pytest.mark.parametrize("host", ["0.0.0.0", "10.1.2.3", "example.org"])
def test_non_loopback_hosts_are_refused(host) -> None:
    with pytest.raises(ValueError, match="loopback"):
        check_loopback(host)


def test_loopback_hosts_are_accepted() -> None:
    for host in ("127.0.0.1", "::1", "localhost"):
        check_loopback(host)


def test_cli_refuses_a_public_host_with_a_clear_message() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "deliberation", "serve-sim", "--host", "0.0.0.0", "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "loopback" in result.stderr


def test_subprocess_server_reports_its_port_and_stops_on_exit() -> None:
    with running_sim_server(latency_ms=1) as handle:
        status, _, blob = _chat(handle.base_url, {"messages": [{"role": "user", "content": "hi"}]})
        assert status == 200 and json.loads(blob)["choices"][0]["message"]["content"] == "echo: hi"
        process = handle.process
        port = urllib.parse.urlsplit(handle.base_url).port
    assert process is not None and process.poll() is not None
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
