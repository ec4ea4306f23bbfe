"""The cluster-robust t: statsmodels' numbers, no inference below the floor, copies counted once,
and arms that read the same calls reported as such."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

from deliberation.stats import difference_statistic, mean_of
from deliberation.stats.cluster_t import cluster_t, cluster_t_many
from deliberation.stats.small_samples import MIN_CLUSTERS


def _frame(n_templates: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for t in range(n_templates):
        level = rng.normal(0.5, 0.1)
        for policy, shift in (("A", 0.1), ("B", 0.0)):
            for i in range(int(rng.integers(2, 7))):  # unequal clusters
                rows.append(
                    {
                        "template": f"t{t}",
                        "policy": policy,
                        "correct": int(rng.random() < level + shift),
                        "key": f"{t}-{policy}-{i}",
                    }
                )
    return pd.DataFrame(rows)


def test_the_interval_and_p_are_statsmodels_cluster_robust_ols_with_g_minus_1_df() -> None:
    frame = _frame(8)
    result = cluster_t(frame, difference_statistic(frame, "A", "B"))
    design = pd.get_dummies(frame["policy"]).astype(float)[["A", "B"]]
    groups = pd.factorize(frame["template"])[0]
    fit = sm.OLS(frame["correct"].astype(float), design).fit(
        cov_type="cluster", cov_kwds={"groups": groups}, use_t=True
    )
    test = fit.t_test(np.array([[1.0, -1.0]]))
    low, high = test.conf_int(alpha=0.05)[0]
    assert result.estimate == pytest.approx(float(test.effect[0]))
    assert result.standard_error == pytest.approx(float(test.sd[0, 0]))
    assert result.p_value == pytest.approx(float(test.pvalue))
    assert (result.low, result.high) == pytest.approx((low, high))
    assert result.df == 7 and result.n_clusters == 8 and result.note == ""


def test_below_the_floor_only_the_estimate_and_counts_remain() -> None:
    frame = _frame(MIN_CLUSTERS - 1)
    result = cluster_t(frame, difference_statistic(frame, "A", "B"))
    assert np.isfinite(result.estimate) and result.n_clusters == MIN_CLUSTERS - 1
    assert all(np.isnan(v) for v in (result.low, result.high, result.p_value))
    assert np.isnan(result.standard_error) and np.isnan(result.t_statistic)
    assert f"fewer than {MIN_CLUSTERS}" in result.note
    row = result.as_row(100)
    assert np.isnan(row["low"]) and np.isnan(row["p_value"]) and row["interval"] == result.note


def test_a_call_copied_within_a_cell_counts_once() -> None:
    """Two budgets that kept the same memory are one call: the mean over budgets reads it once."""
    frame = pd.DataFrame(
        {
            "template": ["t1", "t1", "t1", "t2", "t2", "t3", "t3"],
            "budget": [0.4, 0.6, 0.6, 0.4, 0.6, 0.4, 0.6],
            "correct": [1, 1, 0, 0, 0, 1, 1],
            "key": ["k1", "k1", "k2", "k3", "k4", "k5", "k6"],
        }
    )
    result = cluster_t(frame, mean_of("correct"))
    # k1 counts once: 3 right among 6 distinct calls (the 7 rows would say 4 of 7)
    assert result.estimate == pytest.approx(3 / 6)
    assert result.n_rows == 7 and result.n_calls == 6


def test_two_arms_reading_the_same_calls_are_equal_by_construction_not_tested() -> None:
    frame = _frame(6)
    copied = frame[frame["policy"] == "B"].assign(policy="A")  # A keeps every fact B keeps
    same = pd.concat([copied, frame[frame["policy"] == "B"]], ignore_index=True)
    result = cluster_t(same, difference_statistic(same, "A", "B"))
    assert result.estimate == 0 and np.isnan(result.p_value) and np.isnan(result.low)
    assert "same" in result.note and result.shared_calls == result.n_calls
    partly = cluster_t(frame, difference_statistic(frame, "A", "B"))
    assert partly.shared_calls == 0 and partly.note == ""
    # below the floor too: the reason says both, so the 0 is never read as a finding
    few = same[same["template"].isin(["t0", "t1"])]
    result = cluster_t(few, difference_statistic(few, "A", "B"))
    assert result.note.startswith("n = 2 clusters") and "equal by construction" in result.note


def test_clusters_that_agree_exactly_give_no_test() -> None:
    frame = pd.DataFrame(
        {
            "template": [f"t{i}" for i in range(4) for _ in range(2)],
            "policy": ["A", "B"] * 4,
            "correct": [1, 0] * 4,
        }
    )
    result = cluster_t(frame, difference_statistic(frame, "A", "B"))
    assert result.estimate == 1 and np.isnan(result.p_value) and "agree exactly" in result.note


def test_the_papers_bootstrap_is_attached_only_from_its_own_floor() -> None:
    from deliberation.stats.small_samples import PAPER_METHOD_MIN_CLUSTERS

    few, many = _frame(PAPER_METHOD_MIN_CLUSTERS - 1), _frame(PAPER_METHOD_MIN_CLUSTERS)
    for frame, attached in ((few, False), (many, True)):
        stat = {"d": difference_statistic(frame, "A", "B")}
        result = cluster_t_many(frame, stat, n_resamples=200, seed=1)["d"]
        assert (result.paper is not None) is attached
