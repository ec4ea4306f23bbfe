"""Re-analysis of the DHD authors' released masking and selection rows with this library's code."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from deliberation.experiments.dhd import reference
from deliberation.experiments.dhd.selection import BASELINES, POLICY_VALUES
from deliberation.io import paths
from deliberation.stats.small_samples import MIN_CLUSTERS

SHARED = paths.shared_data_dir() or Path("/nonexistent")
ROOT = SHARED / "dhd_reference"
pytestmark = pytest.mark.skipif(
    not (ROOT / reference.SELECTION_PER_FOLD).exists(),
    reason="../shared/data/dhd_reference not present",
)


def test_masking_pilot_rates_and_drops_by_cell():
    table = reference.masking_pilot(ROOT).set_index(["cell", "arm"])
    summary = json.loads((ROOT / reference.MASKING_PILOT).read_text())
    assert len(table) == 6 * len(summary["success_rate"])
    helpful = table.loc["wrong-helpful"]
    assert helpful["cases"].eq(10).all() and helpful["note"].eq("calibrated").all()
    # The paper: 82% full, 44% reasoning hidden, 64% answer hidden.
    assert helpful.loc["masking-reasoning", "minus_full"] == pytest.approx(-0.38)
    assert helpful.loc["masking-answer", "minus_full"] == pytest.approx(-0.18)
    assert helpful.loc["masking-full", "nominal_events"] == 50
    inside = (table["low"] <= table["success"]) & (table["success"] <= table["high"])
    # a cell of fewer cases than the cluster floor shows its rate without a Wilson interval
    few = table["cases"] < MIN_CLUSTERS
    assert inside[~few].all() and table.loc[few, "low"].isna().all()
    assert set(table.index.get_level_values("cell")) == {
        "wrong-helpful",
        "correct-helpful",
        "wrong-harmful",
        "correct-harmful",
        "indeterminate",
    }


def test_a_malformed_masking_summary_names_the_file(tmp_path):
    copy = tmp_path / "ref"
    shutil.copytree(ROOT, copy)
    path = copy / reference.MASKING_PILOT
    summary = json.loads(path.read_text())
    summary["success_rate"]["wrong_helpful"] = summary["success_rate"].pop(
        "wrong_helpful_calibrated_n10"
    )
    path.write_text(json.dumps(summary))
    with pytest.raises(ValueError, match="component_masking_pilot_summary.json.*wrong_helpful"):
        reference.masking_pilot(copy)


def test_selection_gains_against_every_baseline_recomputed_from_released_rows():
    accuracy, gains = reference.selection_tables(ROOT, n_resamples=500)
    per_fold = reference.selection_per_fold(ROOT)
    reported = gains.dropna(subset=["reported_gain_pp"])
    # Our gain over always-full is the authors' manifest value (rounded to 0.01) everywhere.
    assert len(reported) == 2 * 6
    assert (reported["gain_pp"] - reported["reported_gain_pp"]).abs().max() < 0.006
    pooled = gains[gains["benchmark"] == "pooled"].set_index(["model", "baseline"])
    assert set(pooled.index.get_level_values("baseline")) == set(BASELINES)
    for model, rows in per_fold.groupby("model"):
        for baseline in BASELINES:
            difference = rows["selector_value"] - rows[POLICY_VALUES[baseline]]
            row = pooled.loc[(model, baseline)]
            assert row["gain_pp"] == pytest.approx(100 * difference.mean())
            assert row["low_pp"] <= row["gain_pp"] <= row["high_pp"]
            assert row["problems"] == rows["problem_id"].nunique()
    # Different baselines give different gains: the table must not collapse them into one.
    oss = pooled.loc["oss"]
    assert oss.loc["full", "gain_pp"] - oss.loc["correctness_heuristic", "gain_pp"] > 1.0
    overall = json.loads((ROOT / reference.EXPECTED_SIGNAL_TABLES).read_text())
    for model, values in overall["tab_cross_fitted_one_removal"]["overall"].items():
        row = accuracy[(accuracy["model"] == model) & (accuracy["benchmark"] == "pooled")]
        by_policy = row.set_index("policy")
        assert by_policy.loc["selector", "accuracy_pct"] == pytest.approx(
            values["cross_fit_pct"], abs=0.006
        )
        assert by_policy.loc["full", "accuracy_pct"] == pytest.approx(values["full_pct"], abs=0.006)
        assert by_policy.loc["selector", "folds"] == values["n_folds"]


def test_released_rows_missing_a_policy_column_name_file_and_column(tmp_path):
    copy = tmp_path / "ref"
    shutil.copytree(ROOT, copy)
    path = copy / reference.SELECTION_PER_FOLD
    frame = pd.read_csv(path).drop(columns=["hindsight_value"])
    frame.to_csv(path, index=False)
    with pytest.raises(ValueError, match=r"value_aware_one_removal_per_fold.csv.*hindsight_value"):
        reference.selection_per_fold(copy)


def test_released_rows_are_labelled_with_the_authors_models_repository_and_commit():
    from deliberation.benchmarks.problems.sources import source

    flips = reference.flip_direction(ROOT)
    assert set(zip(flips["model"], flips["model_name"], strict=True)) == {
        ("OSS", "gpt-oss-120b"),
        ("Gemma", "gemma-4-31B-it"),
    }
    _, gains = reference.selection_tables(ROOT, n_resamples=50)
    assert set(gains["model_name"]) == {"gpt-oss-120b", "gemma-4-31B-it"}
    with pytest.raises(ValueError, match="'llama'"):
        reference.model_name("llama")
    released = reference.released_source(reference.FLIP_DIRECTION)
    pinned = source("dhd_reference")
    assert released.repository == "ChihHsuan-Yang/AAAI_Wrong-but-Useful" == pinned.repository
    assert released.commit == pinned.commit and len(released.commit) == 40
    assert released.files == (str(reference.FLIP_DIRECTION),)
    assert "gpt-oss-120b" in released.label() and "sim" not in released.label()
