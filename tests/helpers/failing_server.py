"""A fake OpenAI-compatible server for failure tests (imported, not collected).

:func:`failing_server` runs serve-sim on a thread and a small proxy in front of it on
127.0.0.1 (a free port). The proxy forwards every request to serve-sim unless the handle's
``fail`` predicate says the POST's stage must fail: then it answers with ``status`` and the
JSON error ``message`` itself (or ``raw`` bytes when set). It counts the POSTs it received per
stage (``posts``) and which prompts it forwarded, so a test can check what a rerun sent.
"""

from __future__ import annotations

import contextlib
import json
import threading
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler

from deliberation.inference.base import STAGE_HEADER
from deliberation.testing import sim_server_in_thread
from helpers.json_handler import serving


@dataclass
class FailingServer:
    base_url: str
    upstream: str
    fail: Callable[[str, dict], bool] = lambda stage, body: False
    status: int = 500
    message: str = "injected: the server is broken"
    raw: bytes | None = None  # a body to send instead of the JSON error (status 200)
    posts: Counter = field(default_factory=Counter)
    failed_posts: Counter = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def fail_stages(self, *fragments: str) -> None:
        """Fail every POST whose stage contains one of ``fragments`` (none: fail nothing)."""
        self.fail = lambda stage, body: any(f in stage for f in fragments)

    def reset(self) -> None:
        with self.lock:
            self.posts.clear()
            self.failed_posts.clear()

    @property
    def total_posts(self) -> int:
        return sum(self.posts.values())


def _handler(state: FailingServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def _reply(self, status: int, body: bytes, headers: dict | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        def _forward(self, method: str, body: bytes | None) -> None:
            headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host",)}
            request = urllib.request.Request(
                state.upstream + self.path.removeprefix("/v1"),
                data=body,
                method=method,
                headers=headers,
            )
            try:
                with urllib.request.urlopen(request, timeout=30) as reply:
                    self._reply(reply.status, reply.read())
            except urllib.error.HTTPError as error:
                self._reply(error.code, error.read())

        def do_GET(self) -> None:
            self._forward("GET", None)

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            stage = self.headers.get(STAGE_HEADER, "")
            try:
                payload = json.loads(body)
            except ValueError:
                payload = {}
            failing = state.fail(stage, payload)
            with state.lock:
                state.posts[stage] += 1
                state.failed_posts[stage] += int(failing)
            if not failing:
                self._forward("POST", body)
            elif state.raw is not None:
                self._reply(200, state.raw)
            else:
                error = {"error": {"message": state.message, "type": "server_error"}}
                self._reply(state.status, json.dumps(error).encode())

    return Handler


@contextlib.contextmanager
def failing_server(**options: object) -> Iterator[FailingServer]:
    """The proxy in front of an in-thread serve-sim (``options`` go to serve-sim)."""
    with sim_server_in_thread(**options) as sim:
        state = FailingServer(base_url="", upstream=sim.base_url)
        with serving(_handler(state)) as root:
            state.base_url = f"{root}/v1"
            yield state


def cached_openai_client(url: str, cache_file, **options):
    """(profile, client): an openai-backend profile on ``url`` with ``options`` and a cached
    client on ``cache_file``, as the failed-calls tests drive every experiment."""
    from deliberation.inference.cache import ResponseCache
    from deliberation.inference.client import CachedClient
    from deliberation.inference.openai_api import OpenAIBackend
    from helpers.serve_sim import openai_profile

    profile = openai_profile(url, **options)
    client = CachedClient(
        OpenAIBackend.from_profile(profile),
        ResponseCache(cache_file),
        profile=profile.name,
        progress=False,
    )
    return profile, client
