"""Permutation tests: p-value definition, exact small cases, calibration under a planted null,
power under a planted effect, max-statistic family-wise control and BH across problems."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from deliberation.stats import (
    benjamini_hochberg,
    max_statistic_by_problem,
    max_statistic_test,
    permutation_p_value,
    permutation_test,
)


def test_p_value_is_one_plus_extreme_over_one_plus_n():
    null = np.array([-3.0, -1.0, 1.0, 2.0])
    assert permutation_p_value(null, 2.0, "two-sided") == pytest.approx((1 + 2) / 5)  # |-3|, 2
    assert permutation_p_value(null, 2.0, "greater") == pytest.approx((1 + 1) / 5)
    assert permutation_p_value(null, -1.0, "less") == pytest.approx((1 + 2) / 5)
    assert permutation_p_value(null, 10.0) == pytest.approx(1 / 5)  # never zero
    with pytest.raises(ValueError, match="alternative"):
        permutation_p_value(null, 1.0, "both")  # type: ignore[arg-type]


def test_statistic_is_the_average_within_block_difference():
    frame = pd.DataFrame(
        {
            "problem": ["p1"] * 4 + ["p2"] * 4,
            "with_message": [1, 1, 0, 0, 1, 1, 1, 0],
            "correct": [1, 0, 0, 0, 1, 1, 1, 0],
        }
    )
    result = permutation_test(frame, n_permutations=50)
    assert result.observed == pytest.approx((0.5 + 1.0) / 2)
    assert result.n_blocks == 2 and result.null_distribution.shape == (50,)


def test_monte_carlo_p_matches_the_exact_permutation_distribution():
    # y = 1 1 0 0 with the first two treated: of the 6 relabelings, T = +1 once and -1 once
    frame = pd.DataFrame({"with_message": [1, 1, 0, 0], "correct": [1, 1, 0, 0]})
    two_sided = permutation_test(frame, block=None, n_permutations=6000, seed=1)
    greater = permutation_test(
        frame, block=None, n_permutations=6000, seed=1, alternative="greater"
    )
    assert two_sided.observed == 1.0
    assert two_sided.p_value == pytest.approx(2 / 6, abs=0.02)
    assert greater.p_value == pytest.approx(1 / 6, abs=0.02)
    assert set(np.unique(two_sided.null_distribution)) == {-1.0, 0.0, 1.0}


def replay_blocks(effect: float, rng: np.random.Generator, binary: bool = True) -> pd.DataFrame:
    """Six problems with very different base rates; the message is shown in more replays of the
    easy problems, so ignoring blocks would confound difficulty with the message."""
    rows = []
    for b, base in enumerate([0.1, 0.3, 0.5, 0.7, 0.85, 0.9]):
        n_shown = 4 + 2 * b
        shown = np.r_[np.ones(n_shown), np.zeros(20 - n_shown)].astype(int)
        if binary:
            outcome = (rng.random(20) < np.clip(base + effect * shown, 0, 1)).astype(int)
        else:
            outcome = rng.normal(base + effect * shown, 0.3)
        rows.append(pd.DataFrame({"problem": f"p{b}", "with_message": shown, "correct": outcome}))
    return pd.concat(rows, ignore_index=True)


def test_p_values_are_uniform_under_a_planted_null():
    rng = np.random.default_rng(11)
    p = np.array(
        [
            permutation_test(
                replay_blocks(0.0, rng, binary=False), n_permutations=499, seed=i
            ).p_value
            for i in range(300)
        ]
    )
    assert sps.kstest(p, "uniform").pvalue > 0.01
    assert 0.02 <= np.mean(p <= 0.05) <= 0.09
    # binary outcomes: discrete, so conservative, but never anti-conservative
    binary = np.array(
        [
            permutation_test(replay_blocks(0.0, rng), n_permutations=499, seed=i).p_value
            for i in range(300)
        ]
    )
    assert np.mean(binary <= 0.05) <= 0.08
    assert 0.4 <= binary.mean() <= 0.65


def test_ignoring_the_blocks_would_be_fooled_by_difficulty():
    """Guard that the null simulation is hard: a pooled test rejects often, the blocked one not."""
    rng = np.random.default_rng(12)
    blocked, pooled = [], []
    for i in range(100):
        frame = replay_blocks(0.0, rng)
        blocked.append(permutation_test(frame, n_permutations=199, seed=i).p_value)
        pooled.append(permutation_test(frame, block=None, n_permutations=199, seed=i).p_value)
    assert np.mean(np.array(pooled) <= 0.05) > 0.5
    assert np.mean(np.array(blocked) <= 0.05) < 0.12


def test_p_values_are_small_under_a_planted_effect():
    rng = np.random.default_rng(13)
    p = [
        permutation_test(replay_blocks(0.35, rng), n_permutations=999, seed=i).p_value
        for i in range(20)
    ]
    assert np.median(p) < 0.01
    assert np.mean(np.array(p) <= 0.05) >= 0.9


def one_problem(effects: dict[str, float], rng: np.random.Generator, n: int = 16) -> pd.DataFrame:
    """Replays of one problem: ``n`` per arm, reference 'full' at 0.5 success, arms shifted."""
    arms = {"full": 0.0, **effects}
    frames = [
        pd.DataFrame({"arm": name, "correct": (rng.random(n) < 0.5 + shift).astype(int)})
        for name, shift in arms.items()
    ]
    return pd.concat(frames, ignore_index=True)


def test_max_statistic_effects_and_adjusted_p_at_least_raw():
    frame = pd.DataFrame(
        {"arm": ["full"] * 4 + ["m1"] * 4 + ["m2"] * 4, "correct": [1, 1, 1, 0] + [0] * 4 + [1] * 4}
    )
    result = max_statistic_test(frame, reference="full", n_permutations=2000, seed=0)
    assert result.arms["arm"].tolist() == ["m1", "m2"]
    assert result.arms["effect"].tolist() == pytest.approx([-0.75, 0.25])
    assert (result.arms["p_adjusted"] >= result.arms["p_raw"]).all()
    assert result.p_value == result.arms["p_adjusted"].min()


def test_max_statistic_with_one_arm_equals_its_raw_p():
    frame = one_problem({"m1": 0.2}, np.random.default_rng(0))
    result = max_statistic_test(frame, reference="full", n_permutations=999, seed=3)
    assert result.arms["p_adjusted"].iloc[0] == pytest.approx(result.arms["p_raw"].iloc[0])


def test_max_statistic_controls_family_wise_error_where_raw_p_does_not():
    rng = np.random.default_rng(21)
    any_raw, any_adjusted = 0, 0
    for i in range(200):
        frame = one_problem({f"m{j}": 0.0 for j in range(5)}, rng)
        result = max_statistic_test(frame, reference="full", n_permutations=199, seed=i)
        any_raw += (result.arms["p_raw"] <= 0.05).any()
        any_adjusted += result.p_value <= 0.05
    assert any_adjusted / 200 <= 0.09
    assert any_raw / 200 > 0.12  # five looks without adjustment reject too often


def test_max_statistic_finds_the_planted_message_only():
    frame = one_problem({"m1": 0.0, "m2": 0.45, "m3": 0.0}, np.random.default_rng(5), n=30)
    result = max_statistic_test(frame, reference="full", n_permutations=1999, seed=1)
    by_arm = result.arms.set_index("arm")
    assert by_arm.loc["m2", "p_adjusted"] < 0.01
    assert by_arm.loc["m1", "p_adjusted"] > 0.05 and by_arm.loc["m3", "p_adjusted"] > 0.05


def test_by_problem_reports_bh_q_values_and_per_problem_seeds():
    rng = np.random.default_rng(8)
    problems = {
        name: one_problem({"m1": shift, "m2": 0.0}, rng, n=40).assign(problem=name)
        for name, shift in [("a", 0.0), ("b", 0.45), ("c", 0.0), ("d", -0.45)]
    }
    frame = pd.concat(problems.values(), ignore_index=True)
    tests = max_statistic_by_problem(frame, reference="full", n_permutations=999, seed=4)
    table = tests.problems.set_index("problem")
    np.testing.assert_allclose(table["q_value"], benjamini_hochberg(table["p_value"].to_numpy()))
    assert table.loc["b", "q_value"] < 0.05 and table.loc["d", "q_value"] < 0.05
    assert table.loc["b", "top_arm"] == "m1" and table.loc["b", "top_effect"] > 0
    assert set(tests.arms["problem"]) == set("abcd") and len(tests.arms) == 8
    assert table.loc["a", "q_value"] > 0.05 and table.loc["c", "q_value"] > 0.05
    fewer = max_statistic_by_problem(
        frame[frame.problem != "a"], reference="full", n_permutations=999, seed=4
    )
    # a problem's p-value does not depend on which other problems are tested
    assert fewer.problems.set_index("problem").loc["b", "p_value"] == table.loc["b", "p_value"]


def test_clear_errors_for_bad_blocks_labels_and_reference():
    frame = pd.DataFrame(
        {"problem": ["p1", "p1", "p2"], "with_message": [1, 0, 1], "correct": [1, 0, 1]}
    )
    with pytest.raises(ValueError, match="'p2' lacks"):
        permutation_test(frame, n_permutations=10)
    with pytest.raises(ValueError, match="boolean or 0/1"):
        permutation_test(frame.assign(with_message=[2, 0, 1]), n_permutations=10)
    with pytest.raises(ValueError, match="reference arm"):
        max_statistic_test(pd.DataFrame({"arm": ["a"], "correct": [1]}), reference="full")
    with pytest.raises(KeyError, match="'arm'"):
        max_statistic_test(frame, reference="full")
