"""A loopback server that misbehaves on purpose (imported, not collected).

:func:`misbehaving_server` answers every request with the handle's current ``behaviour``:

* ``trickle``: a 200 with a long declared body, then one byte every ``interval_s``;
* ``huge``: a 200 whose body is ``size`` bytes of JSON padding, streamed in chunks, declared
  (``Content-Length``) or not (chunked);
* ``gzip``: a 200 with ``Content-Encoding: gzip`` and the given compressed ``body``;
* ``json``: a 200 with ``body`` as is;
* ``models``: a 200 with a model list naming model ``m`` (``on_get``: GET requests only).

It counts the requests and the bytes it managed to send (``sent``), so a test can tell that a
client stopped reading early.
"""

from __future__ import annotations

import contextlib
import functools
import gzip
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler

from helpers.json_handler import serving


@dataclass
class Misbehaving:
    base_url: str = ""
    behaviour: str = "json"
    on_get: str | None = None  # the behaviour of GET requests, when it differs
    interval_s: float = 3.0
    size: int = 0
    declared: bool = True
    body: bytes = b"{}"
    encoding: str = "gzip"
    requests: int = 0
    sent: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self, n: int) -> None:
        with self.lock:
            self.sent += n


@functools.lru_cache(maxsize=2)
def gzip_bomb(decoded_bytes: int) -> bytes:
    """A chat completion of ``decoded_bytes``, gzip-compressed (150 MB compress to about 146
    KB): a short answer, then spaces between its JSON tokens (where no check of the answer's
    text looks)."""
    head = (
        b'{"id": "x", "object": "chat.completion", "created": 0, "model": "m", "choices":'
        b' [{"index": 0, "message": {"role": "assistant", "content": "Answer: 1"},'
        b' "finish_reason": "stop"}],'
    )
    tail = b' "usage": {"prompt_tokens": 1, "completion_tokens": 1}}'
    buffer = bytearray(head)
    buffer += b" " * (decoded_bytes - len(head) - len(tail))
    buffer += tail
    return gzip.compress(bytes(buffer), compresslevel=9)


def _handler(state: Misbehaving) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def _send(self, data: bytes) -> None:
            self.wfile.write(data)
            self.wfile.flush()
            state.count(len(data))

        def _answer(self) -> None:
            with state.lock:
                state.requests += 1
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            behaviour = state.on_get if self.command == "GET" and state.on_get else state.behaviour
            # The client may stop reading: that is what the bounds are for.
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                getattr(self, f"_{behaviour}")()

        def _trickle(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "1000000")
            self.end_headers()
            self._send(b"{")
            for _ in range(1000):
                time.sleep(state.interval_s)
                self._send(b" ")

        def _huge(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            if state.declared:
                self.send_header("Content-Length", str(state.size))
            else:
                self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            chunk = b" " * 65536
            left = state.size
            while left > 0:
                piece = chunk[: min(left, len(chunk))]
                left -= len(piece)
                if state.declared:
                    self._send(piece)
                else:
                    self._send(b"%x\r\n%s\r\n" % (len(piece), piece))
            if not state.declared:
                self._send(b"0\r\n\r\n")

        def _gzip(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Encoding", state.encoding)
            self.send_header("Content-Length", str(len(state.body)))
            self.end_headers()
            self._send(state.body)

        def _models(self) -> None:  # a model list naming model "m"
            body = b'{"object": "list", "data": [{"id": "m", "object": "model", "owned_by": "x"}]}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self._send(body)

        def _json(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(state.body)))
            self.end_headers()
            self._send(state.body)

        do_GET = do_POST = _answer

    return Handler


@contextlib.contextmanager
def misbehaving_server(**options: object) -> Iterator[Misbehaving]:
    """The server on 127.0.0.1 (a free port) for the block; ``base_url`` ends in ``/v1``."""
    state = Misbehaving(**options)  # type: ignore[arg-type]
    with serving(_handler(state)) as root:
        state.base_url = f"{root}/v1"
        yield state
