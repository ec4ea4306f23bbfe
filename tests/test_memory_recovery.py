"""Parameter recovery: plant an effect in the sim, run `deliberation run`, let the statistics
find it (and find nothing where nothing was planted)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from deliberation.memory_runs import run_from_profile
from deliberation.params import load_profile
from deliberation.stats import cluster_bootstrap, difference_statistic, preregistered_tests

pytestmark = pytest.mark.slow
RESAMPLES = 2000


def sim_profile(tmp_path: Path, name: str, **parameters: float):
    path = tmp_path / f"{name}.yaml"
    path.write_text(
        yaml.safe_dump(
            {"name": name, "backend": "sim", "model": "sim-mechanism", "seed": 0,
             "sim": {"parameters": parameters}}
        )
    )  # fmt: skip
    return load_profile(path)


def run(tmp_path, profile, **grid):
    return run_from_profile(
        "crossprofile",
        profile,
        tags=("keep",),
        item_limit=0,
        cache_file=tmp_path / f"{profile.name}.sqlite",
        progress=False,
        **grid,
    ).frame


def support_shared_minus_private(frame):
    stat = difference_statistic(frame, "shared", "private", by="support")
    return cluster_bootstrap(frame, stat, "template", RESAMPLES, seed=1)


@pytest.mark.parametrize(("social_weight", "expect"), [(0.0, "contains 0"), (1.0, "above 0")])
def test_social_proof_weight_is_recovered_under_all_facts(tmp_path, social_weight, expect):
    profile = sim_profile(tmp_path, f"social{social_weight}", social_weight=social_weight)
    frame = run(tmp_path, profile, policies=("all",))
    assert len(frame) == 480
    result = support_shared_minus_private(frame)
    if expect == "contains 0":
        assert result.low <= 0 <= result.high, result
    else:
        assert result.low > 0, result  # shared support is weighed more: the planted sign


@pytest.mark.parametrize(
    ("parameters", "expect"),
    [
        ({}, "above 0"),  # weighs evidence (defaults: evidence weight 1)
        ({"evidence_weight": 0.0, "social_weight": 0.0, "tone_weight": 0.0}, "contains 0"),
    ],
)
def test_h1_interaction_recovered_only_when_the_sim_weighs_evidence(tmp_path, parameters, expect):
    profile = sim_profile(tmp_path, "h1" + "-".join(map(str, parameters.values())), **parameters)
    frame = run(tmp_path, profile, policies=("R1", "B4", "Random", "R1-rel"), budgets=(0.6,))
    tests = preregistered_tests(frame, n_resamples=RESAMPLES, seed=1)
    h1 = tests.primary["H1"]
    if expect == "above 0":
        assert h1.low > 0, h1
    else:
        assert h1.low <= 0 <= h1.high, h1
