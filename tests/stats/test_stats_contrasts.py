"""Contrast helpers and the H1-H3 helper, on fixtures whose answers are worked out by hand."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from deliberation.stats import (
    cell_means,
    holm,
    interaction_contrast,
    interaction_statistic,
    paired_difference,
    paired_differences,
    policy_difference,
    preregistered_tests,
)


def h1_frame() -> pd.DataFrame:
    """Two templates x {R1, B4} x decoy x support, one row each.

    R1 is right iff decoys are shared; B4 iff decoys are private, except that template T1 also
    gets B4 right with shared decoys and shared support. So (R1 - B4 | decoy shared) -
    (R1 - B4 | decoy private) is (1 - 0) - (0 - 1) = 2 with private support and
    (1 - 0.5) - (0 - 1) = 1.5 with shared support: H1 = 1.75.
    """
    rows = []
    for template, policy, decoy, support in itertools.product(
        ["T1", "T2"], ["R1", "B4"], ["shared", "private"], ["shared", "private"]
    ):
        if policy == "R1":
            correct = decoy == "shared"
        else:
            correct = decoy == "private" or (template == "T1" and support == "shared")
        rows.append((template, policy, decoy, support, int(correct)))
    return pd.DataFrame(rows, columns=["template", "policy", "decoy", "support", "correct"])


def test_h1_interaction_matches_the_hand_computed_value_and_weights():
    frame = h1_frame()
    stat = interaction_statistic(frame, "R1", "B4", average_over=("support",))
    assert stat.by == ("policy", "decoy", "support")
    assert sum(stat.weights) == pytest.approx(0.0)  # a contrast
    assert sum(abs(w) for w in stat.weights) == pytest.approx(4.0)  # 8 cells x 1/2
    result = interaction_contrast(frame, average_over=("support",), n_resamples=500)
    assert result.estimate == pytest.approx(1.75)


def test_interaction_without_averaging_pools_the_other_factors():
    frame = h1_frame()
    # pooled over support: R1 1 | 0; B4 shared 1/4, private 1 -> (1 - 1/4) - (0 - 1) = 1.75
    result = interaction_contrast(frame, average_over=(), n_resamples=200)
    assert result.estimate == pytest.approx(1.75)


def test_difference_averaged_over_cells_weights_cells_equally_not_rows():
    # decoy shared holds three rows per policy, private one: R1 [1,1,1] | [0]; B4 [1,0,0] | [0]
    frame = pd.DataFrame(
        {
            "template": ["T1", "T2", "T3", "T1"] * 2,
            "policy": ["R1"] * 4 + ["B4"] * 4,
            "decoy": ["shared"] * 3 + ["private"] + ["shared"] * 3 + ["private"],
            "correct": [1, 1, 1, 0, 1, 0, 0, 0],
        }
    )
    pooled = policy_difference(frame, "R1", "B4", n_resamples=200)
    balanced = policy_difference(frame, "R1", "B4", average_over=("decoy",), n_resamples=200)
    assert pooled.estimate == pytest.approx(3 / 4 - 1 / 4)
    assert balanced.estimate == pytest.approx(((1 - 1 / 3) + (0 - 0)) / 2)


def test_paired_difference_by_cluster_and_by_matched_rows():
    frame = pd.DataFrame(
        {
            "template": ["A", "A", "A", "A", "B", "B"],
            "variant": ["v1", "v2", "v1", "v2", "v1", "v1"],
            "policy": ["R1", "R1", "B4", "B4", "R1", "B4"],
            "correct": [1, 1, 0, 1, 0, 1],
        }
    )
    per_cluster = paired_differences(frame, "R1", "B4")
    assert per_cluster["difference"].tolist() == [1 - 0.5, 0 - 1]
    per_row = paired_differences(frame, "R1", "B4", pair_on=["variant"])
    assert per_row["difference"].tolist() == [1, 0, -1]
    result = paired_difference(frame, "R1", "B4", pair_on=["variant"], n_resamples=300)
    assert result.estimate == pytest.approx(0.0)
    assert result.n_clusters == 2
    assert paired_difference(frame, "R1", "B4", n_resamples=300).estimate == pytest.approx(-0.25)


def test_paired_difference_rejects_unmatched_and_duplicated_units():
    frame = pd.DataFrame(
        {
            "template": ["A", "A", "B"],
            "variant": ["v1", "v1", "v1"],
            "policy": ["R1", "B4", "R1"],
            "correct": [1, 0, 1],
        }
    )
    with pytest.raises(ValueError, match="lack one of the two policies.*'B'"):
        paired_differences(frame, "R1", "B4")
    doubled = pd.concat([frame.iloc[:2], frame.iloc[:1]])
    with pytest.raises(ValueError, match="has 2 rows"):
        paired_differences(doubled, "R1", "B4", pair_on=["variant"])


def test_interaction_requires_every_cell_and_two_levels():
    frame = h1_frame()
    missing = frame[~((frame.policy == "B4") & (frame.decoy == "private"))]
    with pytest.raises(ValueError, match="no rows in cell"):
        interaction_contrast(missing, average_over=("support",))
    with pytest.raises(ValueError, match="two distinct levels"):
        interaction_statistic(frame, levels=("shared", "shared"), average_over=())


def cross_frame() -> pd.DataFrame:
    """All policies x 8 ownership variants x 3 templates; correct is a known cell pattern."""
    rows = []
    for template, policy, support, decoy, irrelevant in itertools.product(
        ["T1", "T2", "T3"],
        ["R1", "B4", "Random", "R1-rel"],
        ["shared", "private"],
        ["shared", "private"],
        ["shared", "private"],
    ):
        correct = {
            "R1": decoy == "shared",
            "B4": decoy == "private",
            "Random": support == "shared",
            "R1-rel": True,
        }[policy]
        rows.append((template, policy, support, decoy, irrelevant, int(correct)))
    columns = ["template", "policy", "support", "decoy", "irrelevant", "correct"]
    return pd.DataFrame(rows, columns=columns)


def test_preregistered_tests_compute_h1_h3_and_holm_in_one_call():
    frame = cross_frame()
    tests = preregistered_tests(frame, n_resamples=400, seed=1)
    means = cell_means(frame, "policy")
    assert tests.primary["H1"].estimate == pytest.approx((1 - 0) - (0 - 1))
    assert tests.primary["H2"].estimate == pytest.approx(means["R1"] - means["Random"])
    assert tests.primary["H3"].estimate == pytest.approx(1.0 - 0.5)
    # the three templates repeat one pattern: no variation between clusters, so no test
    assert all(np.isnan(tests.primary[h].p_value) for h in ("H1", "H2", "H3"))
    assert all(np.isnan(p) for p in tests.p_holm.values())
    varied = frame.assign(correct=np.where(
        (frame["template"] == "T1") & (frame["policy"] == "Random") & (frame["support"] == "shared"),
        0, frame["correct"],
    ))  # fmt: skip
    tested = preregistered_tests(varied, n_resamples=400, seed=1)
    raw = [tested.primary[h].p_value for h in ("H1", "H2", "H3")]
    adjusted = holm([1.0 if np.isnan(p) else p for p in raw])  # untested: p = 1 in the family
    assert tested.p_holm["H2"] == pytest.approx(adjusted[1])
    assert np.isnan(tested.p_holm["H1"])
    assert np.isfinite(raw[1]) and np.isnan(raw[0])  # H2 varies between templates; H1 not
    # H1 against Random: (1 - 1/2) - (0 - 1/2) = 1
    assert tests.secondary["H1 vs Random"].estimate == pytest.approx(1.0)
    table = tests.table(scale=100)
    assert table["test"].tolist() == ["H1", "H2", "H3", "H1 vs Random"]
    assert table.loc[0, "estimate"] == pytest.approx(200.0)
    assert np.isnan(table.loc[3, "p_holm"])  # secondary tests are outside the Holm family
    alone = interaction_contrast(frame, n_resamples=400, seed=1)
    assert alone.estimate == pytest.approx(tests.primary["H1"].estimate)


def test_preregistered_tests_accept_other_labels_and_a_fixed_count_control():
    frame = cross_frame().replace({"policy": {"R1": "rare", "Random": "rand"}})
    frame = frame.rename(columns={"policy": "memory", "correct": "right"})
    fixed = frame.copy()
    tests = preregistered_tests(
        frame,
        policy="memory",
        value="right",
        rarity="rare",
        random="rand",
        fixed_count_frame=fixed,
        n_resamples=200,
    )
    assert tests.primary["H1"].estimate == pytest.approx(2.0)
    assert tests.secondary["H1 (fixed item count)"].estimate == pytest.approx(2.0)
    with pytest.raises(ValueError, match="R1"):
        preregistered_tests(frame, policy="memory", value="right", n_resamples=200)
