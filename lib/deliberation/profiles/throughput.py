"""Throughput measured on a profile's own engine by ``make check-real``, which the next
``deliberation plan`` / ``make plan`` prices with in place of the profile's stated ``cost.gpu``
figures (or in place of a missing ``cost:`` section) (the profile file is never rewritten: the measurement is ``build/measured/<profile>.json``,
and ``make clean`` forgets it).

The fit: each answered call's latency as ``prefill / P + completion / C`` (least squares, both
terms non-negative), over the calls of one run, with ``prefill`` the server's prompt-token count
(for a server with a prefix cache, only the part of each prompt the prompt sent before it did not
share, as the plan counts it). Per-call latencies give one request's speed; the calls in flight
on average (the sum of latencies over the wall time spent sending) turn it into the whole
deployment's, so a batching server's figure is its throughput at the lane's concurrency.
Both rates are always measured: two probe calls at the lane's end (:func:`probe_requests`: a
long prompt with a one-word answer, a short prompt with a long answer) give the fit what it
needs, and a rate it still cannot tell is read from its probe. A profile without a ``cost:``
section is priced by the measurement alone (:func:`priced_cost`).
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.optimize import nnls

from deliberation.inference.generation import StageSettings, stage_request
from deliberation.inference.tokens import count_tokens
from deliberation.io import paths
from deliberation.io.atomic import atomic_write_text
from deliberation.profiles.cost import CostModel, GPUThroughput

if TYPE_CHECKING:
    from deliberation.inference.base import ChatRequest

MIN_CALLS = 4  # fewer answered calls than this measure nothing
MIN_SHARE = 0.01  # a term (prefill, decode) explaining less of the time than this: not fitted

# Two calls the lane sends at its end so that both rates are always measured: one long prompt
# with a one-word answer (prefill), one short prompt with a long answer (decode). The fit alone
# cannot tell the rates apart when every call has about the same mix of prompt and answer.
PREFILL_PROBE = "throughput.prefill"
DECODE_PROBE = "throughput.decode"
PREFILL_FACTS = 30  # numbered facts in the prefill probe (~430 counter tokens)
DECODE_TOKENS = 128  # the decode probe's max_tokens


@dataclass(frozen=True)
class MeasuredThroughput:
    """Tokens per second of the whole deployment, both measured (a measurement that cannot
    give both is not made: :func:`fit_throughput` returns None)."""

    prompt_tokens_per_s: float
    completion_tokens_per_s: float
    calls: int
    in_flight: float
    measured_on: str  # ISO date
    basis: str = "make check-real"
    # The server's prompt tokens per token of the project's counter, on the same calls: the
    # plan counts prompts with the counter, the rates are in the server's tokens.
    server_tokens_per_counter_token: float = 1.0

    def line(self, stated: CostModel) -> str:
        """The measurement beside the profile's stated figures."""
        gpu = stated.gpu

        def shown(value: float, says: float | None) -> str:
            return f"{value:,.1f}" + ("" if says is None else f" (profile states {says:,.0f})")

        prompt = shown(self.prompt_tokens_per_s, gpu and gpu.prompt_tokens_per_s)
        completion = shown(self.completion_tokens_per_s, gpu and gpu.completion_tokens_per_s)
        return (
            f"measured throughput ({self.basis}, {self.measured_on}, {self.calls} calls,"
            f" {self.in_flight:.1f} in flight): prompt {prompt} tokens/s, completion"
            f" {completion} tokens/s; {self.server_tokens_per_counter_token:.2f} server tokens"
            " per counter token"
        )


def probe_requests(profile: Any) -> list[ChatRequest]:
    """The prefill and the decode probe under ``profile``'s sampling (see :data:`PREFILL_PROBE`)."""
    facts = " ".join(
        f"Fact {i}: crate {i * 7919 % 1000} is stored on shelf {i % 13} of hall {i % 7}."
        for i in range(1, PREFILL_FACTS + 1)
    )
    prefill = StageSettings(PREFILL_PROBE, max_tokens=2)
    decode = StageSettings(DECODE_PROBE, max_tokens=DECODE_TOKENS)
    return [
        stage_request(profile, prefill, f"{facts}\nReply with the single word: ok."),
        # A story runs to max_tokens even on a 135M model (which stops counting at ten).
        stage_request(
            profile,
            decode,
            "Write a long story about a dog named Max who travels around the world. Tell every"
            " part of the journey in detail.",
        ),
    ]


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
    stages: Sequence[str] | None = None,
) -> MeasuredThroughput | None:
    """The fit of the module docstring. A rate the fit cannot tell (its term explains under
    :data:`MIN_SHARE` of the time) is read from its probe instead (``stages`` names each
    call's stage): the prefill probe's prompt over its time, the decode probe's answer over its
    time less its prompt's. None with fewer than :data:`MIN_CALLS` calls, no time, or a rate
    neither the fit nor a probe gives."""
    if len(latency_s) < MIN_CALLS or sending_s <= 0 or sum(latency_s) <= 0:
        return None
    design = np.column_stack([np.asarray(prefill, float), np.asarray(completion, float)])
    latency = np.asarray(latency_s, float)
    total = float(latency.sum())
    coefficients, _ = nnls(design, latency)
    in_flight = total / sending_s
    # Seconds per token of each term for one request; None where the fit cannot tell.
    per_token: list[float | None] = [
        float(coefficients[c])
        if coefficients[c] > 0 and coefficients[c] * design[:, c].sum() >= MIN_SHARE * total
        else None
        for c in (0, 1)
    ]
    probe = np.asarray(stages if stages is not None else [""] * len(latency), dtype=object)
    if per_token[0] is None:
        rows = probe == PREFILL_PROBE
        if rows.any() and design[rows, 0].sum() > 0:
            per_token[0] = float(latency[rows].sum() / design[rows, 0].sum())
    if per_token[1] is None and per_token[0] is not None:
        rows = probe == DECODE_PROBE
        decoding = latency[rows].sum() - per_token[0] * design[rows, 0].sum()
        if rows.any() and design[rows, 1].sum() > 0 and decoding > 0:
            per_token[1] = float(decoding / design[rows, 1].sum())
    if per_token[0] is None or per_token[1] is None:
        return None
    return MeasuredThroughput(
        prompt_tokens_per_s=in_flight / per_token[0],
        completion_tokens_per_s=in_flight / per_token[1],
        calls=len(latency),
        in_flight=in_flight,
        measured_on=dt.date.today().isoformat(),
    )


def measured_path(profile: str) -> Path:
    return paths.build_dir() / "measured" / f"{profile}.json"


def save_measured(profile: str, measured: MeasuredThroughput) -> Path:
    target = measured_path(profile)
    target.parent.mkdir(parents=True, exist_ok=True)
    return atomic_write_text(target, json.dumps(asdict(measured), indent=1) + "\n")


def load_measured(profile: str) -> MeasuredThroughput | None:
    """The last measurement of ``profile``, or None (none made, unreadable, or without both
    rates: then the plan uses the stated figures, as it would without one)."""
    try:
        measured = MeasuredThroughput(**json.loads(measured_path(profile).read_text()))
    except (OSError, ValueError, TypeError):
        return None
    rates = (measured.prompt_tokens_per_s, measured.completion_tokens_per_s)
    if not all(isinstance(r, int | float) and r > 0 for r in rates):
        return None
    return measured


def priced_cost(profile: Any, stated: CostModel | None = None) -> tuple[CostModel, str | None]:
    """The cost model the plan prices ``profile`` with, and the line saying so (None when
    nothing was measured): its ``cost.gpu`` throughputs replaced by the last measurement; a
    profile that states no ``cost:`` at all priced by the measurement alone (one deployment,
    on the CPU for a llama.cpp server); an API priced by tokens (``cost.price``) unchanged."""
    stated = profile.cost if stated is None else stated
    measured = load_measured(profile.name)
    if measured is None or (stated.gpu is None and stated.price is not None):
        return stated, None
    rates = {
        "prompt_tokens_per_s": measured.prompt_tokens_per_s,
        "completion_tokens_per_s": measured.completion_tokens_per_s,
        "basis": f"measured by {measured.basis} on {measured.measured_on}",
        "server_tokens_per_counter_token": measured.server_tokens_per_counter_token,
    }
    if stated.gpu is not None:
        gpu = stated.gpu.model_copy(update=rates)
    else:
        local = _llama_cpp(profile)
        gpu = GPUThroughput(gpus=1, device="CPU" if local else "GPU", prefix_cache=local, **rates)
    return stated.model_copy(update={"gpu": gpu}), measured.line(
        stated
    ) + "; the plan prices with it"


def _llama_cpp(profile: Any) -> bool:
    """A llama.cpp server (its structured-output dialect says so): one CPU machine that keeps
    the previous prompt's KV cache."""
    mode = getattr(getattr(profile, "options", None), "structured_output", None)
    return mode in ("json_object_schema", "grammar")


def keeps_prefix_cache(profile: Any) -> bool:
    """Whether ``profile``'s server reuses the previous prompt's KV cache: as its ``cost.gpu``
    says, or (stating none) when it is a llama.cpp server."""
    gpu = profile.cost.gpu
    return gpu.prefix_cache if gpu is not None else _llama_cpp(profile)
