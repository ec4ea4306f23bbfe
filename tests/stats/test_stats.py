"""``deliberation.stats`` as the notebooks use it: public names, and recovery of planted effects
on a simulated paper-1 results frame. Details are tested in tests/stats/test_stats_*.py."""

from __future__ import annotations

import numpy as np
import pytest

import deliberation.stats as stats
from deliberation.benchmarks.crossprofile.simulate import (
    population_value,
    simulate_results_frame,
)
from deliberation.benchmarks.crossprofile.variants import OwnershipVariant

POLICIES = ("R1", "B4", "Random", "R1-rel")


def planted(policy: str, support: str, decoy: str, irrelevant: str) -> float:
    """R1 wins with shared decoys and loses with private ones (H1 > 0), matches Random on
    average (H2 = 0), and R1-rel is 10 points better than R1 on average (H3 = 0.10)."""
    swing = 0.2 if decoy == "shared" else -0.2
    return {"R1": 0.5 + swing, "B4": 0.5 - swing, "Random": 0.5, "R1-rel": 0.6}[policy]


def test_public_names_import_from_deliberation_stats():
    for name in [
        "cluster_bootstrap",
        "BootstrapResult",
        "policy_difference",
        "paired_difference",
        "interaction_contrast",
        "holm",
        "preregistered_tests",
        "logistic_accuracy",
        "predicted_accuracy",
        "likelihood_ratio_test",
        "permutation_test",
        "max_statistic_test",
        "max_statistic_by_problem",
        "benjamini_hochberg",
        "cross_fit",
    ]:
        assert callable(getattr(stats, name)), name
    assert set(stats.__all__) <= set(dir(stats))


def test_variant_ids_follow_the_paper_notation():
    assert OwnershipVariant("private", "shared", "private").id == "SP-DS-IP"  # the classic cell
    assert OwnershipVariant("shared", "private", "shared").id == "SS-DP-IS"


def test_simulated_frames_label_variants_with_the_one_crossprofile_label():
    frame = simulate_results_frame(planted, POLICIES, np.random.default_rng(0))
    for row in frame[["support", "decoy", "irrelevant", "variant"]].drop_duplicates().itertuples():
        assert row.variant == OwnershipVariant(row.support, row.decoy, row.irrelevant).id
    assert frame["variant"].nunique() == 8


def test_h1_to_h3_recover_the_planted_effects_in_one_call():
    frame = simulate_results_frame(
        planted, POLICIES, np.random.default_rng(7), budgets=(0.4, 0.6, 0.8)
    )
    tests = stats.preregistered_tests(frame)
    truth = {
        "H1": population_value(stats.interaction_statistic(frame), planted, POLICIES),
        "H2": population_value(
            stats.difference_statistic(frame, "R1", "Random"), planted, POLICIES
        ),
        "H3": population_value(
            stats.difference_statistic(frame, "R1-rel", "R1"), planted, POLICIES
        ),
    }
    assert truth == pytest.approx({"H1": 0.8, "H2": 0.0, "H3": 0.1})
    h1, h2, h3 = (tests.primary[h] for h in ("H1", "H2", "H3"))
    for name, result in tests.primary.items():
        assert result.low <= truth[name] <= result.high, name
        assert result.n_clusters == 60 and result.df == 59
        assert result.paper is not None and result.paper.n_resamples == 10_000
    assert tests.p_holm["H1"] < 0.001 and tests.p_holm["H3"] < 0.05
    assert tests.p_holm["H2"] > 0.05
    assert h1.low > 0 and h3.low > 0 and h2.low < 0 < h2.high
    table = tests.table(scale=100)
    assert table.loc[table.test == "H1", "estimate"].item() == pytest.approx(100 * h1.estimate)
