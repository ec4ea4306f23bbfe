"""Symbolic equivalence and numeric evaluation of LaTeX answers through math-verify.

math-verify guards parsing and comparison with ``signal.alarm`` timeouts, which only work in the
main thread (elsewhere it raises ``ValueError``). So: in the main thread we pass a timeout of
``TIMEOUT_S`` seconds; in any other thread we pass ``None`` (no timeout, as math-verify's docs
advise) and instead refuse inputs longer than ``MAX_CHARS``, the usual cause of runaway sympy
work. Callers that grade from worker threads and need hard time limits should grade in worker
processes. Note the signal timer also cancels any other ``SIGALRM`` timer (e.g. pytest-timeout's
signal method) while it runs.
"""

from __future__ import annotations

import logging
import math
import threading

logger = logging.getLogger(__name__)

TIMEOUT_S = 5
MAX_CHARS = 2000
_warned_thread = False


def _timeout() -> int | None:
    global _warned_thread
    if threading.current_thread() is threading.main_thread():
        return TIMEOUT_S
    if not _warned_thread:
        logger.info("math-verify called off the main thread: running without signal timeouts")
        _warned_thread = True
    return None


def _parse(latex: str) -> list:
    from math_verify import parse

    if len(latex) > MAX_CHARS:
        logger.debug("answer too long for symbolic parsing (%d chars)", len(latex))
        return []
    return parse(f"\\boxed{{{latex}}}", parsing_timeout=_timeout())


def equivalent(gold_latex: str, predicted_latex: str) -> bool:
    """True when math-verify finds the two answers equal (value, set, interval, expression)."""
    from math_verify import verify

    gold = _parse(gold_latex)
    predicted = _parse(predicted_latex)
    if not gold or not predicted:
        return False
    try:
        return bool(verify(gold, predicted, timeout_seconds=_timeout()))
    except Exception:  # math-verify raises on exotic inputs despite raise_on_error=False
        logger.debug("verify failed for %r vs %r", gold_latex, predicted_latex, exc_info=True)
        return False


def numeric_value(latex: str) -> float | None:
    """The real value of a closed-form LaTeX number (``\\frac{1}{2}``, ``2\\sqrt{3}``), else None."""
    import sympy

    for parsed in _parse(latex):
        if isinstance(parsed, sympy.Basic) and not parsed.free_symbols:
            try:
                value = complex(parsed.evalf())
            except (TypeError, ValueError):
                continue
            if abs(value.imag) < 1e-12 and math.isfinite(value.real):
                return float(value.real)
    return None
