"""Below the cluster floor no inference at all, in every table: the analyses withhold it where
they compute, and the table writer refuses a table that still shows some."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from deliberation.profiles.profile import load_profile
from deliberation.stats.small_samples import (
    MIN_CLUSTERS,
    inference_leaks,
    inferential_columns,
    interval_note,
    withhold_inference,
)

FLOOR = MIN_CLUSTERS


def _frame(clusters: list[int]) -> pd.DataFrame:
    n = len(clusters)
    return pd.DataFrame(
        {"policy": list("ABCDE"[:n]), "estimate": [50.0] * n, "low": [0.0] * n,
         "high": [100.0] * n, "p_value": [0.01] * n, "n_clusters": clusters}
    )  # fmt: skip


def test_rows_below_the_floor_keep_the_estimate_and_lose_interval_and_p_saying_why() -> None:
    clusters = [1, FLOOR - 1, FLOOR, 60]
    out = withhold_inference(_frame(clusters))
    assert out["estimate"].tolist() == [50.0] * 4
    assert out["low"].isna().tolist() == [True, True, False, False]
    assert out["p_value"].isna().tolist() == [True, True, False, False]
    assert out["interval"].tolist() == [interval_note(1), interval_note(FLOOR - 1), "", ""]
    assert "no interval, p-value or test" in interval_note(1)
    assert list(out.columns) == [
        "policy", "estimate", "low", "high", "interval", "p_value", "n_clusters"
    ]  # fmt: skip
    assert inference_leaks(out) == [] and len(inference_leaks(_frame(clusters))) == 6


def test_every_kind_of_inference_is_found_and_tables_without_any_pass_unchanged() -> None:
    columns = [
        "term", "coef", "se", "t", "z", "p_value", "p_raw", "p_holm", "LR statistic", "df",
        "p_LR", "Wald F statistic (cluster-robust)", "p_Wald", "paper bootstrap p",
        "remove low", "remove high", "wilson_low", "wilson_high", "low_pp", "high_pp",
        "n_clusters", "n_calls", "pilot", "policy", "prompt", "support",
    ]  # fmt: skip
    found = set(inferential_columns(columns))
    assert found == set(columns[2:8] + columns[8:9] + columns[10:20])
    plain = pd.DataFrame({"estimate": [1.0], "n_rows": [3]})
    assert withhold_inference(plain) is plain and inference_leaks(plain) == []


def test_inference_without_its_clusters_is_refused() -> None:
    frame = pd.DataFrame({"estimate": [1.0], "low": [0.0], "high": [2.0]})
    with pytest.raises(ValueError, match="n_clusters"):
        withhold_inference(frame)
    assert inference_leaks(frame) and "n_clusters" in inference_leaks(frame)[0]
    with pytest.raises(ValueError):
        withhold_inference(_frame([1]), min_clusters=0)


def test_the_table_writer_writes_the_frame_as_given_and_refuses_a_leak(
    tmp_path, monkeypatch
) -> None:
    from deliberation.publish import tables

    monkeypatch.setenv("DELIBERATION_OUTPUT_ROOT", str(tmp_path))
    profile = load_profile("smoke")
    frame = withhold_inference(_frame([1, 9]))
    written = tables.write_table(frame, "t", profile=profile, caption="c", notebook="00_smoke")
    csv = pd.read_csv(written["csv"], keep_default_na=False)
    assert csv["low"].tolist() == ["", "0"] and csv["interval"].tolist()[1] == ""
    assert interval_note(1) in written["md"].read_text(encoding="utf-8")
    with pytest.raises(ValueError, match="below the cluster floor"):
        tables.write_table(_frame([1, 9]), "u", profile=profile, caption="c", notebook="00_smoke")
    assert not (tmp_path / "tables" / "smoke" / "u.csv").exists()
    assert profile.min_interval_clusters == MIN_CLUSTERS


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
            "n_clusters": [FLOOR - 1, 7],
        }
    )
    out = withhold_inference(frame)
    assert out.loc[0, ["remove low", "remove high", "shuffle_low", "shuffle_high"]].isna().all()
    assert out.loc[1, ["remove low", "shuffle_high"]].tolist() == [-1.0, 2.0]
    assert out.loc[0, "interval"] == interval_note(FLOOR - 1) and out.loc[1, "interval"] == ""
    assert list(out.columns).index("interval") == list(out.columns).index("shuffle_high") + 1


def test_results_count_the_rows_and_distinct_calls_their_statistic_read() -> None:
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
        {
            "gain_pp": [5.0, 2.0],
            "low_pp": [1.0, -1.0],
            "high_pp": [9.0, 4.0],
            "n_clusters": [FLOOR - 1, 40],
        }
    )
    out = withhold_inference(frame)
    assert out.loc[0, ["low_pp", "high_pp"]].isna().all() and out.loc[1, "low_pp"] == -1.0
    assert out.loc[0, "interval"] == interval_note(FLOOR - 1)
    assert np.isnan(out.loc[0, "low_pp"])


def test_rows_that_read_the_very_same_calls_name_the_first_of_them() -> None:
    from deliberation.stats.small_samples import SAME_CALLS_COLUMN, with_same_calls

    table = pd.DataFrame(
        {"policy": ["R1", "R1", "R1-rel", "B4"], "capacity": ["r=0.6", "7 items", "r=0.6", "r=0.6"],
         "accuracy": [50.0, 50.0, 50.0, 50.0], "n_calls": [2, 2, 2, 2]}
    )  # fmt: skip
    same = frozenset({"k1", "k2"})
    # B4 has the same accuracy from other calls: equal numbers are not the same calls
    calls = [same, same, same, frozenset({"k3", "k4"})]
    out = with_same_calls(table, calls, ("policy", "capacity"))
    # named by what differs from the row's own values
    assert out[SAME_CALLS_COLUMN].tolist() == ["", "r=0.6", "R1", ""]
    assert list(out.columns).index(SAME_CALLS_COLUMN) == list(out.columns).index("n_calls") + 1
    # rows naming no call compare with nothing; a frame of such rows is left as it is
    assert with_same_calls(table, [None] * 4, ("policy",)) is table
    partly = with_same_calls(table, [same, frozenset(), same, None], ("policy", "capacity"))
    assert partly[SAME_CALLS_COLUMN].tolist() == ["", "", "R1", ""]
    with pytest.raises(ValueError, match="3 call sets for 4 rows"):
        with_same_calls(table, calls[:3], ("policy",))


def test_a_reading_below_the_floor_gives_estimate_n_and_why_and_no_inference() -> None:
    from deliberation.stats.small_samples import reading

    row = pd.Series(
        {"coef": 0.8852, "se": 0.21, "p_value": 0.001, "low": 0.4, "high": 1.3,
         "n_clusters": FLOOR - 1, "n_rows": 64, "n_calls": 44, "interval": ""}
    )  # fmt: skip
    below = reading(row, "tone lead", "coef")
    assert below.startswith("tone lead: +0.885 (n = ")
    assert interval_note(FLOOR - 1) in below and "64 rows from 44 distinct calls" in below
    for inference in ("SE", "p =", "[", "nan"):
        assert inference not in below
    above = reading(pd.Series({**row, "n_clusters": 60}), "tone lead", "coef")
    assert above == (
        "tone lead: +0.885 (cluster-robust SE 0.210, 95% interval [+0.400, +1.300], p = 0.001;"
        " 60 clusters, 64 rows from 44 distinct calls)"
    )
    # the row's own reason wins (no variation, arms reading the same calls), whatever its n
    agreed = pd.Series({**row, "n_clusters": 60, "interval": "the 60 clusters agree exactly"})
    assert reading(agreed, "x", "coef") == (
        "x: +0.885 (the 60 clusters agree exactly; 64 rows from 44 distinct calls)"
    )
