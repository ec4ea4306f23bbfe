"""Answer-position bias table: shares by listed position, first-listed interval, calls."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from deliberation.stats.position_bias import position_bias_table, position_summary
from deliberation.stats.small_samples import calls_note, distinct_calls, interval_note


def _rows(positions_by_template: dict[str, list[int | None]], policy: str = "R1") -> pd.DataFrame:
    rows = []
    for template, positions in positions_by_template.items():
        for k, position in enumerate(positions):
            rows.append(
                {
                    "template": template,
                    "policy": policy,
                    "answer_position": position,
                    "n_options": 3,
                    "key": f"{template}-{policy}-{k}",
                }
            )
    return pd.DataFrame(rows).astype({"answer_position": "Int64"})


def test_shares_count_decisions_with_a_position_and_invalid_ones_are_left_out():
    rows = _rows({"t1": [1, 1, 2, None], "t2": [1, 3, 3]})
    table = position_bias_table(rows, n_resamples=200, min_clusters=1)
    row = table.iloc[0]
    # 6 decisions name an option: first 3, second 1, third 2.
    assert row["decisions"] == 6 and row["n_calls"] == 6
    assert row["position 1 %"] == pytest.approx(50.0)
    assert row["position 2 %"] == pytest.approx(100 / 6)
    assert row["position 3 %"] == pytest.approx(100 / 3)
    assert row["first listed %"] == pytest.approx(50.0)
    assert row["chance %"] == pytest.approx(100 / 3)
    assert row["n_clusters"] == 2 and row["n_options"] == 3


def test_pooled_row_first_then_one_per_group():
    rows = pd.concat(
        [
            _rows({f"t{i}": [1, 1] for i in range(6)}, policy="R1"),
            _rows({f"t{i}": [2, 3] for i in range(6)}, policy="B4"),
        ]
    )
    table = position_bias_table(rows, by=["policy"], n_resamples=500)
    assert table["policy"].tolist() == ["all", "R1", "B4"]
    assert table["first listed %"].tolist() == pytest.approx([50.0, 100.0, 0.0])
    # Every template of R1 chose the first position: the clusters agree exactly, no interval.
    assert table.loc[[0, 1], ["low", "high"]].isna().all().all()
    assert "agree exactly" in table.loc[1, "interval"]


def test_the_interval_resamples_templates_and_is_withheld_below_the_minimum():
    varied = _rows({f"t{i}": [1] * i + [2] * (5 - i) for i in range(6)})
    table = position_bias_table(varied, n_resamples=2000, seed=3)
    row = table.iloc[0]
    assert row["low"] < row["first listed %"] < row["high"]
    few = position_bias_table(varied[varied["template"].isin(["t1", "t2"])], n_resamples=200)
    assert np.isnan(few.loc[0, "low"]) and np.isnan(few.loc[0, "high"])
    assert few.loc[0, "interval"] == interval_note(2)
    assert few.loc[0, "first listed %"] == pytest.approx(30.0)  # (1 + 2) of 10


def test_rows_sharing_a_call_are_counted_once():
    rows = _rows({"t1": [1, 1, 1, 1], "t2": [2, 2]})
    rows["key"] = ["a", "a", "a", "b", "c", "c"]  # identical prompts: one cached call each
    table = position_bias_table(rows, n_resamples=100, min_clusters=1)
    assert table.loc[0, "decisions"] == 6 and table.loc[0, "n_calls"] == 3
    assert "6 decisions from 3 distinct calls" in position_summary(table)


def test_mixed_listings_give_chance_as_the_mean_of_one_over_k():
    rows = _rows({"t1": [1, 4]})
    rows["n_options"] = [2, 4]
    table = position_bias_table(rows, n_resamples=100, min_clusters=1)
    assert table.loc[0, "chance %"] == pytest.approx(100 * (1 / 2 + 1 / 4) / 2)
    assert table.loc[0, "position 4 %"] == pytest.approx(50.0)


def test_bad_rows_are_refused_with_the_column_named():
    rows = _rows({"t1": [1, 2]})
    with pytest.raises(KeyError, match="answer_position"):
        position_bias_table(rows.drop(columns="answer_position"))
    with pytest.raises(ValueError, match="above n_options"):
        position_bias_table(rows.assign(answer_position=[1, 5]))
    with pytest.raises(ValueError, match="no decision"):
        position_bias_table(rows.assign(answer_position=pd.array([None, None], dtype="Int64")))


def test_distinct_calls_ignore_unsent_rows_and_frames_without_keys():
    frame = pd.DataFrame({"key": ["a", "a", "", None, "b"]})
    assert distinct_calls(frame) == 2
    assert distinct_calls(frame.rename(columns={"key": "request_key"})) == 2
    assert distinct_calls(pd.DataFrame({"x": [1]})) is None
    assert calls_note(frame) == "5 rows from 2 distinct calls"
    assert calls_note(pd.DataFrame({"key": ["a", "b"]})) == "2 rows, one call each"
    assert calls_note(pd.DataFrame({"x": [1]})) == ""
