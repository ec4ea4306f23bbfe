"""Measured throughput (make check-real) and the plan pricing with it."""

from __future__ import annotations

import numpy as np
import pytest

from deliberation.paper.manifest import load_manifest
from deliberation.paper.plan import format_plan, plan_calls
from deliberation.paper.stage_examples import smoke_sized
from deliberation.profiles.cost import CostModel, GPUThroughput
from deliberation.profiles.throughput import (
    fit_throughput,
    load_measured,
    priced_cost,
    save_measured,
    unshared_in_send_order,
)


def planted_calls(prompt_rate: float, completion_rate: float, n: int = 12):
    rng = np.random.default_rng(0)
    prompt = rng.integers(50, 2000, n).astype(float)
    completion = rng.integers(1, 300, n).astype(float)
    return prompt, completion, prompt / prompt_rate + completion / completion_rate


def test_the_fit_recovers_planted_rates_and_scales_by_the_calls_in_flight() -> None:
    prompt, completion, latency = planted_calls(100.0, 37.0)
    one = fit_throughput(prompt, completion, latency, sending_s=float(latency.sum()))
    assert one.prompt_tokens_per_s == pytest.approx(100.0)
    assert one.completion_tokens_per_s == pytest.approx(37.0)
    assert one.in_flight == pytest.approx(1.0)
    four = fit_throughput(prompt, completion, latency, sending_s=float(latency.sum()) / 4)
    assert four.prompt_tokens_per_s == pytest.approx(400.0)  # four requests at a time
    assert fit_throughput(prompt[:3], completion[:3], latency[:3], 1.0) is None


def test_a_rate_the_calls_cannot_tell_is_not_measured() -> None:
    prompt, completion, _ = planted_calls(100.0, 37.0)
    latency = completion / 37.0  # prompts cost nothing: no prefill figure
    fitted = fit_throughput(prompt, completion, latency, float(latency.sum()))
    assert fitted.prompt_tokens_per_s is None
    assert fitted.completion_tokens_per_s == pytest.approx(37.0)


def test_a_prefix_shared_with_the_previous_prompt_is_not_prefill() -> None:
    shared = "system: you are a careful reader of long documents. " * 20
    shares = unshared_in_send_order([shared + "question one", shared + "question two", "other"])
    assert shares[0] == 1.0 and shares[1] < 0.1 and shares[2] == 1.0


STATED = CostModel(gpu=GPUThroughput(gpus=1, prompt_tokens_per_s=100, completion_tokens_per_s=37))


def test_the_plan_prices_with_the_last_measurement(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("DELIBERATION_BUILD_DIR", str(tmp_path))
    assert priced_cost("p", STATED) == (STATED, None)  # nothing measured yet
    prompt, completion, latency = planted_calls(250.0, 50.0)
    save_measured("p", fit_throughput(prompt, completion, latency, float(latency.sum())))
    priced, line = priced_cost("p", STATED)
    assert priced.gpu.prompt_tokens_per_s == pytest.approx(250.0)
    assert priced.gpu.completion_tokens_per_s == pytest.approx(50.0)
    assert "250.0 (profile states 100)" in line and "50.0 (profile states 37)" in line
    assert priced_cost("other", STATED) == (STATED, None)
    assert priced_cost("p", CostModel())[1] is None  # an API priced by tokens: unchanged
    (tmp_path / "measured" / "p.json").write_text("{not json")
    assert load_measured("p") is None


def test_make_plan_shows_and_uses_the_measured_throughput(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("DELIBERATION_BUILD_DIR", str(tmp_path / "build"))
    monkeypatch.setenv("DELIBERATION_CACHE_DIR", str(tmp_path / "cache"))
    profile = smoke_sized("smollm2-135m-llamacpp")
    plan = plan_calls(profile, load_manifest()[:1])
    before = format_plan(plan)
    stated = profile.cost.gpu
    prompt, completion, latency = planted_calls(
        stated.prompt_tokens_per_s * 2, stated.completion_tokens_per_s * 2
    )
    save_measured(profile.name, fit_throughput(prompt, completion, latency, latency.sum()))
    after = format_plan(plan)
    assert not any("measured throughput" in line for line in before)
    assert any(
        "measured throughput" in line and "the plan prices with it" in line for line in after
    )
    time_line = next(line for line in after if line.startswith(f"{stated.device} time"))
    assert time_line != next(line for line in before if line.startswith(f"{stated.device} time"))
