"""Cluster bootstrap: tabulation, estimates worked out by hand, agreement with scipy, p-values."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from deliberation.stats import (
    BootstrapResult,
    bootstrap_p_value,
    cluster_bootstrap,
    cluster_bootstrap_many,
    difference_statistic,
    linear_contrast,
    mean_of,
    percentile_interval,
    resample_counts,
    results_frame,
    tabulate_clusters,
)


def small_frame() -> pd.DataFrame:
    """Three templates; R1 rows 3/1/1 and B4 rows 1/2/2 (sums: A 2|0, B 1|1, C 0|0)."""
    rows = [
        ("A", "R1", 1),
        ("A", "R1", 1),
        ("A", "R1", 0),
        ("A", "B4", 0),
        ("B", "R1", 1),
        ("B", "B4", 1),
        ("B", "B4", 0),
        ("C", "R1", 0),
        ("C", "B4", 0),
        ("C", "B4", 0),
    ]
    return pd.DataFrame(rows, columns=["template", "policy", "correct"])


def clustered_frame(n_clusters: int, seed: int, sizes: np.ndarray | None = None) -> pd.DataFrame:
    """0/1 outcomes whose rate varies strongly between clusters (so clustering matters)."""
    rng = np.random.default_rng(seed)
    sizes = np.full(n_clusters, 6) if sizes is None else sizes
    rates = rng.beta(2, 2, size=n_clusters)
    template = np.repeat(np.arange(n_clusters), sizes)
    correct = (rng.random(template.size) < rates[template]).astype(int)
    return pd.DataFrame({"template": template, "correct": correct})


def test_tabulation_gives_per_cluster_sums_and_counts_in_cell_order():
    stat = linear_contrast({"R1": 1, "B4": -1}, by="policy")
    table = tabulate_clusters(small_frame(), stat)
    assert table.clusters.tolist() == ["A", "B", "C"]
    np.testing.assert_array_equal(table.sums, [[2, 0], [1, 1], [0, 0]])
    np.testing.assert_array_equal(table.counts, [[3, 1], [1, 2], [1, 2]])


def test_rows_weighting_pools_rows_and_clusters_weighting_counts_each_cluster_once():
    rows = cluster_bootstrap(small_frame(), difference_statistic(small_frame(), "R1", "B4"))
    by_cluster = cluster_bootstrap(
        small_frame(), difference_statistic(small_frame(), "R1", "B4", weighting="clusters")
    )
    assert rows.estimate == pytest.approx(3 / 5 - 1 / 5)  # pooled: R1 3/5, B4 1/5
    # per-cluster means: R1 (2/3, 1, 0) -> 5/9; B4 (0, 1/2, 0) -> 1/6
    assert by_cluster.estimate == pytest.approx(5 / 9 - 1 / 6)
    assert rows.n_clusters == by_cluster.n_clusters == 3


def test_rows_outside_the_statistic_cells_are_ignored():
    frame = pd.concat(
        [small_frame(), pd.DataFrame({"template": ["D"], "policy": ["Random"], "correct": [1]})]
    )
    result = cluster_bootstrap(frame, mean_of("correct", {"policy": "R1"}), n_resamples=200)
    assert result.estimate == pytest.approx(3 / 5)
    assert result.n_clusters == 3  # template D holds no R1 row and is not resampled


def test_resample_counts_are_bootstrap_multiplicities():
    counts = resample_counts(7, 5000, np.random.default_rng(0))
    assert counts.shape == (5000, 7)
    assert (counts.sum(axis=1) == 7).all()  # every resample draws n_clusters clusters
    assert counts.mean() == pytest.approx(1.0, abs=0.02)  # each cluster drawn once on average
    # multiplicity of one cluster is Binomial(7, 1/7): P(0) = (6/7)^7
    assert (counts[:, 0] == 0).mean() == pytest.approx((6 / 7) ** 7, abs=0.02)


def test_same_seed_same_result_and_row_order_does_not_matter():
    frame = clustered_frame(30, seed=1)
    stat = mean_of("correct")
    first = cluster_bootstrap(frame, stat, n_resamples=500, seed=3)
    shuffled = frame.sample(frac=1.0, random_state=5)
    again = cluster_bootstrap(shuffled, stat, n_resamples=500, seed=3)
    other = cluster_bootstrap(frame, stat, n_resamples=500, seed=4)
    np.testing.assert_array_equal(first.distribution, again.distribution)
    assert first == again
    assert not np.array_equal(first.distribution, other.distribution)


def test_duplicating_rows_within_clusters_does_not_narrow_the_interval():
    """Resampling is by cluster: copying every row five times changes nothing."""
    frame = clustered_frame(25, seed=2)
    stat = mean_of("correct")
    base = cluster_bootstrap(frame, stat, n_resamples=1000, seed=0)
    copied = cluster_bootstrap(pd.concat([frame] * 5), stat, n_resamples=1000, seed=0)
    assert copied.low == pytest.approx(base.low)
    assert copied.high == pytest.approx(base.high)
    np.testing.assert_allclose(copied.distribution, base.distribution)


def test_many_statistics_together_equal_each_computed_alone():
    frame = small_frame()
    stats = {
        "diff": difference_statistic(frame, "R1", "B4"),
        "r1": mean_of("correct", {"policy": "R1"}),
    }
    together = cluster_bootstrap_many(frame, stats, n_resamples=300, seed=9)
    for name, stat in stats.items():
        alone = cluster_bootstrap(frame, stat, n_resamples=300, seed=9)
        np.testing.assert_array_equal(together[name].distribution, alone.distribution)


def test_interval_for_a_mean_agrees_with_scipy_percentile_bootstrap_on_cluster_means():
    frame = clustered_frame(40, seed=7)  # equal cluster sizes: pooled mean = mean of cluster means
    ours = cluster_bootstrap(frame, mean_of("correct"), n_resamples=10_000, seed=0)
    cluster_means = frame.groupby("template")["correct"].mean().to_numpy()
    theirs = sps.bootstrap(
        (cluster_means,),
        np.mean,
        method="percentile",
        n_resamples=10_000,
        rng=np.random.default_rng(1),
    )
    # Monte Carlo SE of a 2.5% quantile from 10,000 resamples is ~0.03 bootstrap SE; allow 0.15.
    tolerance = 0.15 * np.std(ours.distribution, ddof=1)
    assert ours.estimate == pytest.approx(cluster_means.mean())
    assert ours.low == pytest.approx(theirs.confidence_interval.low, abs=tolerance)
    assert ours.high == pytest.approx(theirs.confidence_interval.high, abs=tolerance)
    assert np.std(ours.distribution, ddof=1) == pytest.approx(theirs.standard_error, rel=0.05)


def test_ratio_mean_with_unequal_clusters_agrees_with_scipy_paired_bootstrap():
    sizes = np.random.default_rng(3).integers(1, 12, size=35)
    frame = clustered_frame(35, seed=8, sizes=sizes)
    ours = cluster_bootstrap(frame, mean_of("correct"), n_resamples=10_000, seed=0)
    grouped = frame.groupby("template")["correct"]
    sums, counts = grouped.sum().to_numpy(float), grouped.size().to_numpy(float)

    def pooled_mean(s, c, axis=-1):
        return s.sum(axis=axis) / c.sum(axis=axis)

    theirs = sps.bootstrap(
        (sums, counts),
        pooled_mean,
        paired=True,
        vectorized=True,
        method="percentile",
        n_resamples=10_000,
        rng=np.random.default_rng(2),
    )
    tolerance = 0.15 * np.std(ours.distribution, ddof=1)
    assert ours.estimate == pytest.approx(frame["correct"].mean())
    assert ours.low == pytest.approx(theirs.confidence_interval.low, abs=tolerance)
    assert ours.high == pytest.approx(theirs.confidence_interval.high, abs=tolerance)


def test_p_value_is_twice_the_smaller_tail_with_plus_one_correction():
    # R = 4: one value <= 0, three >= 0 -> tails 2/5 and 4/5 -> p = 4/5
    assert bootstrap_p_value(np.array([-1.0, 1.0, 2.0, 3.0])) == pytest.approx(0.8)
    # all positive: lower tail (1 + 0) / 5 -> p = 2/5, never 0
    assert bootstrap_p_value(np.array([1.0, 2.0, 3.0, 4.0])) == pytest.approx(0.4)
    # all negative, R = 9: p = 2 * 1/10
    assert bootstrap_p_value(-np.arange(1.0, 10.0)) == pytest.approx(0.2)
    # against a null of 2.5: two below, two above -> 2 * 3/5 capped at 1
    assert bootstrap_p_value(np.array([1.0, 2.0, 3.0, 4.0]), null=2.5) == 1.0


def test_p_value_counts_values_at_the_null_in_both_tails_despite_rounding():
    at_zero = np.array([0.1 + 0.2 - 0.3, -(0.1 + 0.2 - 0.3), 0.0, 1.0])  # +-5.6e-17 are ties
    # ties at 0: below = 1 + 3, above = 1 + 4 -> p = 2 * 4/5 capped at 1
    assert bootstrap_p_value(at_zero) == 1.0
    assert bootstrap_p_value(np.array([0.0, 1.0, 1.0, 1.0])) == pytest.approx(2 * 2 / 5)


def test_p_value_is_small_for_a_large_effect_and_large_for_none():
    rng = np.random.default_rng(0)
    effect = pd.DataFrame(
        {
            "template": np.repeat(np.arange(30), 4),
            "policy": np.tile(["R1", "R1", "B4", "B4"], 30),
        }
    )
    effect["correct"] = np.where(
        effect["policy"] == "R1", rng.random(120) < 0.9, rng.random(120) < 0.2
    )
    effect["correct"] = effect["correct"].astype(int)
    strong = cluster_bootstrap(effect, difference_statistic(effect, "R1", "B4"), n_resamples=2000)
    assert strong.p_value == pytest.approx(2 / 2001)
    assert strong.low > 0
    null = effect.assign(policy=np.tile(["R1", "B4", "R1", "B4"], 30))
    null["correct"] = (rng.random(120) < 0.5).astype(int)
    weak = cluster_bootstrap(null, difference_statistic(null, "R1", "B4"), n_resamples=2000)
    assert weak.low < 0 < weak.high
    assert weak.p_value > 0.05


def test_interval_is_the_percentile_interval_of_the_distribution():
    result = cluster_bootstrap(clustered_frame(20, seed=4), mean_of("correct"), n_resamples=999)
    low, high = np.quantile(result.distribution, [0.025, 0.975])
    assert (result.low, result.high) == pytest.approx((low, high))
    assert percentile_interval(np.arange(101.0), ci=0.9) == pytest.approx((5.0, 95.0))
    assert result.low <= result.estimate <= result.high


def test_result_is_frozen_with_a_read_only_distribution_and_tidy_rows():
    result = cluster_bootstrap(small_frame(), mean_of("correct"), n_resamples=100)
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.estimate = 0.0  # type: ignore[misc]
    with pytest.raises(ValueError):
        result.distribution[0] = 1.0
    row = result.as_row(scale=100)
    assert row["estimate"] == pytest.approx(100 * result.estimate)
    assert row["p_value"] == result.p_value  # p-values are never scaled
    table = results_frame({"mean": result, "again": result})
    assert table["label"].tolist() == ["mean", "again"]
    assert list(table.columns)[:4] == ["label", "estimate", "low", "high"]
    assert isinstance(result, BootstrapResult) and result.n_resamples == 100


def test_clear_errors_for_missing_columns_empty_cells_and_missing_outcomes():
    frame = small_frame()
    with pytest.raises(KeyError, match="'decoy'"):
        cluster_bootstrap(frame, linear_contrast({("R1", "shared"): 1}, by=("policy", "decoy")))
    with pytest.raises(ValueError, match="Random"):
        cluster_bootstrap(frame, linear_contrast({"R1": 1, "Random": -1}, by="policy"))
    with pytest.raises(ValueError, match="missing"):
        cluster_bootstrap(frame.assign(correct=[1.0, np.nan] * 5), mean_of("correct"))
    with pytest.raises(ValueError, match="1 missing"):
        nullable = pd.array([1, None] + [0] * 8, dtype="Int64")
        cluster_bootstrap(frame.assign(correct=nullable), mean_of("correct"))
    with pytest.raises(TypeError, match="CellStatistic"):
        cluster_bootstrap(frame, lambda f: f["correct"].mean())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="n_resamples"):
        cluster_bootstrap(frame, mean_of("correct"), n_resamples=1)
    with pytest.raises(ValueError, match="ci"):
        cluster_bootstrap(frame, mean_of("correct"), ci=95)


def test_resamples_where_a_cell_is_empty_are_dropped_not_counted():
    # cell B4 exists only in template C: resamples without C leave it empty (undefined difference)
    frame = pd.DataFrame(
        {
            "template": ["A", "B", "C", "C"],
            "policy": ["R1", "R1", "R1", "B4"],
            "correct": [1, 0, 1, 0],
        }
    )
    result = cluster_bootstrap(frame, difference_statistic(frame, "R1", "B4"), n_resamples=3000)
    assert np.isfinite(result.distribution).all()
    # P(template C never drawn in 3 draws) = (2/3)^3 ~ 0.30 of resamples are dropped
    assert result.n_resamples == pytest.approx(3000 * (1 - (2 / 3) ** 3), rel=0.08)
