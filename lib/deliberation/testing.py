"""Starting serve-sim from tests and benchmarks: :func:`running_sim_server` (a subprocess, so
another process may be killed beside it) and :func:`sim_server_in_thread` (in-process, for
fast unit tests). Both yield a :class:`_SimServerHandle` with the URL and the server's counters.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from typing import Any

from deliberation.inference.serve_sim.cli import add_arguments, server_from_args
from deliberation.inference.serve_sim.server import SimServerState
from deliberation.io import http
from deliberation.profiles.profile import load_profile

# serve-sim's counters list every prompt it answered: a long run's are tens of megabytes.
STATS_BYTES = 256 * 2**20
_PORT_LINE = re.compile(r"http://[^\s/]+:(\d+)/v1")


class _SimServerHandle:
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

    def _ask(self, method: str, path: str) -> bytes:
        reply = http.request(
            method, f"{self.root_url}{path}", deadline_s=60, max_bytes=STATS_BYTES,
            deadline_what="serve-sim's counters", size_what="serve-sim's counters",
        )  # fmt: skip
        if reply.status != 200:
            raise RuntimeError(f"serve-sim answered {path} with HTTP {reply.status}")
        return reply.body

    def stats(self) -> dict[str, Any]:
        return json.loads(self._ask("GET", "/stats"))

    def reset(self) -> None:
        self._ask("POST", "/stats/reset")


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
) -> Iterator[_SimServerHandle]:
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
        yield _SimServerHandle(match.group(0), process)
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
def sim_server_in_thread(**options: Any) -> Iterator[_SimServerHandle]:
    """The same server on a background thread of this process (fast unit tests); ``options``
    are spelled as for :func:`running_sim_server`. The handle also carries ``.state``."""
    parser = argparse.ArgumentParser(prog="serve-sim")
    add_arguments(parser, load_profile)
    args = parser.parse_args(["--port", "0", *_cli_options(options)])
    server = server_from_args(args).start()
    try:
        yield _SimServerHandle(server.base_url, state=server.state)
    finally:
        server.stop()
