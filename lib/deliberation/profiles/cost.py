"""What a profile's model calls cost: the profile's ``cost:`` section and the estimate from
token counts (``deliberation plan``).

Two ways to price tokens, either or both per profile:

- ``cost.gpu``: the engine's throughput on its GPUs (prefill and decode tokens per second under
  batching, for the whole deployment) and how many GPUs it holds; gives wall hours and GPU hours.
- ``cost.price``: the provider's list price per million prompt and completion tokens, with the
  date the price was read (prices change; the plan prints the date).

The section changes no answer, so it is outside the profile's ``params_hash`` and the cache key,
and editing it never reruns a notebook.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class GPUThroughput(_Strict):
    gpus: int = Field(..., gt=0, description="GPUs the deployment holds (all replicas, all nodes)")
    prompt_tokens_per_s: float = Field(
        ..., gt=0, description="prefill throughput, whole deployment"
    )
    completion_tokens_per_s: float = Field(
        ..., gt=0, description="decode throughput under batching"
    )
    server_tokens_per_counter_token: float = Field(
        1.0,
        gt=0,
        description="the server's prompt-token count per token of the project's model-free"
        " counter (measured: `deliberation cache stats`); the throughput is in server tokens",
    )
    prefix_cache: bool = Field(
        False,
        description="the server keeps the previous prompt's KV cache (llama.cpp's server): the"
        " plan times only the part of each prompt the prompt sent before it does not share",
    )
    device: Literal["GPU", "CPU"] = Field(
        "GPU", description="what the throughput runs on: the plan prices GPU or CPU hours"
    )
    basis: str = Field("", description="where the throughput figures come from")


class APIPrice(_Strict):
    currency: str = "USD"
    prompt_per_million: float = Field(..., ge=0)
    completion_per_million: float = Field(..., ge=0)
    cached_prompt_per_million: float | None = Field(
        None, ge=0, description="provider-side prompt-cache hits, when the provider discounts them"
    )
    as_of: dt.date = Field(..., description="the date the price was read")
    source: str = Field("", description="where the price was read")


class CostModel(_Strict):
    gpu: GPUThroughput | None = None
    price: APIPrice | None = None


def amount(value: float) -> str:
    """Hours or money, with enough digits to show a small value."""
    return f"{value:,.2f}" if value >= 1 else f"{value:.4f}"


@dataclass(frozen=True)
class _CostEstimate:
    """Cost of sending ``prompt_tokens`` and ``completion_tokens`` (None where the profile has no
    figure). ``*_ceiling`` prices every completion at its ``max_tokens``."""

    wall_hours: float | None = None
    gpu_hours: float | None = None
    gpu_hours_ceiling: float | None = None
    money: float | None = None
    money_ceiling: float | None = None
    currency: str = ""
    price_date: dt.date | None = None
    device: str = "GPU"  # what gpu_hours are hours of (a llama.cpp profile on a laptop: CPU)

    def lines(self) -> list[str]:
        out = []
        if self.gpu_hours is not None:
            d = self.device
            out.append(
                f"{d} time: {amount(self.gpu_hours)} {d} hours ({amount(self.wall_hours)} h wall);"
                f" at most {amount(self.gpu_hours_ceiling)} {d} hours if every answer ran to"
                " max_tokens"
            )
        if self.money is not None:
            out.append(
                f"price: {amount(self.money)} {self.currency}; at most {amount(self.money_ceiling)}"
                f" {self.currency} if every answer ran to max_tokens (list price of"
                f" {self.price_date.isoformat()})"
            )
        if not out:
            out.append("cost: the profile has no cost section (cost.gpu or cost.price)")
        return out


def estimate(
    model: CostModel,
    prompt_tokens: int,
    completion_tokens: int,
    completion_ceiling: int,
    *,
    unshared_prompt_tokens: int | None = None,
) -> _CostEstimate:
    """GPU hours from throughput (prefill and decode timed separately), money from list prices.
    With ``gpu.prefix_cache``, prefill is timed on ``unshared_prompt_tokens`` (the prompt tokens
    the previously sent prompt does not share) when given; prices always count every token."""
    fields: dict = {}
    if model.gpu is not None:
        gpu = model.gpu
        prefill = prompt_tokens
        if gpu.prefix_cache and unshared_prompt_tokens is not None:
            prefill = unshared_prompt_tokens

        def hours(completion: int) -> float:
            seconds = prefill * gpu.server_tokens_per_counter_token / gpu.prompt_tokens_per_s
            return (seconds + completion / gpu.completion_tokens_per_s) / 3600

        fields |= {
            "wall_hours": hours(completion_tokens),
            "gpu_hours": hours(completion_tokens) * gpu.gpus,
            "gpu_hours_ceiling": hours(completion_ceiling) * gpu.gpus,
            "device": gpu.device,
        }
    if model.price is not None:
        price = model.price

        def money(completion: int) -> float:
            return (
                prompt_tokens * price.prompt_per_million + completion * price.completion_per_million
            ) / 1e6

        fields |= {
            "money": money(completion_tokens),
            "money_ceiling": money(completion_ceiling),
            "currency": price.currency,
            "price_date": price.as_of,
        }
    return _CostEstimate(**fields)


# A plan longer than this is worth a warning before anything runs (a copied profile keeps the
# full grid: days on a CPU).
LONG_RUN_HOURS = 3.0
# Without a cost section the plan cannot time the calls; past this many it says so loudly.
MANY_CALLS = 1_000
# A reference rate to put an untimed plan in proportion: SmolLM2-135M through llama.cpp on two
# CPU cores took 4-6 s a CrossProfile decision (docs/real-model.md).
_REFERENCE_SECONDS_PER_CALL = 5.0


def duration_warning(model: CostModel, cost: _CostEstimate, calls_to_send: int) -> str | None:
    """A warning when the calls to send take more than :data:`LONG_RUN_HOURS` on the profile's
    stated throughput, or are many and the profile states none; None otherwise."""
    shrink = (
        "try one template first (`deliberation run crossprofile --profile ... --limit 1`) or"
        " shrink the profile's experiments: grid"
    )
    if cost.wall_hours is not None:
        if cost.wall_hours <= LONG_RUN_HOURS:
            return None
        basis = f" ({model.gpu.basis})" if model.gpu is not None and model.gpu.basis else ""
        return (
            f"WARNING: {calls_to_send:,} calls take about {amount(cost.wall_hours)} h at the"
            f" throughput the plan prices with{basis}: {shrink}"
        )
    if model.gpu is None and calls_to_send > MANY_CALLS:
        hours = calls_to_send * _REFERENCE_SECONDS_PER_CALL / 3600
        return (
            f"WARNING: {calls_to_send:,} calls to send and no cost.gpu section to time them; at"
            f" {_REFERENCE_SECONDS_PER_CALL:.0f} s a call (a 135M model on two CPU cores) that"
            f" would be {amount(hours)} h: {shrink}, and state the server's throughput in cost.gpu"
        )
    return None
