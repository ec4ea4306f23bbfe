"""Throughput measured on a profile's own engine by ``make check-real``, which the next
``deliberation plan`` / ``make plan`` prices with in place of the profile's stated ``cost.gpu``
figures (the profile file is never rewritten: the measurement is ``build/measured/<profile>.json``,
and ``make clean`` forgets it).

The fit: each answered call's latency as ``prefill / P + completion / C`` (least squares, both
terms non-negative), over the calls of one run, with ``prefill`` the server's prompt-token count
(for a server with a prefix cache, only the part of each prompt the prompt sent before it did not
share, as the plan counts it). Per-call latencies give one request's speed; the calls in flight
on average (the sum of latencies over the wall time spent sending) turn it into the whole
deployment's, so a batching server's figure is its throughput at the lane's concurrency.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from scipy.optimize import nnls

from deliberation.inference.tokens import count_tokens
from deliberation.io import paths
from deliberation.io.atomic import atomic_write_text
from deliberation.profiles.cost import CostModel

_MIN_CALLS = 4  # fewer answered calls than this measure nothing
_MIN_SHARE = 0.01  # a term (prefill, decode) explaining less of the time than this: not measured


@dataclass(frozen=True)
class _MeasuredThroughput:
    """Tokens per second of the whole deployment; None where the fit could not tell (e.g. every
    call had the same share of prompt and completion)."""

    prompt_tokens_per_s: float | None
    completion_tokens_per_s: float | None
    calls: int
    in_flight: float
    measured_on: str  # ISO date
    basis: str = "make check-real"

    def line(self, stated: CostModel) -> str:
        """The measurement beside the profile's stated figures."""
        gpu = stated.gpu

        def shown(value: float | None, says: float | None) -> str:
            got = "not measured" if value is None else f"{value:,.1f}"
            return got + ("" if says is None else f" (profile states {says:,.0f})")

        prompt = shown(self.prompt_tokens_per_s, gpu and gpu.prompt_tokens_per_s)
        completion = shown(self.completion_tokens_per_s, gpu and gpu.completion_tokens_per_s)
        return (
            f"measured throughput ({self.basis}, {self.measured_on}, {self.calls} calls,"
            f" {self.in_flight:.1f} in flight): prompt {prompt} tokens/s, completion"
            f" {completion} tokens/s"
        )


def unshared_in_send_order(texts: Sequence[str]) -> list[float]:
    """Per prompt (in the order sent), the share of its tokens the previous prompt does not
    share: what a server with a prefix cache processes."""
    shares, previous = [], ""
    for text in texts:
        total = count_tokens(text)
        shared = len(os.path.commonprefix([previous, text]))
        shares.append(max(total - count_tokens(text[:shared]), 0) / total if total else 1.0)
        previous = text
    return shares


def fit_throughput(
    prefill: Sequence[float],
    completion: Sequence[float],
    latency_s: Sequence[float],
    sending_s: float,
) -> _MeasuredThroughput | None:
    """The fit of the module docstring; None with fewer than :data:`_MIN_CALLS` calls or no time."""
    if len(latency_s) < _MIN_CALLS or sending_s <= 0 or sum(latency_s) <= 0:
        return None
    design = np.column_stack([np.asarray(prefill, float), np.asarray(completion, float)])
    total = float(sum(latency_s))
    coefficients, _ = nnls(design, np.asarray(latency_s, float))
    in_flight = total / sending_s

    def rate(column: int) -> float | None:
        """Tokens/s of one term; None when it explains under MIN_SHARE of the time."""
        seconds = float(coefficients[column] * design[:, column].sum())
        return in_flight / float(coefficients[column]) if seconds >= _MIN_SHARE * total else None

    return _MeasuredThroughput(
        prompt_tokens_per_s=rate(0),
        completion_tokens_per_s=rate(1),
        calls=len(latency_s),
        in_flight=in_flight,
        measured_on=dt.date.today().isoformat(),
    )


def _measured_path(profile: str) -> Path:
    return paths.build_dir() / "measured" / f"{profile}.json"


def save_measured(profile: str, measured: _MeasuredThroughput) -> Path:
    target = _measured_path(profile)
    target.parent.mkdir(parents=True, exist_ok=True)
    return atomic_write_text(target, json.dumps(asdict(measured), indent=1) + "\n")


def load_measured(profile: str) -> _MeasuredThroughput | None:
    """The last measurement of ``profile``, or None (none made, or unreadable: then the plan
    uses the stated figures, as it would without one)."""
    try:
        return _MeasuredThroughput(**json.loads(_measured_path(profile).read_text()))
    except (OSError, ValueError, TypeError):
        return None


def priced_cost(profile: str, stated: CostModel) -> tuple[CostModel, str | None]:
    """The cost model the plan prices with: ``stated`` with its ``cost.gpu`` throughputs replaced
    by the measured ones (where measured), and the line saying so; ``stated`` and None when
    nothing was measured or the profile states no ``cost.gpu`` (an API priced by tokens)."""
    measured = load_measured(profile)
    if measured is None or stated.gpu is None:
        return stated, None
    update = {
        "prompt_tokens_per_s": measured.prompt_tokens_per_s or stated.gpu.prompt_tokens_per_s,
        "completion_tokens_per_s": (
            measured.completion_tokens_per_s or stated.gpu.completion_tokens_per_s
        ),
        "basis": f"measured by {measured.basis} on {measured.measured_on}",
    }
    priced = stated.model_copy(update={"gpu": stated.gpu.model_copy(update=update)})
    return priced, measured.line(stated) + "; the plan prices with it"
