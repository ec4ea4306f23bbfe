"""No interval from fewer than the minimum number of clusters, in every published table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from deliberation.params import load_profile
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
    from deliberation import tables

    monkeypatch.setenv("DELIBERATION_OUTPUT_ROOT", str(tmp_path))
    written = tables.write_table(
        _frame([1, 9]), "t", profile=load_profile("smoke"), caption="c", notebook="00_smoke"
    )
    csv = pd.read_csv(written["csv"])
    assert np.isnan(csv.loc[0, "low"]) and csv.loc[1, "low"] == 0.0
    assert "n = 1 cluster, no interval" in written["md"].read_text(encoding="utf-8")
    assert load_profile("smoke").min_interval_clusters == 5
