"""Symbolic equivalence and numeric evaluation of LaTeX answers through math-verify, in a worker.

In full: ``docs/benchmarks.md``, section "Symbolic grading".
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import multiprocessing
import os
import sys
import threading
import time
import types
from collections.abc import Iterator
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from deliberation.benchmarks.problems import expression_cost

logger = logging.getLogger(__name__)

# A safety net far above what any admitted answer costs (the cost screen decides, not the clock).
_TIMEOUT_S = 30.0  # CPU seconds per call
_WALL_TIMEOUT_S = 300.0  # backstop when the worker is starved of CPU (or CPU time is unknown)
_POLL_S = 0.02
_STARTUP_TIMEOUT_S = 120.0  # importing sympy on a loaded machine
_MAX_CHARS = 1000  # longer answers are not compared (no closed form is that long)
_MAX_NUMERIC_CHARS = 200  # a closed-form number is short; prose is not sent to sympy
_PRELOAD = ["math_verify", "sympy", "deliberation.benchmarks.problems.symbolic"]


# Parsed and compared by each new worker before it takes calls (math-verify's first-use set-up).
_WARM_UP = (
    "\\frac{1}{25}",
    "0.04",
    "[0, \\frac{1}{2}]",
    "(0, \\frac{1}{2})",
    "\\{1, 2\\}",
    "x^{2}+1",
)


class SymbolicUndecided(RuntimeError):
    """math-verify could not decide: the grade is a failure with this reason (never wrong)."""


class SymbolicTooCostly(SymbolicUndecided):
    """An answer refused before any call: comparing it would cost too much (see the docstring)."""


class SymbolicTimeout(SymbolicUndecided):
    """A math-verify call passed the safety-net time limit (the worker was killed and replaced)."""


# ---------------------------------------------------------------- worker side


@functools.lru_cache(maxsize=4096)  # gold answers are parsed once per worker
def _parse(latex: str) -> list:
    from math_verify import parse

    if len(latex) > _MAX_CHARS:
        return []
    return parse(f"\\boxed{{{latex}}}", parsing_timeout=None)


def _equivalent(gold_latex: str, predicted_latex: str) -> bool:
    from math_verify import verify

    gold = _parse(gold_latex)
    predicted = _parse(predicted_latex)
    if not gold or not predicted:
        return False
    try:
        return bool(verify(gold, predicted, timeout_seconds=None))
    except Exception:  # math-verify raises on exotic inputs despite raise_on_error=False
        return False


def _numeric_value(latex: str) -> float | None:
    import sympy

    for parsed in _parse(latex):
        if isinstance(parsed, sympy.Basic) and not parsed.free_symbols:
            try:
                value = complex(parsed.evalf())
            except (TypeError, ValueError, OverflowError):
                continue
            if abs(value.imag) < 1e-12 and math.isfinite(value.real):
                return float(value.real)
    return None


_OPERATIONS = {"equivalent": _equivalent, "numeric_value": _numeric_value}


def _serve(connection: Connection) -> None:
    """Worker loop: answer (operation, args) requests until the pipe closes."""
    import math_verify  # noqa: F401  (already imported in the forkserver; cheap here)

    # math-verify warns on every call that its own timeouts are off: the caller enforces them.
    logging.getLogger("math_verify").setLevel(logging.ERROR)
    for latex in _WARM_UP:
        _equivalent(latex, _WARM_UP[0])
        _numeric_value(latex)
    connection.send(("ready", None))
    while True:
        try:
            operation, args = connection.recv()
        except EOFError:
            return
        try:
            connection.send(("ok", _OPERATIONS[operation](*args)))
        except Exception as error:  # reported to the caller, the worker lives on
            connection.send(("error", f"{type(error).__name__}: {error}"))


# ---------------------------------------------------------------- caller side


@contextlib.contextmanager
def _main_module_hidden() -> Iterator[None]:
    """Start a worker without it re-running the caller's ``__main__`` script.

    forkserver (like spawn) imports the parent's main module in the child, so a script without an
    ``if __name__ == "__main__"`` guard would run again inside the worker. The worker needs
    nothing from it, so an empty module stands in while the worker is started.
    """
    main = sys.modules["__main__"]
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        sys.modules["__main__"] = main


class _Worker:
    def __init__(self) -> None:
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(_PRELOAD)
        self.connection, child = context.Pipe()
        self.process = context.Process(target=_serve, args=(child,), daemon=True)
        with _main_module_hidden():
            self.process.start()
        child.close()
        if not self.connection.poll(_STARTUP_TIMEOUT_S):
            self.stop()
            raise SymbolicTimeout(f"math-verify worker did not start in {_STARTUP_TIMEOUT_S} s")
        self.connection.recv()

    def cpu_seconds(self) -> float | None:
        """User + system CPU time of the worker so far (Linux ``/proc``), else None."""
        try:
            stat = Path(f"/proc/{self.process.pid}/stat").read_text()
        except OSError:
            return None
        fields = stat.rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def call(self, operation: str, args: tuple, timeout: float) -> Any:
        global _cpu_used
        started_cpu, started = self.cpu_seconds(), time.monotonic()
        self.connection.send((operation, args))
        try:
            while not self.connection.poll(_POLL_S):
                wall = time.monotonic() - started
                cpu = self.cpu_seconds()
                used = wall if cpu is None or started_cpu is None else cpu - started_cpu
                if used > timeout or wall > _WALL_TIMEOUT_S:
                    raise SymbolicTimeout(
                        f"math-verify {operation} passed the {timeout} s limit "
                        f"({used:.2f} s {'wall' if cpu is None else 'CPU'}, {wall:.2f} s wall)"
                    )
        finally:
            ended_cpu = self.cpu_seconds()
            if ended_cpu is not None and started_cpu is not None:
                _cpu_used += ended_cpu - started_cpu
        status, value = self.connection.recv()
        if status == "error":
            raise RuntimeError(f"math-verify {operation} failed in the worker: {value}")
        return value

    def stop(self) -> None:
        self.process.kill()
        self.process.join(timeout=5)
        self.connection.close()


_lock = threading.Lock()
_worker: _Worker | None = None
_cpu_used = 0.0


def worker_pid() -> int | None:
    """Process id of the running worker (None before the first call or after a kill)."""
    worker = _worker
    return worker.process.pid if worker is not None and worker.process.is_alive() else None


def worker_cpu_seconds() -> float:
    """CPU seconds the workers have spent on calls so far (0 where ``/proc`` is missing)."""
    return _cpu_used


def start() -> None:
    """Start the worker now (otherwise the first comparison starts it, paying the imports)."""
    global _worker
    with _lock:
        if _worker is None:
            _worker = _Worker()


def _call(operation: str, *args: Any) -> Any:
    global _worker
    with _lock:
        for attempt in (1, 2):  # a worker found dead (killed, out of memory) is replaced once
            if _worker is None or not _worker.process.is_alive():
                _worker = _Worker()
            try:
                return _worker.call(operation, args, _TIMEOUT_S)
            except SymbolicTimeout:
                logger.warning("math-verify %s timed out; worker replaced", operation)
                _worker.stop()
                _worker = None
                raise
            except (EOFError, OSError) as error:
                _worker.stop()
                _worker = None
                if attempt == 2:
                    raise SymbolicTimeout(
                        f"math-verify worker died twice during {operation}: {error!r}"
                    ) from None
        raise AssertionError("unreachable")


def _refuse_if_costly(latex: str, allowance: expression_cost.Cost | None = None) -> None:
    reason = expression_cost.too_costly(latex, allowance)
    if reason is not None:
        raise SymbolicTooCostly(
            f"math-verify not run: {latex[:60]!r} is past the cost limit: {reason}"
        )


def equivalent(gold_latex: str, predicted_latex: str) -> bool:
    """True when math-verify finds the two answers equal (value, set, interval, expression).

    Raises :class:`SymbolicTooCostly` for a predicted answer past the cost screen (the gold's own
    cost is always allowed) and :class:`SymbolicTimeout` past the ``_TIMEOUT_S`` safety net.
    """
    if len(gold_latex) > _MAX_CHARS or len(predicted_latex) > _MAX_CHARS:
        return False
    _refuse_if_costly(predicted_latex, expression_cost.cost(gold_latex))
    return bool(_call("equivalent", gold_latex, predicted_latex))


def numeric_value(latex: str) -> float | None:
    """The real value of a closed-form LaTeX number (``\\frac{1}{2}``, ``2\\sqrt{3}``), else None.

    Raises :class:`SymbolicTooCostly` for an expression past the cost screen and
    :class:`SymbolicTimeout` past the ``_TIMEOUT_S`` safety net.
    """
    if len(latex) > _MAX_NUMERIC_CHARS:
        return None
    _refuse_if_costly(latex)
    return _call("numeric_value", latex)
