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
from helpers.serve_sim import SIM_MODEL, arithmetic_prompt, wait_until

from deliberation.inference.base import ChatRequest, StructuredOutput
from deliberation.inference.serve_sim import FaultOptions, check_loopback
from deliberation.inference.sim import SimBackend
from deliberation.inference.structured import openai_structured_extra_body, wire_max_tokens
from deliberation.profiles.profile import load_profile
from deliberation.testing import running_sim_server, sim_server_in_thread


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
    # max_tokens as the openai backend sends it (room for the {"answer": ...} wrapper added)
    max_tokens = wire_max_tokens(spec, "response_format", request.max_tokens)
    body = {"messages": request.messages_as_dicts(), "temperature": 0.0, "max_tokens": max_tokens}
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


# -- bad input: every body the server cannot use is a 4xx, and the server keeps serving ---------

OK_MESSAGES = [{"role": "user", "content": "x"}]
DEEP = 100_000


def _raw_post(base_url: str, blob: bytes, headers: dict[str, str] | None = None):
    url = urllib.parse.urlsplit(base_url)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=5)
    try:
        connection.putrequest("POST", url.path + "/chat/completions")
        for name, value in (headers or {"Content-Length": str(len(blob))}).items():
            connection.putheader(name, value)
        connection.endheaders(blob)
        reply = connection.getresponse()
        return reply.status, reply.read()
    finally:
        connection.close()


def _nested_schema(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


BAD_BODIES = {
    "empty guided_choice": {"messages": OK_MESSAGES, "guided_choice": []},
    "guided_choice not strings": {"messages": OK_MESSAGES, "guided_choice": [1, 2]},
    "structured_outputs not an object": {"messages": OK_MESSAGES, "structured_outputs": "x"},
    "empty structured choice": {"messages": OK_MESSAGES, "structured_outputs": {"choice": []}},
    "guided_json not a schema": {"messages": OK_MESSAGES, "guided_json": {"type": 5}},
    "schema nested too deeply": {"messages": OK_MESSAGES, "guided_json": _nested_schema(300)},
    "response_format not an object": {"messages": OK_MESSAGES, "response_format": "json"},
    "response_format without schema": {
        "messages": OK_MESSAGES,
        "response_format": {"type": "json_schema", "json_schema": {"name": "a"}},
    },
    "max_tokens 0": {"messages": OK_MESSAGES, "max_tokens": 0},
    "max_tokens a string": {"messages": OK_MESSAGES, "max_tokens": "10"},
    "max_completion_tokens negative": {"messages": OK_MESSAGES, "max_completion_tokens": -3},
    "temperature -1": {"messages": OK_MESSAGES, "temperature": -1},
    "top_p 5": {"messages": OK_MESSAGES, "top_p": 5},
    "top_p 0": {"messages": OK_MESSAGES, "top_p": 0},
    "seed a float": {"messages": OK_MESSAGES, "seed": 1.5},
    "messages not a list": {"messages": "hello"},
    "message without a role": {"messages": [{"content": "x"}]},
    "content not a string": {"messages": [{"role": "user", "content": 5}]},
}


@pytest.mark.parametrize("case", list(BAD_BODIES), ids=list(BAD_BODIES))
def test_a_body_the_server_cannot_use_is_a_400_naming_the_field(server, case) -> None:
    body = BAD_BODIES[case]
    status, _, blob = _chat(server.base_url, body)
    assert status == 400, blob
    message = json.loads(blob)["error"]["message"]
    fields = [k for k in body if k != "messages"] or ["messages"]
    assert any(name in message for name in fields) or "nested" in message, message
    # The server survived: the next request is answered.
    assert _chat(server.base_url, {"messages": OK_MESSAGES})[0] == 200


RAW_BODIES = {
    "deeply nested JSON": b"[" * DEEP + b"]" * DEEP,
    "deeply nested object": b'{"a":' * DEEP + b"1" + b"}" * DEEP,
    "NaN temperature": b'{"model": "m", "messages": [], "temperature": NaN}',
    "Infinity top_p": b'{"model": "m", "messages": [], "top_p": Infinity}',
    "not UTF-8": b'{"model": "\xff\xfe"}',
    "truncated JSON": b'{"model": "sim-mechanism", "messages": [',
    "a JSON array": b"[1, 2]",
    "empty": b"",
}


@pytest.mark.parametrize("case", list(RAW_BODIES), ids=list(RAW_BODIES))
def test_unparseable_bodies_are_400_and_the_server_keeps_serving(server, case) -> None:
    status, blob = _raw_post(server.base_url, RAW_BODIES[case])
    assert status == 400, blob
    assert json.loads(blob)["error"]["type"] == "invalid_request_error"
    assert _chat(server.base_url, {"messages": OK_MESSAGES})[0] == 200


def test_nan_and_out_of_range_parameters_are_refused_not_replaced(server) -> None:
    blob = json.dumps(
        {"model": SIM_MODEL, "messages": OK_MESSAGES, "temperature": float("nan")}
    ).encode()  # Python writes NaN, as a careless client would
    status, reply = _raw_post(server.base_url, blob)
    assert status == 400 and b"NaN" in reply


def test_a_lone_surrogate_in_a_prompt_is_a_400_naming_the_message(server) -> None:
    blob = json.dumps({"model": SIM_MODEL, "messages": [{"role": "user", "content": "a\ud800b"}]})
    status, reply = _raw_post(server.base_url, blob.encode())
    assert status == 400
    message = json.loads(reply)["error"]["message"]
    assert "messages[0].content" in message and "U+D800" in message


@pytest.mark.parametrize("length", ["abc", "-5", "1e3", ""])
def test_a_bad_content_length_is_a_400(server, length) -> None:
    status, reply = _raw_post(server.base_url, b"{}", {"Content-Length": length})
    assert status == 400 and b"Content-Length" in reply
    assert _chat(server.base_url, {"messages": OK_MESSAGES})[0] == 200


def test_a_body_over_the_size_cap_is_refused_before_it_is_read() -> None:
    with sim_server_in_thread(max_body_bytes=1000) as handle:
        status, reply = _raw_post(handle.base_url, b"", {"Content-Length": str(10**12)})
        assert status == 413 and b"limit" in reply
        big = {"messages": [{"role": "user", "content": "x" * 2000}]}
        assert _chat(handle.base_url, big)[0] == 413
        assert _chat(handle.base_url, {"messages": OK_MESSAGES})[0] == 200


def test_idle_and_short_bodied_connections_are_closed_after_the_read_timeout() -> None:
    with sim_server_in_thread(read_timeout=0.3) as handle:
        port = urllib.parse.urlsplit(handle.base_url).port
        for opening in (b"", b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 100\r\n\r\n{"):
            with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
                sock.sendall(opening)
                started = time.monotonic()
                assert sock.recv(1024) == b""  # closed by the server, no response
                assert 0.2 <= time.monotonic() - started < 4
        assert _chat(handle.base_url, {"messages": OK_MESSAGES})[0] == 200


@pytest.mark.parametrize("port", ["70000", "-1", "http"])
def test_cli_refuses_a_port_out_of_range_with_a_clear_message(port) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "deliberation", "serve-sim", "--port", port],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "--port" in result.stderr and "port" in result.stderr.split("--port", 1)[1]
    assert "Traceback" not in result.stderr


def _ipv6_loopback_available() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.mark.skipif(not _ipv6_loopback_available(), reason="this machine has no IPv6 loopback")
def test_the_ipv6_loopback_it_advertises_works() -> None:
    with sim_server_in_thread(host="::1") as handle:
        assert handle.base_url.startswith("http://[::1]:")
        status, _, blob = _chat(handle.base_url, {"messages": [{"role": "user", "content": "v6"}]})
    assert status == 200 and json.loads(blob)["choices"][0]["message"]["content"] == "echo: v6"


# -- floods: slowloris heads, too many connections -------------------------------------------


def _port(handle) -> int:
    return int(urllib.parse.urlsplit(handle.base_url).port)


def _closed_by_server(sock: socket.socket) -> bool:
    """Whether the server has closed ``sock`` (EOF or reset), without blocking."""
    sock.setblocking(False)
    try:
        return sock.recv(4096) == b""
    except BlockingIOError:
        return False
    except ConnectionError:
        return True
    finally:
        sock.setblocking(True)


def _trickle_head(socks: list[socket.socket], give_up_s: float, every_s: float = 0.05) -> float:
    """Send the request line, then one header line per ``every_s`` on every socket until the
    server has closed them all (the seconds it took) or ``give_up_s`` passes (inf)."""
    for sock in socks:
        sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n")
    started = time.monotonic()
    open_socks = list(socks)
    line = 0
    while open_socks and time.monotonic() - started < give_up_s:
        line += 1
        for sock in list(open_socks):
            try:
                sock.sendall(f"X-Slow-{line}: {line}\r\n".encode())
            except OSError:
                open_socks.remove(sock)
                continue
            if _closed_by_server(sock):
                open_socks.remove(sock)
        time.sleep(every_s)
    return time.monotonic() - started if not open_socks else float("inf")


def test_a_head_trickling_in_is_cut_off_at_the_read_timeout() -> None:
    """Each header arrives well within the read timeout, but the head as a whole does not."""
    with sim_server_in_thread(read_timeout=0.4, head_timeout=5) as handle:
        with socket.create_connection(("127.0.0.1", _port(handle)), timeout=5) as sock:
            assert _trickle_head([sock], give_up_s=8) < 4
        assert _chat(handle.base_url, {"messages": OK_MESSAGES})[0] == 200


def test_the_request_head_has_its_own_deadline_once_it_starts() -> None:
    with (
        sim_server_in_thread(read_timeout=5, head_timeout=0.3) as handle,
        socket.create_connection(("127.0.0.1", _port(handle)), timeout=5) as sock,
    ):
        assert _trickle_head([sock], give_up_s=8) < 4


def test_many_slowloris_connections_are_all_closed_and_real_requests_still_answered() -> None:
    with sim_server_in_thread(read_timeout=0.5) as handle:
        socks = [
            socket.create_connection(("127.0.0.1", _port(handle)), timeout=5) for _ in range(30)
        ]
        try:
            assert _chat(handle.base_url, {"messages": OK_MESSAGES})[0] == 200
            assert _trickle_head(socks, give_up_s=8) < 5
        finally:
            for sock in socks:
                sock.close()


def test_connections_over_the_cap_get_a_503_at_once_and_the_server_recovers() -> None:
    with sim_server_in_thread(read_timeout=5, max_connections=4) as handle:
        idle = [socket.create_connection(("127.0.0.1", _port(handle)), timeout=5) for _ in range(4)]
        try:
            assert wait_until(lambda: handle.state.stats()["connections_open"] == 4, 5)
            started = time.monotonic()
            try:  # a 503 with Retry-After, or (if the reply loses the race) a closed connection
                status = _chat(handle.base_url, {"messages": OK_MESSAGES})[0]
            except ConnectionError:
                status = 503
            assert status == 503 and time.monotonic() - started < 4
            assert handle.state.stats()["connections_refused"] >= 1
        finally:
            for sock in idle:
                sock.close()
        assert wait_until(lambda: handle.state.stats()["connections_open"] == 0, 5)
        assert _chat(handle.base_url, {"messages": OK_MESSAGES})[0] == 200


@pytest.mark.parametrize("option", ["head_timeout_s", "max_connections", "read_timeout_s"])
def test_the_flood_limits_are_options_that_must_be_positive(option) -> None:
    from deliberation.inference.serve_sim.server import SimServerState

    with pytest.raises(ValueError, match=option):
        SimServerState(SimBackend(), FaultOptions(), **{option: 0})


def test_running_out_of_file_descriptors_makes_the_server_wait_not_spin(monkeypatch) -> None:
    """accept() failing with EMFILE leaves the listening socket readable: without a pause the
    serve loop retries at full speed, starving the handler threads."""
    import errno
    import socketserver

    calls = []

    def exhausted(self):
        calls.append(time.monotonic())
        raise OSError(errno.EMFILE, "Too many open files")

    with sim_server_in_thread() as handle:
        monkeypatch.setattr(socketserver.TCPServer, "get_request", exhausted)
        with socket.create_connection(("127.0.0.1", _port(handle)), timeout=5):
            time.sleep(0.5)
            monkeypatch.undo()
        assert 1 <= len(calls) <= 10
        assert _chat(handle.base_url, {"messages": OK_MESSAGES})[0] == 200
