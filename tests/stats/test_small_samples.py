"""No interval from fewer than the minimum number of clusters, in every published table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from deliberation.profiles.profile import load_profile
from deliberation.stats.small_samples import interval_note, withhold_small_intervals


def _frame(clusters: list[int]) -> pd.DataFrame:
    n = len(clusters)
    return pd.DataFrame(
        {"policy": list("ABCDE"[:n]), "estimate": [50.0] * n, "low": [0.0] * n,
         "high": [100.0] * n, "n_clusters": clusters}
    )  # fmt: skip


def test_rows_below_the_minimum_keep_the_estimate_and_say_why() -> None:
    out = withhold_small_intervals(_frame([1, 2, 4, 5, 60]))
    assert out["estimate"].tolist() == [50.0] * 5
    assert out["low"].isna().tolist() == [True, True, True, False, False]
    assert out["interval"].tolist() == [
        "n = 1 cluster, no interval", "n = 2 clusters, no interval",
        "n = 4 clusters, no interval", "", "",
    ]  # fmt: skip
    assert list(out.columns) == ["policy", "estimate", "low", "high", "interval", "n_clusters"]


def test_the_minimum_is_a_setting_and_tables_without_clusters_pass_unchanged() -> None:
    assert withhold_small_intervals(_frame([2, 3]), min_clusters=2)["low"].notna().tolist() == [
        True,
        True,
    ]
    plain = pd.DataFrame({"estimate": [1.0], "low": [0.0], "high": [2.0]})
    assert withhold_small_intervals(plain) is plain
    assert interval_note(5) == "" and interval_note(0) == "n = 0 clusters, no interval"
    with pytest.raises(ValueError):
        withhold_small_intervals(_frame([1]), min_clusters=0)


def test_the_table_writer_withholds_them_in_csv_and_markdown(tmp_path, monkeypatch) -> None:
    from deliberation.publish import tables

    monkeypatch.setenv("DELIBERATION_OUTPUT_ROOT", str(tmp_path))
    written = tables.write_table(
        _frame([1, 9]), "t", profile=load_profile("smoke"), caption="c", notebook="00_smoke"
    )
    csv = pd.read_csv(written["csv"])
    assert np.isnan(csv.loc[0, "low"]) and csv.loc[1, "low"] == 0.0
    assert "n = 1 cluster, no interval" in written["md"].read_text(encoding="utf-8")
    assert load_profile("smoke").min_interval_clusters == 5


def test_every_interval_of_a_table_of_several_effects_is_withheld() -> None:
    """The tag-ablation table carries one interval per effect (``remove low``/``remove high``)."""
    frame = pd.DataFrame(
        {
            "variant": ["SP-DS-IP", "SS-DS-IP"],
            "remove - keep": [-10.0, 5.0],
            "remove low": [-20.0, -1.0],
            "remove high": [0.0, 9.0],
            "shuffle_low": [-3.0, -2.0],
            "shuffle_high": [3.0, 2.0],
            "n_clusters": [2, 7],
        }
    )
    out = withhold_small_intervals(frame)
    assert out.loc[0, ["remove low", "remove high", "shuffle_low", "shuffle_high"]].isna().all()
    assert out.loc[1, ["remove low", "shuffle_high"]].tolist() == [-1.0, 2.0]
    assert out.loc[0, "interval"] == "n = 2 clusters, no interval" and out.loc[1, "interval"] == ""
    assert list(out.columns).index("interval") == list(out.columns).index("shuffle_high") + 1


def test_a_bootstrap_counts_the_rows_and_distinct_calls_its_statistic_read() -> None:
    from deliberation.experiments.memory.analyses.accuracy import differences
    from deliberation.stats import cluster_bootstrap, mean_of

    frame = pd.DataFrame(
        {
            "template": ["t1", "t1", "t2", "t2", "t3", "t3"],
            "policy": ["empty", "empty", "empty", "empty", "R1", "R1"],
            "correct": [1, 1, 0, 0, 1, 0],
            "valid": 1,
            "key": ["a", "a", "b", "b", "c", "d"],  # the empty memory: one call per template
        }
    )
    result = cluster_bootstrap(frame, mean_of("correct", {"policy": "empty"}), n_resamples=50)
    assert (result.n_rows, result.n_calls) == (4, 2)
    bare = cluster_bootstrap(frame.drop(columns="key"), mean_of("correct"), n_resamples=50)
    assert (bare.n_rows, bare.n_calls) == (6, None)
    table = differences(frame, [("R1", "empty")], n_resamples=50)
    assert table.loc[0, "n_calls"] == 4
    assert "n_calls" not in differences(
        frame.drop(columns="key"), [("R1", "empty")], n_resamples=50
    )


def test_bounds_named_with_their_unit_are_withheld_too() -> None:
    frame = pd.DataFrame(
        {"gain_pp": [5.0, 2.0], "low_pp": [1.0, -1.0], "high_pp": [9.0, 4.0], "n_clusters": [3, 40]}
    )
    out = withhold_small_intervals(frame)
    assert out.loc[0, ["low_pp", "high_pp"]].isna().all() and out.loc[1, "low_pp"] == -1.0
    assert out.loc[0, "interval"] == "n = 3 clusters, no interval"
