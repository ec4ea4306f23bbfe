"""What a plan says a run costs: CPU or GPU hours as the profile states its device, and a
warning before a run that takes hours (a copied profile keeps the full grid)."""

from __future__ import annotations

from deliberation.profiles.cost import (
    LONG_RUN_HOURS,
    MANY_CALLS,
    CostModel,
    GPUThroughput,
    duration_warning,
    estimate,
)
from deliberation.profiles.profile import load_profile


def _cpu(tokens_per_s: float = 100.0) -> CostModel:
    return CostModel(
        gpu=GPUThroughput(
            gpus=1,
            prompt_tokens_per_s=tokens_per_s,
            completion_tokens_per_s=tokens_per_s,
            device="CPU",
            basis="2 idle cores",
        )
    )


def test_a_cpu_profile_is_priced_in_cpu_hours() -> None:
    lines = estimate(_cpu(), 36_000, 0, 0).lines()
    assert lines[0].startswith("CPU time: 0.1000 CPU hours") and "GPU" not in lines[0]
    gpu = CostModel(gpu=GPUThroughput(gpus=2, prompt_tokens_per_s=10, completion_tokens_per_s=1))
    assert "GPU hours" in estimate(gpu, 36_000, 0, 0).lines()[0]


def test_the_shipped_laptop_profile_says_cpu() -> None:
    assert load_profile("smollm2-135m-llamacpp").cost.gpu.device == "CPU"


def test_hours_past_the_limit_warn_naming_the_basis_and_a_smaller_try() -> None:
    model = _cpu()
    # 100 tokens/s: LONG_RUN_HOURS of prompt tokens, plus one hour more.
    long = estimate(model, int((LONG_RUN_HOURS + 1) * 3600 * 100), 0, 0)
    warning = duration_warning(model, long, 9_000)
    assert warning and "about 4.00 h" in warning and "(2 idle cores)" in warning
    assert "--limit 1" in warning and "9,000 calls" in warning
    short = estimate(model, int((LONG_RUN_HOURS - 1) * 3600 * 100), 0, 0)
    assert duration_warning(model, short, 9_000) is None


def test_many_calls_without_a_throughput_warn_that_they_are_untimed() -> None:
    model = CostModel()
    untimed = estimate(model, 10**7, 10**6, 10**6)
    warning = duration_warning(model, untimed, 55_956)
    assert warning and "no cost.gpu section" in warning and "77.72 h" in warning
    assert duration_warning(model, untimed, MANY_CALLS) is None
