"""Parameter recovery: plant an effect in the sim, run `deliberation run`, let the statistics
find it (and find nothing where nothing was planted).

A 95% interval misses a true 0 one time in twenty, so a null check on one fixed seed would
fail by chance at some bank edit. Null checks therefore run five independent replications
(profile seeds 0-4: new holders, fact orders and sim draws) and require the interval to contain
0 in at least three (a correct 95% interval fails that about once in a thousand); a planted
effect must exclude 0 in every replication run.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from deliberation.experiments.memory import run_from_profile
from deliberation.experiments.memory.analyses import evidence
from deliberation.profiles.profile import load_profile
from deliberation.stats import cluster_bootstrap, difference_statistic, preregistered_tests

# Parameter recovery runs whole experiments on the sim: the `make experiments` lane, not `make unit`.
pytestmark = pytest.mark.experiments

RESAMPLES = 2000
NULL_SEEDS = range(5)


def sim_profile(tmp_path: Path, name: str, seed: int = 0, **planted: float):
    """The shipped sim profile with ``planted`` parameters changed and its own seed."""
    base = load_profile("sim")
    parameters = {**base.options.parameters, **planted}
    path = tmp_path / f"{name}-{seed}.yaml"
    path.write_text(
        yaml.safe_dump(
            {"name": f"{name}-{seed}", "backend": "sim", "model": base.model, "seed": seed,
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


def support_shared_minus_private(tmp_path, seed, social_weight):
    profile = sim_profile(tmp_path, "social", seed, social_weight=social_weight)
    frame = run(tmp_path, profile, policies=("all",))
    assert len(frame) == 480
    stat = difference_statistic(frame, "shared", "private", by="support")
    return cluster_bootstrap(frame, stat, "template", RESAMPLES, seed=1)


def h1(tmp_path, seed, **parameters):
    profile = sim_profile(tmp_path, "h1", seed, **parameters)
    frame = run(tmp_path, profile, policies=("R1", "B4", "Random", "R1-rel"), budgets=(0.6,))
    return preregistered_tests(frame, n_resamples=RESAMPLES, seed=1).primary["H1"]


def contains_zero(result) -> bool:
    return result.low <= 0 <= result.high


def test_no_social_proof_weight_no_support_ownership_effect_under_all_facts(tmp_path):
    results = [support_shared_minus_private(tmp_path, s, 0.0) for s in NULL_SEEDS]
    assert sum(map(contains_zero, results)) >= 3, results


def test_planted_social_proof_weight_is_found_with_its_sign(tmp_path):
    result = support_shared_minus_private(tmp_path, 0, 1.0)
    assert result.low > 0, result  # shared support weighs more: accuracy higher when shared


def test_h1_interaction_found_when_the_sim_weighs_evidence(tmp_path):
    result = h1(tmp_path, 0)  # the shipped parameters
    assert result.low > 0, result


def test_h1_interaction_absent_when_the_sim_answers_at_random(tmp_path):
    blind = {"evidence_weight": 0.0, "social_weight": 0.0, "tone_weight": 0.0}
    results = [h1(tmp_path, s, **blind) for s in NULL_SEEDS]
    assert sum(map(contains_zero, results)) >= 3, results


def tone_coefficient(tmp_path, seed, tone_weight):
    """Notebook 05's evidence model on the copy policies' rows of a sim with ``tone_weight``
    planted: the ``tone_lead`` coefficient row (estimate, cluster-robust interval)."""
    profile = sim_profile(tmp_path, "tone", seed, tone_weight=tone_weight)
    frame = run(tmp_path, profile, policies=("R1", "B4", "Random"), budgets=(0.6,))
    coefficients, _ = evidence.evidence_model(evidence.copy_policy_rows(frame, (0.6,)))
    reduced = coefficients[coefficients["model"] == "lead + tone"].set_index("term")
    return reduced.loc["tone_lead"]


def test_planted_tone_weight_is_recovered_and_no_tone_weight_finds_none(tmp_path):
    nulls = [tone_coefficient(tmp_path, s, 0.0) for s in NULL_SEEDS]
    assert sum(row["low"] <= 0 <= row["high"] for row in nulls) >= 3, nulls
    planted = tone_coefficient(tmp_path, 0, 0.2)
    assert planted["low"] > 0, planted  # found, with its sign
    # The estimates separate: the planted one lies above the null interval.
    assert planted["coef"] > nulls[0]["high"], (planted, nulls[0])
