"""A profile's own model server: started by the run when its URL does not answer, stopped after.

A profile with a ``server:`` section (backend ``openai``) says how to start the
OpenAI-compatible server its ``openai.base_url`` points at: ``python -m llama_cpp.server``,
``llama-server``, ``vllm serve``, ... (inspect_ai's vLLM provider starts its server the same
way). ``deliberation run ...`` and ``make paper`` wrap their work in :func:`model_server`:

* nothing is started until a request must really be sent (a run answered from the cache needs
  no server); then, if the readiness URL answers (HTTP 200), that server is used and is never
  stopped by us; otherwise the command is started in its own process group, with its output in
  the log file, and polled until it answers (``ready_timeout_s``);
* the one we started is stopped when the block ends: normally, on an error, on Ctrl-C, and on
  SIGTERM (turned into an exit while the block runs); on Linux it also gets SIGTERM from the
  kernel should this process die without cleaning up (``PR_SET_PDEATHSIG``). Stopping is
  SIGTERM to its process group, then SIGKILL after ``stop_timeout_s``.

Before the first request the backend is checked once (``OpenAIBackend.preflight``): one
small request in the profile's structured-output mode and a look at ``/models``.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field

from deliberation.io import http, paths


class _ServedProfile(Protocol):
    """What the server reads of a profile (``params.Profile``, which validates this module's
    :class:`ServerOptions`, so it is described here rather than imported)."""

    name: str
    backend: str
    model: str
    options: Any  # the backend's options; an openai profile's carry base_url
    server: ServerOptions | None


log = logging.getLogger(__name__)

LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
_PR_SET_PDEATHSIG = 1


class ServerOptions(BaseModel):
    """The ``server:`` section of a profile: how to start the server ``openai.base_url`` names.

    ``command`` is the argument list; ``{python}`` (this interpreter), ``{model_file}``,
    ``{host}``, ``{port}`` and ``{model}`` (the profile's model name) are filled in. It changes
    how the server is started; what it serves is named by the profile's ``model`` and
    ``revision`` (hashed into every cache key)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    command: tuple[str, ...] = Field(min_length=1)
    model_file: str | None = Field(
        None, description="file the command loads (relative to the repository); checked first"
    )
    model_file_hint: str = Field(
        "make models", description="what makes model_file present (said when it is missing)"
    )
    port: int | None = Field(
        None, gt=0, lt=65536, description="must be openai.base_url's port (the default)"
    )
    ready_url: str | None = Field(
        None, description="answers HTTP 200 once the model is loaded (default: base_url/models)"
    )
    ready_timeout_s: float = Field(180.0, gt=0, le=86_400)
    stop_timeout_s: float = Field(15.0, gt=0, le=3600)
    log_file: str = Field(
        "build/servers/{profile}.log", description="the server's output ({profile} filled in)"
    )


class ServerStartError(RuntimeError):
    """The profile's server could not be started or did not become ready (names the log)."""


def _resolve(path: str) -> Path:
    candidate = Path(path).expanduser()
    return candidate if candidate.is_absolute() else paths.repo_root() / candidate


# The largest readiness reply read (the default readiness URL is the model list).
READY_REPLY_BYTES = 16 * 2**20


def answers(url: str, timeout_s: float = 2.0) -> bool:
    """Whether ``url`` answers a GET with HTTP 200, whole, within ``timeout_s`` (asked without
    a key, on the one HTTP path: :mod:`deliberation.io.http`)."""
    try:
        reply = http.request(
            "GET", url, deadline_s=timeout_s, max_bytes=READY_REPLY_BYTES,
            deadline_what="the readiness check", size_what="the readiness check's bound",
        )  # fmt: skip
    except Exception:  # refused, timed out, too large, not a URL: not ready
        return False
    return reply.status == 200


def _die_with_parent() -> None:  # runs in the child between fork and exec
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


class ManagedServer:
    """The server of one profile for the duration of a :func:`model_server` block."""

    def __init__(self, profile: _ServedProfile) -> None:
        options = profile.server
        assert options is not None
        self.profile = profile.name
        self.options = options
        base = urlsplit(profile.options.base_url)
        self.base_url = profile.options.base_url.rstrip("/")
        self.host = base.hostname or "127.0.0.1"
        self.port = options.port or base.port or (443 if base.scheme == "https" else 80)
        self.ready_url = (options.ready_url or f"{self.base_url}/models").format(
            host=self.host, port=self.port
        )
        self.model_file = None if options.model_file is None else _resolve(options.model_file)
        self.log_file = _resolve(options.log_file.format(profile=profile.name))
        fill = {
            "python": sys.executable,
            "model_file": str(self.model_file or ""),
            "host": self.host,
            "port": str(self.port),
            "model": profile.model,
        }
        self.argv = [part.format(**fill) for part in options.command]
        self.process: subprocess.Popen[bytes] | None = None
        self.external = False  # a server that already answered (never ours to stop)
        self.started_s: float | None = None

    # -- state ------------------------------------------------------------------------------------
    def running(self) -> bool:
        if self.process is not None:
            return self.process.poll() is None
        return self.external and answers(self.ready_url)

    def describe(self) -> str:
        if self.process is not None:
            return (
                f"server of profile {self.profile} (pid {self.process.pid}) at {self.base_url},"
                f" log {self.log_file}"
            )
        if self.external:
            return f"server already running at {self.base_url} (not started here)"
        return f"server of profile {self.profile} not started"

    # -- start ------------------------------------------------------------------------------------
    def ensure(self) -> None:
        """Make the server answer: use the one already at the URL, else start ours and wait."""
        from deliberation.inference.base import NO_SEND_ENV, sending_forbidden

        if sending_forbidden():
            raise ServerStartError(
                f"profile {self.profile}: {NO_SEND_ENV} is set (a replay sends nothing), so its"
                " server is not started"
            )
        if self.process is not None or self.external:
            if self.process is not None and self.process.poll() is not None:
                raise ServerStartError(self._exited_message("after it was ready"))
            return
        if answers(self.ready_url):
            self.external = True
            log.info("a server already answers at %s: using it (it is not ours to stop)",
                     self.ready_url)  # fmt: skip
            return
        self._start()

    def _start(self) -> None:
        if self.model_file is not None and not self.model_file.is_file():
            raise ServerStartError(
                f"profile {self.profile}: server.model_file {self.model_file} does not exist;"
                f" run `{self.options.model_file_hint}` first"
            )
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        with self.log_file.open("ab") as sink:
            sink.write(
                f"== {time.strftime('%Y-%m-%d %H:%M:%S')} {shlex.join(self.argv)}\n".encode()
            )
            sink.flush()
            on_main = threading.current_thread() is threading.main_thread()
            try:
                self.process = subprocess.Popen(
                    self.argv,
                    stdin=subprocess.DEVNULL,
                    stdout=sink,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # its own process group: Ctrl-C reaches us, not it
                    preexec_fn=_die_with_parent if sys.platform == "linux" and on_main else None,
                )
            except OSError as exc:
                raise ServerStartError(
                    f"profile {self.profile}: cannot run server.command {self.argv[0]!r}: {exc}"
                    " (is the engine installed? `make models` installs llama-cpp-python)"
                ) from None
        started = time.monotonic()
        log.info("started %s; waiting until %s answers", self.describe(), self.ready_url)
        deadline = started + self.options.ready_timeout_s
        while not answers(self.ready_url, timeout_s=2.0):
            if self.process.poll() is not None:
                raise ServerStartError(self._exited_message("before it was ready"))
            if time.monotonic() > deadline:
                self.stop()
                raise ServerStartError(
                    f"profile {self.profile}: the server did not answer {self.ready_url} within"
                    f" server.ready_timeout_s={self.options.ready_timeout_s:g} s (stopped);"
                    f" its log: {self.log_file}{self._log_tail()}"
                )
            time.sleep(0.25)
        self.started_s = time.monotonic() - started
        log.info("server ready in %.1f s at %s", self.started_s, self.base_url)

    def _exited_message(self, when: str) -> str:
        code = None if self.process is None else self.process.returncode
        self.process = None
        return (
            f"profile {self.profile}: the server exited with status {code} {when}"
            f" (command: {shlex.join(self.argv)}); its log: {self.log_file}{self._log_tail()}"
        )

    def _log_tail(self, lines: int = 8) -> str:
        try:
            tail = self.log_file.read_text(errors="replace").splitlines()[-lines:]
        except OSError:
            return ""
        return "".join(f"\n  | {line}" for line in tail)

    # -- stop -------------------------------------------------------------------------------------
    def stop(self) -> None:
        """Stop the server if we started it (its whole process group); never an external one."""
        process, self.process = self.process, None
        if process is None:
            return
        for sig, wait_s in ((signal.SIGTERM, self.options.stop_timeout_s), (signal.SIGKILL, 5.0)):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, sig)
            try:
                process.wait(timeout=wait_s)
                break
            except subprocess.TimeoutExpired:
                continue
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)  # whatever it forked and left behind
        log.info("stopped the server of profile %s (pid %d)", self.profile, process.pid)


# base_url -> the server of the model_server block now running in this process.
_ACTIVE: dict[str, ManagedServer | None] = {}
# (base_url, model, structured mode) already checked by a pre-flight in this process.
_CHECKED: set[tuple[str, str, str]] = set()


def before_send(backend: Any) -> None:
    """Called by the ``openai`` backend before it sends a batch: inside a :func:`model_server`
    block, make sure the server answers (starting it if needed) and pre-flight it once."""
    from deliberation.inference.base import NO_SEND_ENV, SendingForbiddenError, sending_forbidden

    if sending_forbidden():
        raise SendingForbiddenError(
            f"{NO_SEND_ENV} is set (a replay sends nothing): no request goes to"
            f" {backend.base_url} and no server is started for it"
        )
    if backend.base_url not in _ACTIVE:
        return
    server = _ACTIVE[backend.base_url]
    if server is not None:
        server.ensure()
    checked = (backend.base_url, backend.model, backend.structured_output)
    if checked not in _CHECKED and getattr(backend, "preflight_enabled", True):
        for warning in backend.preflight():
            log.warning("%s", warning)
        _CHECKED.add(checked)


def _raise_exit(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


@contextlib.contextmanager
def model_server(
    profile: _ServedProfile, *, start_now: bool = False
) -> Iterator[ManagedServer | None]:
    """The block during which ``profile``'s requests may start its server (see the module
    docstring); yields the :class:`ManagedServer`, or None for a profile without a
    ``server:`` section (an ``openai`` one is still pre-flighted before its first request)."""
    base_url = getattr(profile.options, "base_url", None)
    if base_url is None:  # a backend that talks to no server
        yield None
        return
    base_url = base_url.rstrip("/")
    server = ManagedServer(profile) if profile.server is not None else None
    on_main = threading.current_thread() is threading.main_thread()
    previous_term = signal.signal(signal.SIGTERM, _raise_exit) if on_main else None
    _ACTIVE[base_url] = server
    try:
        if start_now and server is not None:
            server.ensure()
        yield server
    finally:
        _ACTIVE.pop(base_url, None)
        _CHECKED.difference_update({c for c in _CHECKED if c[0] == base_url})
        try:
            if server is not None:
                server.stop()
        finally:
            if previous_term is not None:
                signal.signal(signal.SIGTERM, previous_term)


def missing_for_server(profile: _ServedProfile) -> list[str]:
    """What the server a profile starts needs and this machine lacks: its model file, and the
    Python module of a ``{python} -m MODULE`` command (an engine installed as an extra, such as
    llama-cpp-python's server). Empty for a profile that starts no server (``make models``
    installs both; ``deliberation models ready`` asks this)."""
    import importlib.util

    options = profile.server
    if options is None:
        return []
    missing = []
    if options.model_file is not None and not _resolve(options.model_file).is_file():
        missing.append(f"the model file {options.model_file} (run `{options.model_file_hint}`)")
    command = list(options.command)
    if command[:2] == ["{python}", "-m"] and len(command) > 2:
        module = command[2]
        if importlib.util.find_spec(module.split(".")[0]) is None:
            missing.append(f"the Python module {module} its server runs (run `make models`)")
    return missing
