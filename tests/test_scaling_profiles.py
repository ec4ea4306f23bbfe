"""The scaling-out profiles of the README: valid, consistent, plannable here; the multi-GPU ones
cannot run on this machine and the tests say so."""

from __future__ import annotations

import re

import pytest
from helpers.profile_checks import (
    check_a_vllm_profile_prices_exactly_the_gpus_its_engine_uses,
    gpus_needed,
)

from deliberation.inference.backends import backend_class
from deliberation.io.paths import repo_root
from deliberation.paper.manifest import load_manifest
from deliberation.paper.plan import format_plan, plan_calls
from deliberation.profiles.profile import load_profile, shipped_profiles

# docs/scaling.md (the README links it), one profile per way of running.
SCALING = {
    "one GPU": "qwen2.5-7b-vllm",
    "one node, tensor parallel": "gpt-oss-120b-vllm",
    "several nodes, vLLM on Ray": "gpt-oss-120b-vllm-ray",
    "several nodes, vllm serve replicas": "qwen2.5-7b-vllm-replicas",
    "hosted API": "deepseek-v4.1-flash-api",
}


def test_the_scaling_page_names_every_scaling_profile():
    section = (repo_root() / "docs" / "scaling.md").read_text()
    for name in SCALING.values():
        assert f"`{name}`" in section, name


@pytest.mark.parametrize(
    "name", [p for p in shipped_profiles() if load_profile(p).backend == "vllm"]
)
def test_a_vllm_profile_prices_exactly_the_gpus_its_engine_uses(name):
    check_a_vllm_profile_prices_exactly_the_gpus_its_engine_uses(name)


def test_the_ray_profile_spans_nodes_through_rays_executor():
    profile = load_profile(SCALING["several nodes, vLLM on Ray"])
    kwargs = profile.options.engine_kwargs(profile.model, None, profile.seed)
    assert kwargs["distributed_executor_backend"] == "ray"
    assert kwargs["pipeline_parallel_size"] > 1 and kwargs["tensor_parallel_size"] > 1


def test_the_replicas_profile_keeps_every_replica_busy():
    profile = load_profile(SCALING["several nodes, vllm serve replicas"])
    assert profile.backend == "openai"
    assert profile.options.concurrency >= 16 * profile.cost.gpu.gpus


@pytest.mark.parametrize("way", list(SCALING))
def test_every_scaling_profile_plans_here(way):
    profile = load_profile(SCALING[way])
    plan = plan_calls(profile, load_manifest()[:1])
    assert plan.totals()["to_send"] > 0
    assert re.search(r"GPU hours|list price", "\n".join(format_plan(plan)))


@pytest.mark.parametrize("way", [w for w in SCALING if gpus_needed(load_profile(SCALING[w])) > 1])
def test_multi_gpu_profiles_cannot_run_here(way):
    profile = load_profile(SCALING[way])
    try:
        import torch

        gpus = torch.cuda.device_count()
    except ImportError:
        gpus = 0
    if gpus < gpus_needed(profile):
        pytest.skip(
            f"{profile.name} needs {gpus_needed(profile)} GPUs"
            f"{' on several nodes' if 'nodes' in way else ''}; this machine has {gpus}"
        )
    backend_class(profile.backend).from_profile(profile)  # on a big enough machine: builds
