"""What the project holds its shipped profiles to (tests/paper/test_paper_plan.py and
tests/test_scaling_profiles.py check the shipped ones; tests/test_params.py checks that a user's
own profile in params/ leaves these checks passing)."""

from __future__ import annotations

from deliberation.profiles.profile import load_profile, shipped_profiles


def gpus_needed(profile) -> int:
    """The GPUs a profile's engine occupies (vLLM: tensor x pipeline parallel)."""
    if profile.backend == "vllm":
        return profile.options.tensor_parallel_size * profile.options.pipeline_parallel_size
    return profile.cost.gpu.gpus if profile.cost.gpu else 0


def check_every_shipped_real_profile_prices_its_calls() -> None:
    for name in shipped_profiles():
        profile = load_profile(name)
        if not profile.synthetic:
            assert profile.cost.gpu or profile.cost.price, f"{name}: no cost section"


def check_a_vllm_profile_prices_exactly_the_gpus_its_engine_uses(name: str) -> None:
    profile = load_profile(name)
    assert profile.cost.gpu is not None, f"{name}: no cost.gpu throughput"
    assert profile.cost.gpu.gpus == gpus_needed(profile)
