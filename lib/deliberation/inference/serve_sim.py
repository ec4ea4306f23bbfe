"""``deliberation serve-sim``: the sim backend behind the OpenAI chat-completions protocol.

Serves ``POST /v1/chat/completions`` and ``GET /v1/models`` on loopback only, answering each
request with :meth:`SimBackend.answer` on a request rebuilt from the fields on the wire (messages, sampling
fields, seed, structured output in any of vLLM's ``structured_outputs``, the older ``guided_*``
or OpenAI's ``response_format`` forms) and the stage from the ``X-Deliberation-Stage`` header,
so an answer over HTTP equals the in-process answer. For tests and benchmarks it can add latency
and inject faults at given rates (429 with Retry-After, 500, hung responses, malformed bodies),
and it counts what arrives: ``GET /stats`` (``POST /stats/reset`` zeroes the counters).

Python API: :func:`running_sim_server` (a subprocess, so another process may be killed beside
it) and :func:`sim_server_in_thread` (in-process, for fast unit tests).
"""

from __future__ import annotations

import argparse
import contextlib
import hmac
import ipaddress
import json
import logging
import os
import re
import signal
import subprocess
import sys
import threading
import urllib.request
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

from deliberation.inference.base import STAGE_HEADER, ChatRequest, Message, StructuredOutput
from deliberation.inference.sim import SIM_SERVER_OWNER, SimBackend
from deliberation.inference.structured import CHOICE_FIELD

log = logging.getLogger(__name__)

DEFAULT_STAGE = "echo"
# A fixed ``created`` stamp keeps every response body deterministic.
CREATED = 1_700_000_000
FAULT_KINDS = ("429", "500", "hang", "malformed")
# What a "malformed" fault sends with status 200: a JSON body cut off mid-way.
MALFORMED_BODY = b'{"id": "chatcmpl-sim-broken", "object": "chat.completion", "choices": [{"ind'
_PORT_LINE = re.compile(r"http://[^\s/]+:(\d+)/v1")


@dataclass(frozen=True)
class FaultOptions:
    """Latency and fault injection. Rates are per arrival and mutually exclusive (one seeded
    draw picks at most one fault), so their sum must not exceed 1."""

    latency_ms: float = 0.0
    rate_429: float = 0.0
    rate_500: float = 0.0
    rate_hang: float = 0.0
    rate_malformed: float = 0.0
    retry_after_s: float = 1.0
    hang_s: float = 30.0
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("rate_429", "rate_500", "rate_hang", "rate_malformed"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"fault rate {name} must be in [0, 1], got {value}")
        if self.total_rate > 1.0 + 1e-9:
            raise ValueError(f"fault rates add up to {self.total_rate:.3f} > 1")
        for name in ("latency_ms", "retry_after_s", "hang_s"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")

    @property
    def total_rate(self) -> float:
        return self.rate_429 + self.rate_500 + self.rate_hang + self.rate_malformed

    def pick(self, draw: float) -> str | None:
        """The fault for a uniform draw in [0, 1), or None to answer normally."""
        edge = 0.0
        for kind, rate in zip(
            FAULT_KINDS,
            (self.rate_429, self.rate_500, self.rate_hang, self.rate_malformed),
            strict=True,
        ):
            edge += rate
            if draw < edge:
                return kind
        return None


@dataclass
class _Counters:
    arrivals: int = 0
    answered: int = 0
    rejected: int = 0
    faults: Counter[str] = field(default_factory=Counter)
    arrivals_per_prompt: Counter[str] = field(default_factory=Counter)
    answered_per_prompt: Counter[str] = field(default_factory=Counter)


class SimServerState:
    """What the handler threads share: the sim, the fault generator and the counters (all
    behind one lock, so fault draws happen in arrival order from one seeded stream)."""

    def __init__(
        self,
        backend: SimBackend,
        faults: FaultOptions,
        *,
        served_model: str | None = None,
        api_key: str | None = None,
    ) -> None:
        self.backend = backend
        self.faults = faults
        self.served_model = served_model or backend.model
        self._api_key = api_key
        self._lock = threading.Lock()
        self._rng = np.random.default_rng(faults.seed)
        self._counters = _Counters()
        self.stopping = threading.Event()

    def arrive(self, prompt: str) -> str | None:
        """Count an arrival and decide its fault (None: answer it)."""
        with self._lock:
            self._counters.arrivals += 1
            self._counters.arrivals_per_prompt[prompt] += 1
            fault = self.faults.pick(float(self._rng.random())) if self.faults.total_rate else None
            if fault is not None:
                self._counters.faults[fault] += 1
            return fault

    def answered(self, prompt: str) -> None:
        with self._lock:
            self._counters.answered += 1
            self._counters.answered_per_prompt[prompt] += 1

    def rejected(self) -> None:
        with self._lock:
            self._counters.rejected += 1

    def key_ok(self, authorization: str | None) -> bool:
        if self._api_key is None:
            return True
        expected = f"Bearer {self._api_key}"
        return authorization is not None and hmac.compare_digest(
            authorization.encode(), expected.encode()
        )

    def stats(self) -> dict[str, Any]:
        with self._lock:
            c = self._counters
            return {
                "arrivals": c.arrivals,
                "answered": c.answered,
                "rejected": c.rejected,
                "faults": {kind: c.faults.get(kind, 0) for kind in FAULT_KINDS},
                "arrivals_per_prompt": dict(c.arrivals_per_prompt),
                "answered_per_prompt": dict(c.answered_per_prompt),
            }

    def reset(self) -> None:
        with self._lock:
            self._counters = _Counters()


# ---------------------------------------------------------------------------------------------
# The wire format
# ---------------------------------------------------------------------------------------------


class WireError(ValueError):
    """A request body the server rejects with 400 (the message says which field)."""


def _choice_list_of(schema: Any) -> list[str] | None:
    """The choices if ``schema`` is the ``{"answer": enum}`` wrapper that stands for a choice
    list in ``response_format`` mode (see ``structured.choice_schema``), else None."""
    if not isinstance(schema, Mapping) or schema.get("type") != "object":
        return None
    properties = schema.get("properties")
    if not isinstance(properties, Mapping) or set(properties) != {CHOICE_FIELD}:
        return None
    enum = (
        properties[CHOICE_FIELD].get("enum")
        if isinstance(properties[CHOICE_FIELD], Mapping)
        else None
    )
    if isinstance(enum, list) and enum and all(isinstance(item, str) for item in enum):
        return list(enum)
    return None


def structured_from_wire(body: Mapping[str, Any]) -> tuple[StructuredOutput | None, bool]:
    """The structured-output spec a request body carries, in any of the three wire forms, and
    whether the answer must be wrapped as ``{"answer": choice}`` (``response_format`` choices)."""
    spec = body.get("structured_outputs")
    if isinstance(spec, Mapping):
        if spec.get("choice") is not None:
            return StructuredOutput(choices=tuple(spec["choice"])), False
        if spec.get("json") is not None:
            return StructuredOutput(json_schema=spec["json"]), False
        raise WireError("structured_outputs: expected a 'choice' or 'json' field")
    if body.get("guided_choice") is not None:
        return StructuredOutput(choices=tuple(body["guided_choice"])), False
    if body.get("guided_json") is not None:
        return StructuredOutput(json_schema=body["guided_json"]), False
    response_format = body.get("response_format")
    if isinstance(response_format, Mapping) and response_format.get("type") == "json_schema":
        wrapper = response_format.get("json_schema")
        schema = wrapper.get("schema") if isinstance(wrapper, Mapping) else None
        if not isinstance(schema, Mapping):
            raise WireError("response_format.json_schema.schema: expected a JSON object")
        choices = _choice_list_of(schema)
        if choices is not None:
            return StructuredOutput(choices=tuple(choices)), True
        return StructuredOutput(json_schema=schema), False
    return None, False


def _messages(body: Mapping[str, Any]) -> tuple[Message, ...]:
    raw = body.get("messages")
    if not isinstance(raw, list) or not raw:
        raise WireError("messages: expected a non-empty list")
    messages = []
    for index, item in enumerate(raw):
        if not isinstance(item, Mapping) or item.get("role") not in ("system", "user", "assistant"):
            raise WireError(f"messages[{index}]: expected a role of system, user or assistant")
        if not isinstance(item.get("content"), str):
            raise WireError(f"messages[{index}].content: expected a string")
        messages.append(Message(item["role"], item["content"]))
    return tuple(messages)


def last_user_text(body: Mapping[str, Any]) -> str:
    """The prompt a request is counted under in ``/stats`` (its last user message)."""
    raw = body.get("messages")
    if isinstance(raw, list):
        for item in reversed(raw):
            if isinstance(item, Mapping) and item.get("role") == "user":
                return str(item.get("content", ""))
    return ""


def _number(body: Mapping[str, Any], name: str, default: float) -> float:
    value = body.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise WireError(f"{name}: expected a number, got {value!r}")
    return value


def answer_body(state: SimServerState, body: Mapping[str, Any], stage: str) -> dict[str, Any]:
    """The chat-completion JSON for one request body (raises WireError for a bad body)."""
    messages = _messages(body)
    structured, wrap_choice = structured_from_wire(body)
    temperature = _number(body, "temperature", 1.0)
    top_p = _number(body, "top_p", 1.0)
    max_tokens = body.get("max_tokens", body.get("max_completion_tokens")) or 512
    seed = body.get("seed")
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens <= 0:
        raise WireError(f"max_tokens: expected a positive integer, got {max_tokens!r}")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
        raise WireError(f"seed: expected an integer, got {seed!r}")
    request = ChatRequest(
        messages=messages,
        stage=stage,
        temperature=temperature,
        top_p=top_p,
        max_tokens=max_tokens,
        seed=seed,
        structured=structured,
    )
    # The wire seed already has any sample index folded in; sample=0 keeps it as it is.
    response = state.backend.answer(request)
    if not response.ok:
        raise WireError(response.error or "sim failed")
    content = response.text
    if wrap_choice and structured is not None and content in (structured.choices or ()):
        content = json.dumps({CHOICE_FIELD: content})
    return {
        "id": "chatcmpl-sim",
        "object": "chat.completion",
        "created": CREATED,
        "model": state.served_model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": response.finish_reason,
            }
        ],
        "usage": {
            "prompt_tokens": response.prompt_tokens,
            "completion_tokens": response.completion_tokens,
            "total_tokens": response.prompt_tokens + response.completion_tokens,
        },
    }


def _error(message: str, kind: str, code: int | str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as real servers do
    disable_nagle_algorithm = True  # headers and body go out at once (no 40 ms delayed-ACK stalls)
    server: _SimHTTPServer

    # -- plumbing -------------------------------------------------------------------------------
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        log.debug("%s %s", self.address_string(), format % args)  # request line only, no headers

    def _send_json(
        self, status: int, payload: Any, headers: Mapping[str, str] | None = None
    ) -> None:
        self._send_bytes(status, json.dumps(payload).encode(), headers)

    def _send_bytes(
        self, status: int, blob: bytes, headers: Mapping[str, str] | None = None
    ) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(blob)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(blob)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (e.g. timed out); nothing to do

    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    @property
    def state(self) -> SimServerState:
        return self.server.state

    def _sleep(self, seconds: float) -> None:
        """Sleep, waking early when the server shuts down (never blocks shutdown)."""
        if seconds > 0:
            self.state.stopping.wait(seconds)

    # -- routes ---------------------------------------------------------------------------------
    def do_GET(self) -> None:  # noqa: N802 - stdlib name
        if self.path.rstrip("/") == "/v1/models":
            self._send_json(
                200,
                {
                    "object": "list",
                    "data": [
                        {
                            "id": self.state.served_model,
                            "object": "model",
                            "created": CREATED,
                            "owned_by": SIM_SERVER_OWNER,
                        }
                    ],
                },
            )
        elif self.path.rstrip("/") == "/stats":
            self._send_json(200, self.state.stats())
        else:
            self._send_json(404, _error(f"no route GET {self.path}", "not_found_error"))

    def do_POST(self) -> None:  # noqa: N802 - stdlib name
        raw = self._read_body()
        route = self.path.rstrip("/")
        if route == "/stats/reset":
            self.state.reset()
            self._send_json(200, {"reset": True})
            return
        if route != "/v1/chat/completions":
            self._send_json(404, _error(f"no route POST {self.path}", "not_found_error"))
            return
        if not self.state.key_ok(self.headers.get("Authorization")):
            self.state.rejected()
            self._send_json(401, _error("invalid API key", "authentication_error", 401))
            return
        try:
            body = json.loads(raw)
            if not isinstance(body, dict):
                raise ValueError("the body must be a JSON object")
        except ValueError as exc:
            self.state.rejected()
            self._send_json(
                400, _error(f"request body is not JSON: {exc}", "invalid_request_error")
            )
            return
        prompt = last_user_text(body)
        fault = self.state.arrive(prompt)
        if fault == "hang":
            self._sleep(self.state.faults.hang_s)
            self.close_connection = True  # hang up without a response
            return
        self._sleep(self.state.faults.latency_ms / 1000.0)
        if fault == "429":
            retry_after = self.state.faults.retry_after_s
            shown = str(int(retry_after)) if float(retry_after).is_integer() else f"{retry_after:g}"
            self._send_json(
                429,
                _error("injected fault: rate limited", "rate_limit_error", 429),
                {"Retry-After": shown},
            )
            return
        if fault == "500":
            self._send_json(500, _error("injected fault: internal error", "server_error", 500))
            return
        if fault == "malformed":
            self._send_bytes(200, MALFORMED_BODY)
            return
        model = body.get("model")
        if model != self.state.served_model:
            self.state.rejected()
            self._send_json(
                404,
                _error(
                    f"The model `{model}` does not exist (serving {self.state.served_model!r})",
                    "not_found_error",
                    404,
                ),
            )
            return
        stage = self.headers.get(STAGE_HEADER) or DEFAULT_STAGE
        try:
            payload = answer_body(self.state, body, stage)
        except WireError as exc:
            self.state.rejected()
            self._send_json(400, _error(str(exc), "invalid_request_error", 400))
            return
        self.state.answered(prompt)
        self._send_json(200, payload)


class _SimHTTPServer(ThreadingHTTPServer):
    daemon_threads = True  # handler threads never keep the process alive
    block_on_close = False  # and shutdown never waits for a hung response
    request_queue_size = 256

    def __init__(self, address: tuple[str, int], state: SimServerState) -> None:
        self.state = state
        super().__init__(address, _Handler)


def check_loopback(host: str) -> None:
    """Refuse to bind anywhere but loopback: the sim server is for tests and benchmarks."""
    if host == "localhost":
        return
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise ValueError(
            f"serve-sim binds to loopback only (127.0.0.1, ::1, localhost), not {host!r}"
        )


class SimServer:
    """The HTTP server, started on a background thread; ``port=0`` picks a free port."""

    def __init__(self, state: SimServerState, *, host: str = "127.0.0.1", port: int = 0) -> None:
        check_loopback(host)
        self.state = state
        self._httpd = _SimHTTPServer((host, port), state)
        self.host = host
        self.port = int(self._httpd.server_address[1])
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},  # shutdown() waits at most this long
            name="serve-sim",
            daemon=True,
        )

    @property
    def base_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/v1"

    def start(self) -> SimServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.state.stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)


def build_state(
    *,
    profile: str | None = "sim",
    faults: FaultOptions | None = None,
    served_model: str | None = None,
    api_key_env: str | None = None,
) -> SimServerState:
    """The server's state from a profile name/path (``None``: the sim's built-in defaults)."""
    if profile is None:
        backend = SimBackend()
    else:
        from deliberation.params import load_profile

        backend = SimBackend.from_profile(load_profile(profile))
    api_key = None
    if api_key_env is not None:
        if api_key_env not in os.environ:
            raise KeyError(f"--require-key-env: environment variable {api_key_env} is not set")
        api_key = os.environ[api_key_env]
    return SimServerState(
        backend, faults or FaultOptions(), served_model=served_model, api_key=api_key
    )


# ---------------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``deliberation serve-sim``."""
    parser.add_argument("--port", type=int, default=8001, help="port (0: pick a free one)")
    parser.add_argument("--host", default="127.0.0.1", help="loopback address to bind")
    parser.add_argument("--profile", default="sim", help="profile whose sim parameters to serve")
    parser.add_argument(
        "--served-model-name", default=None, help="model id to serve (default: the profile's model)"
    )
    parser.add_argument(
        "--require-key-env",
        default=None,
        metavar="VAR",
        help="answer 401 unless the bearer token equals the value of this environment variable",
    )
    parser.add_argument("--latency-ms", type=float, default=0.0, help="delay before each response")
    parser.add_argument("--fault-429", type=float, default=0.0, help="rate of 429 + Retry-After")
    parser.add_argument("--fault-500", type=float, default=0.0, help="rate of 500 responses")
    parser.add_argument("--fault-hang", type=float, default=0.0, help="rate of hung responses")
    parser.add_argument(
        "--fault-malformed", type=float, default=0.0, help="rate of 200s with a non-JSON body"
    )
    parser.add_argument("--retry-after", type=float, default=1.0, help="Retry-After seconds on 429")
    parser.add_argument("--hang-s", type=float, default=30.0, help="how long a hung response hangs")
    parser.add_argument("--fault-seed", type=int, default=0, help="seed of the fault draws")


def faults_from_args(args: argparse.Namespace) -> FaultOptions:
    return FaultOptions(
        latency_ms=args.latency_ms,
        rate_429=args.fault_429,
        rate_500=args.fault_500,
        rate_hang=args.fault_hang,
        rate_malformed=args.fault_malformed,
        retry_after_s=args.retry_after,
        hang_s=args.hang_s,
        seed=args.fault_seed,
    )


def run_from_args(args: argparse.Namespace) -> int:
    """Serve until SIGINT/SIGTERM. The first stdout line names the URL (and so the port)."""
    try:
        check_loopback(args.host)
        state = build_state(
            profile=args.profile,
            faults=faults_from_args(args),
            served_model=args.served_model_name,
            api_key_env=args.require_key_env,
        )
        server = SimServer(state, host=args.host, port=args.port)
    except (ValueError, KeyError, OSError) as exc:
        print(f"serve-sim: {exc}", file=sys.stderr)
        return 2
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    server.start()
    print(f"serve-sim listening on {server.base_url} (model {state.served_model})", flush=True)
    try:
        while not stop.wait(0.1):
            pass
    finally:
        server.stop()
    return 0


# ---------------------------------------------------------------------------------------------
# Python API for tests and benchmarks
# ---------------------------------------------------------------------------------------------


class SimServerHandle:
    """A running server: its URL, its counters and a reset."""

    def __init__(
        self,
        base_url: str,
        process: subprocess.Popen[str] | None = None,
        state: SimServerState | None = None,
    ) -> None:
        self.base_url = base_url
        self.process = process
        self.state = state

    @property
    def root_url(self) -> str:
        return self.base_url.removesuffix("/v1")

    def stats(self) -> dict[str, Any]:
        with urllib.request.urlopen(f"{self.root_url}/stats", timeout=10) as reply:
            return json.loads(reply.read())

    def reset(self) -> None:
        request = urllib.request.Request(f"{self.root_url}/stats/reset", data=b"", method="POST")
        with urllib.request.urlopen(request, timeout=10) as reply:
            reply.read()


def _cli_options(options: Mapping[str, Any]) -> list[str]:
    argv = []
    for name, value in options.items():
        if value is None:
            continue
        argv += [f"--{name.replace('_', '-')}", str(value)]
    return argv


@contextlib.contextmanager
def running_sim_server(
    *, startup_timeout_s: float = 30.0, env: Mapping[str, str] | None = None, **options: Any
) -> Iterator[SimServerHandle]:
    """Run ``python -m deliberation serve-sim --port 0 ...`` in a subprocess for the block.

    ``options`` are the CLI options in Python spelling (``latency_ms=100, fault_429=0.2``).
    The server is terminated on exit (killed if it does not stop within 5 s).
    """
    argv = [
        sys.executable,
        "-m",
        "deliberation",
        "serve-sim",
        "--port",
        "0",
        *_cli_options(options),
    ]
    process = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=None,  # inherited: a crash or bad option shows where the caller's stderr goes
        text=True,
        env=None if env is None else {**os.environ, **env},
    )
    try:
        line = _first_line(process, startup_timeout_s)
        match = _PORT_LINE.search(line)
        if match is None:
            raise RuntimeError(f"serve-sim did not report its URL; first line: {line!r}")
        yield SimServerHandle(match.group(0), process)
    finally:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()


def _first_line(process: subprocess.Popen[str], timeout_s: float) -> str:
    box: list[str] = []
    reader = threading.Thread(target=lambda: box.append(process.stdout.readline()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    reader.join(timeout_s)
    if not box or not box[0]:
        code = process.poll()
        raise RuntimeError(
            f"serve-sim did not start within {timeout_s:.0f} s"
            + ("" if code is None else f" (exited with code {code})")
        )
    return box[0]


@contextlib.contextmanager
def sim_server_in_thread(**options: Any) -> Iterator[SimServerHandle]:
    """The same server on a background thread of this process (fast unit tests); ``options``
    are spelled as for :func:`running_sim_server`. The handle also carries ``.state``."""
    parser = argparse.ArgumentParser(prog="serve-sim")
    add_arguments(parser)
    args = parser.parse_args(["--port", "0", *_cli_options(options)])
    check_loopback(args.host)
    state = build_state(
        profile=args.profile,
        faults=faults_from_args(args),
        served_model=args.served_model_name,
        api_key_env=args.require_key_env,
    )
    server = SimServer(state, host=args.host, port=0).start()
    try:
        yield SimServerHandle(server.base_url, state=state)
    finally:
        server.stop()
