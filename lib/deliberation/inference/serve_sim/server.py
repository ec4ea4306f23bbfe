"""The serve-sim HTTP server: ``POST /v1/chat/completions``, ``GET /v1/models`` and the
counters (``GET /stats``, ``POST /stats/reset``), on loopback only.

Each request is rebuilt from the body (:mod:`.wire`) and the stage header and answered with
:meth:`SimBackend.answer`, so an answer over HTTP equals the in-process answer; faults and
latency are injected as :class:`.faults.FaultOptions` asks.

Floods cannot take it down: a connection waiting for a request head is closed at the read
timeout however slowly the head trickles in (the deadline covers the whole head, not each
read), a head that has started must be complete within ``head_timeout_s``, a body within the
read timeout; at most ``max_connections`` connections are served at once (others get a 503 with
``Retry-After`` and are closed at once, so the server never runs out of file descriptors), and
an ``accept`` that fails for lack of descriptors waits briefly instead of spinning.
"""

from __future__ import annotations

import contextlib
import errno
import hmac
import io
import ipaddress
import json
import logging
import resource
import select
import socket
import threading
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

from deliberation.inference.base import STAGE_HEADER, RunProfile
from deliberation.inference.secrets import read_api_key
from deliberation.inference.serve_sim.faults import FAULT_KINDS, MALFORMED_BODY, FaultOptions
from deliberation.inference.serve_sim.wire import WireFormatError, last_user_text, request_from_body
from deliberation.inference.sim import SIM_SERVER_OWNER, SimBackend
from deliberation.inference.structured import CHOICE_FIELD

log = logging.getLogger(__name__)

_DEFAULT_STAGE = "echo"
# A fixed ``created`` stamp keeps every response body deterministic.
_CREATED = 1_700_000_000
# Far above any prompt the experiments send (a long DHD discussion is well under 1 MiB).
DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024
# Long enough for any client between two requests of a batch; idle sockets are closed after it.
DEFAULT_READ_TIMEOUT_S = 60.0
# A client sends its request head in one go; ten seconds is generous even on a loaded machine.
DEFAULT_HEAD_TIMEOUT_S = 10.0


def _default_max_connections() -> int:
    """256 connections at once, or a quarter of this process's file-descriptor limit if lower
    (each connection holds one descriptor and one thread)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return max(1, min(256, soft // 4)) if soft != resource.RLIM_INFINITY else 256


@dataclass
class _Counters:
    arrivals: int = 0
    answered: int = 0
    rejected: int = 0
    connections_refused: int = 0
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
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        read_timeout_s: float = DEFAULT_READ_TIMEOUT_S,
        head_timeout_s: float = DEFAULT_HEAD_TIMEOUT_S,
        max_connections: int | None = None,
    ) -> None:
        if max_body_bytes < 1:
            raise ValueError(f"max_body_bytes must be >= 1, got {max_body_bytes}")
        for name, seconds in (
            ("read_timeout_s", read_timeout_s),
            ("head_timeout_s", head_timeout_s),
        ):
            if not 0 < seconds < float("inf"):
                raise ValueError(f"{name} must be a positive number, got {seconds}")
        if max_connections is not None and max_connections < 1:
            raise ValueError(f"max_connections must be >= 1, got {max_connections}")
        self.backend = backend
        self.faults = faults
        self.max_body_bytes = max_body_bytes
        self.read_timeout_s = read_timeout_s
        self.head_timeout_s = head_timeout_s
        self.max_connections = max_connections or _default_max_connections()
        self.served_model = served_model or backend.model
        self._api_key = api_key
        self._lock = threading.Lock()
        self._rng = np.random.default_rng(faults.seed)
        self._counters = _Counters()
        self._connections_open = 0
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

    def connection_refused(self) -> None:
        with self._lock:
            self._counters.connections_refused += 1

    def connection_opened(self, change: int = 1) -> None:
        with self._lock:
            self._connections_open += change

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
                "connections_refused": c.connections_refused,
                "connections_open": self._connections_open,
                "faults": {kind: c.faults.get(kind, 0) for kind in FAULT_KINDS},
                "arrivals_per_prompt": dict(c.arrivals_per_prompt),
                "answered_per_prompt": dict(c.answered_per_prompt),
            }

    def reset(self) -> None:
        with self._lock:
            self._counters = _Counters()


def answer_body(state: SimServerState, body: Mapping[str, Any], stage: str) -> dict[str, Any]:
    """The chat-completion JSON for one request body (raises WireFormatError for a bad body)."""
    request, wrap_choice = request_from_body(body, stage)
    structured = request.structured
    response = state.backend.answer(request)
    if not response.ok:
        raise WireFormatError(response.error or "sim failed")
    content = response.text
    if wrap_choice and structured is not None and content in (structured.choices or ()):
        content = json.dumps({CHOICE_FIELD: content})
    return {
        "id": "chatcmpl-sim",
        "object": "chat.completion",
        "created": _CREATED,
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


class _DeadlineReader(io.RawIOBase):
    """The socket as the handler reads it: every read waits at most the read timeout and never
    past the handler's current deadline (:meth:`_Handler.read_deadline`), so a client that
    sends a byte now and then cannot hold a connection open."""

    def __init__(self, sock: socket.socket, handler: _Handler) -> None:
        self._sock = sock
        self._handler = handler

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        timeout = self._handler.state.read_timeout_s
        deadline = self._handler.read_deadline()
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("the request did not arrive in time")
            timeout = min(timeout, remaining)
        self._sock.settimeout(timeout)
        count = self._sock.recv_into(buffer)
        if count:
            self._handler.received()
        return count


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as real servers do
    disable_nagle_algorithm = True  # headers and body go out at once (no 40 ms delayed-ACK stalls)
    server: _SimHTTPServer

    def setup(self) -> None:
        # A connection that sends nothing (idle keep-alive, or a body shorter than its
        # Content-Length) is closed after the read timeout instead of holding a thread forever.
        self.timeout = self.server.state.read_timeout_s
        super().setup()
        self.rfile = io.BufferedReader(_DeadlineReader(self.connection, self))
        self._head_until: float | None = None  # waiting for (or reading) a request head
        self._head_started: float | None = None  # its first byte arrived
        self._body_until: float | None = None

    def handle_one_request(self) -> None:
        # The wait for the next request and its head together end at the read timeout.
        self._head_until = time.monotonic() + self.state.read_timeout_s
        self._head_started = None
        super().handle_one_request()

    def read_deadline(self) -> float | None:
        """When the read under way must be complete (None: only the per-read timeout)."""
        if self._head_until is not None:
            if self._head_started is None:
                return self._head_until
            return min(self._head_until, self._head_started + self.state.head_timeout_s)
        return self._body_until

    def received(self) -> None:
        if self._head_until is not None and self._head_started is None:
            self._head_started = time.monotonic()

    def parse_request(self) -> bool:
        parsed = super().parse_request()
        self._head_until = None  # the head is in: its deadline no longer applies
        return parsed

    # -- plumbing -------------------------------------------------------------------------------
    def log_message(self, format: str, *args: Any) -> None:
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
        """The body, at most ``max_body_bytes``; raises :class:`_Refused` for a missing, bad or
        too large ``Content-Length`` (the connection is then closed: its framing is unknown).
        A client that sends less than it declared hits the read timeout."""
        declared = self.headers.get("Content-Length")
        if declared is None:
            return b""
        try:
            length = int(declared.strip())
            if length < 0 or not declared.strip().isdigit():
                raise ValueError
        except ValueError:
            self.close_connection = True
            raise _Refused(400, f"Content-Length: not a byte count: {declared[:40]!r}") from None
        limit = self.state.max_body_bytes
        if length > limit:
            self.close_connection = True
            raise _Refused(413, f"request body of {length} bytes is over the {limit}-byte limit")
        if not length:
            return b""
        self._body_until = time.monotonic() + self.state.read_timeout_s
        try:
            return self.rfile.read(length)
        finally:
            self._body_until = None

    @property
    def state(self) -> SimServerState:
        return self.server.state

    def _sleep(self, seconds: float) -> None:
        """Sleep, waking early when the server shuts down (never blocks shutdown)."""
        if seconds > 0:
            self.state.stopping.wait(seconds)

    # -- routes ---------------------------------------------------------------------------------
    def do_GET(self) -> None:
        if self.path.rstrip("/") == "/v1/models":
            self._send_json(
                200,
                {
                    "object": "list",
                    "data": [
                        {
                            "id": self.state.served_model,
                            "object": "model",
                            "created": _CREATED,
                            "owned_by": SIM_SERVER_OWNER,
                        }
                    ],
                },
            )
        elif self.path.rstrip("/") == "/stats":
            self._send_json(200, self.state.stats())
        else:
            self._send_json(404, _error(f"no route GET {self.path}", "not_found_error"))

    def do_POST(self) -> None:
        try:
            self._post()
        except (TimeoutError, ConnectionError):
            self.close_connection = True  # silent or vanished client: close, nothing to answer
        except _Refused as refused:
            self.state.rejected()
            self._send_json(refused.status, _error(refused.message, refused.kind, refused.status))
        except Exception:  # a server bug answers 500 and is logged; the server keeps serving
            log.exception("serve-sim: unexpected error on POST %s", self.path)
            self._send_json(500, _error("serve-sim internal error", "server_error", 500))

    def _post(self) -> None:
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
            raise _Refused(401, "invalid API key", "authentication_error")
        body = _parse_body(raw)
        prompt = last_user_text(body)
        fault = self.state.arrive(prompt)
        if fault == "hang":
            self._sleep(self.state.faults.hang_s)
            self.close_connection = True  # hang up without a response
            return
        self._sleep(self.state.faults.latency_ms / 1000.0)
        if fault == "429":
            self._send_json(
                429,
                _error("injected fault: rate limited", "rate_limit_error", 429),
                {"Retry-After": self.state.faults.retry_after_header()},
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
            raise _Refused(
                404,
                f"The model `{str(model)[:200]}` does not exist"
                f" (serving {self.state.served_model!r})",
                "not_found_error",
            )
        stage = self.headers.get(STAGE_HEADER) or _DEFAULT_STAGE
        try:
            payload = answer_body(self.state, body, stage)
        except WireFormatError as exc:
            raise _Refused(400, str(exc)) from None
        except RecursionError:  # e.g. a JSON schema nested too deeply to check
            raise _Refused(400, "request body is nested too deeply") from None
        self.state.answered(prompt)
        self._send_json(200, payload)


class _Refused(Exception):
    """A request answered with a 4xx error (counted as rejected)."""

    def __init__(self, status: int, message: str, kind: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.kind = kind


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _parse_body(raw: bytes) -> dict[str, Any]:
    """The JSON object a request body holds; :class:`_Refused` (400) for anything else: bytes
    that are not UTF-8 JSON, ``NaN``/``Infinity``, nesting deeper than Python can decode, or
    a value that is not an object."""
    try:
        body = json.loads(raw, parse_constant=_no_constant)
    except RecursionError:
        raise _Refused(400, "request body is nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise _Refused(400, f"request body is not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise _Refused(400, "request body is not JSON: expected an object")
    return body


_TOO_MANY = json.dumps(
    _error("serve-sim: too many connections at once; retry", "server_error", 503)
).encode()
_TOO_MANY_REPLY = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
    b"Retry-After: 1\r\nConnection: close\r\nContent-Length: %d\r\n\r\n" % len(_TOO_MANY)
) + _TOO_MANY
# accept() errors that mean "no descriptor or memory left now": wait instead of spinning.
_EXHAUSTED = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})


def _refuse_connection(sock: socket.socket) -> None:
    """Answer 503 and close, from the accepting thread and without blocking it: the request
    (if it has arrived within a few milliseconds) is read first, so the client sees the 503
    rather than a reset."""
    try:
        sock.setblocking(False)
        select.select([sock], [], [], 0.02)
        with contextlib.suppress(OSError):
            sock.recv(65536)
        sock.send(_TOO_MANY_REPLY)
        sock.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    finally:
        sock.close()


class _SimHTTPServer(ThreadingHTTPServer):
    daemon_threads = True  # handler threads never keep the process alive
    block_on_close = False  # and shutdown never waits for a hung response
    request_queue_size = 256

    def __init__(self, address: tuple[str, int], state: SimServerState) -> None:
        self.state = state
        self._slots = threading.BoundedSemaphore(state.max_connections)
        # One family per server: an IPv6 literal (``::1``) needs an IPv6 socket.
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        super().__init__(address, _Handler)

    def get_request(self) -> tuple[socket.socket, Any]:
        try:
            return super().get_request()
        except OSError as exc:
            if exc.errno in _EXHAUSTED:  # the listening socket stays readable: do not spin
                log.warning("serve-sim: cannot accept a connection (%s); waiting", exc)
                self.state.stopping.wait(0.1)
            raise

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            self.state.connection_refused()
            _refuse_connection(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        self.state.connection_opened()
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.state.connection_opened(-1)
            self._slots.release()


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
        try:
            self._httpd = _SimHTTPServer((host, port), state)
        except OSError as exc:
            raise OSError(f"cannot listen on {host} port {port}: {exc.strerror or exc}") from None
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
    profile: RunProfile | None = None,
    faults: FaultOptions | None = None,
    served_model: str | None = None,
    api_key_env: str | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    read_timeout_s: float = DEFAULT_READ_TIMEOUT_S,
    head_timeout_s: float = DEFAULT_HEAD_TIMEOUT_S,
    max_connections: int | None = None,
) -> SimServerState:
    """The server's state for a loaded profile (``None``: the sim's built-in defaults); the
    command line loads it (``inference/`` reads profiles but does not load them: the profile
    loader validates its sections through inference's registries)."""
    backend = SimBackend() if profile is None else SimBackend.from_profile(profile)
    api_key = None
    if api_key_env is not None:
        api_key = read_api_key(api_key_env, field="--require-key-env")
    return SimServerState(
        backend,
        faults or FaultOptions(),
        served_model=served_model,
        api_key=api_key,
        max_body_bytes=max_body_bytes,
        read_timeout_s=read_timeout_s,
        head_timeout_s=head_timeout_s,
        max_connections=max_connections,
    )
