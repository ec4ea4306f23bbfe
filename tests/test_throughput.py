"""Measured throughput (make check-real) and the plan pricing with it."""

from __future__ import annotations

import numpy as np
import pytest

from deliberation.paper.manifest import load_manifest
from deliberation.paper.plan import format_plan, plan_calls
from deliberation.paper.stage_examples import smoke_sized
from deliberation.profiles.cost import APIPrice, CostModel, GPUThroughput
from deliberation.profiles.throughput import (
    DECODE_PROBE,
    PREFILL_PROBE,
    fit_throughput,
    load_measured,
    priced_cost,
    probe_requests,
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


PROBES = (np.array([700.0, 20.0]), np.array([1.0, 128.0]))  # prefill probe, decode probe


def _with_probes(prompt, completion, prompt_rate, completion_rate):
    """The calls and the two probes, timed at the planted rates."""
    prompt, completion = np.array([*prompt, *PROBES[0]]), np.array([*completion, *PROBES[1]])
    latency = prompt / prompt_rate + completion / completion_rate
    stages = [*["crossprofile.decision"] * (len(prompt) - 2), PREFILL_PROBE, DECODE_PROBE]
    return prompt, completion, latency, stages


def test_calls_that_cannot_tell_the_rates_apart_measure_nothing_until_the_probes_do() -> None:
    completion = np.random.default_rng(1).integers(10, 100, 12).astype(float)
    prompt = 10 * completion  # every call the same mix: prompt and answer time are one term
    latency = prompt / 100.0 + completion / 37.0
    assert fit_throughput(prompt, completion, latency, float(latency.sum())) is None  # no null
    prompt, completion, latency, stages = _with_probes(prompt, completion, 100.0, 37.0)
    fitted = fit_throughput(prompt, completion, latency, float(latency.sum()), stages=stages)
    assert fitted.prompt_tokens_per_s == pytest.approx(100.0)
    assert fitted.completion_tokens_per_s == pytest.approx(37.0)


def test_a_rate_too_fast_to_fit_is_read_from_its_probe() -> None:
    prompt, completion, _ = planted_calls(100.0, 37.0)
    prompt, completion, latency, stages = _with_probes(prompt, completion, 1e7, 37.0)
    fitted = fit_throughput(prompt, completion, latency, float(latency.sum()), stages=stages)
    # Prefill explains almost none of the time: the prefill probe's prompt over its whole time
    # (a lower bound: its one answer token is in it) instead of no figure.
    assert fitted.prompt_tokens_per_s == pytest.approx(700 / (700 / 1e7 + 1 / 37.0))
    assert fitted.completion_tokens_per_s == pytest.approx(37.0, rel=0.01)


def test_the_probes_have_a_long_prompt_and_a_long_answer() -> None:
    from deliberation.inference.tokens import count_tokens
    from deliberation.profiles.profile import load_profile

    prefill, decode = probe_requests(load_profile("smollm2-135m-llamacpp"))
    assert (prefill.stage, decode.stage) == (PREFILL_PROBE, DECODE_PROBE)
    long_prompt = sum(count_tokens(m.content) for m in prefill.messages)
    assert long_prompt > 400 and prefill.max_tokens <= 4 and decode.max_tokens >= 100
    assert sum(count_tokens(m.content) for m in decode.messages) < long_prompt / 10


def test_a_prefix_shared_with_the_previous_prompt_is_not_prefill() -> None:
    shared = "system: you are a careful reader of long documents. " * 20
    shares = unshared_in_send_order([shared + "question one", shared + "question two", "other"])
    assert shares[0] == 1.0 and shares[1] < 0.1 and shares[2] == 1.0


STATED = CostModel(gpu=GPUThroughput(gpus=1, prompt_tokens_per_s=100, completion_tokens_per_s=37))


def _profile(name: str, cost: CostModel, mode: str = "json_object_schema"):
    from types import SimpleNamespace

    return SimpleNamespace(name=name, cost=cost, options=SimpleNamespace(structured_output=mode))


def test_the_plan_prices_with_the_last_measurement(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("DELIBERATION_BUILD_DIR", str(tmp_path))
    assert priced_cost(_profile("p", STATED)) == (STATED, None)  # nothing measured yet
    prompt, completion, latency = planted_calls(250.0, 50.0)
    save_measured("p", fit_throughput(prompt, completion, latency, float(latency.sum())))
    priced, line = priced_cost(_profile("p", STATED))
    assert priced.gpu.prompt_tokens_per_s == pytest.approx(250.0)
    assert priced.gpu.completion_tokens_per_s == pytest.approx(50.0)
    assert "250.0 (profile states 100)" in line and "50.0 (profile states 37)" in line
    assert priced_cost(_profile("other", STATED)) == (STATED, None)
    # A profile stating no cost at all (a `profile new` one) is priced by the measurement:
    # a llama.cpp server as one CPU machine with a prefix cache, another as a GPU deployment.
    local, _ = priced_cost(_profile("p", CostModel()))
    assert (local.gpu.device, local.gpu.prefix_cache, local.gpu.gpus) == ("CPU", True, 1)
    assert local.gpu.prompt_tokens_per_s == pytest.approx(250.0)
    served, _ = priced_cost(_profile("p", CostModel(), mode="structured_outputs"))
    assert (served.gpu.device, served.gpu.prefix_cache) == ("GPU", False)
    api = CostModel(
        price=APIPrice(prompt_per_million=1, completion_per_million=2, as_of="2026-01-01")
    )
    assert priced_cost(_profile("p", api)) == (api, None)  # an API priced by tokens: unchanged
    (tmp_path / "measured" / "p.json").write_text("{not json")
    assert load_measured("p") is None
    (tmp_path / "measured" / "p.json").write_text(
        '{"prompt_tokens_per_s": null, "completion_tokens_per_s": 3, "calls": 5,'
        ' "in_flight": 1, "measured_on": "2026-01-01"}'
    )
    assert load_measured("p") is None  # an old file with a rate missing prices nothing


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
