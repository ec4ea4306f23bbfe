"""The scan of every published table: no interval, p-value, test or standard error below the
cluster floor, and inference always beside its clusters and distinct calls (the committed
SmolLM2 tables here, the sim build's when `make paper` made them, the smoke build's in the
notebook lane: tests/notebooks/test_paper1_tables.py)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from deliberation.stats.small_samples import MIN_CLUSTERS, inferential_columns, scan_tables

ROOT = Path(__file__).resolve().parents[2]
PUBLISHED = ROOT / "tables" / "smollm2-135m-llamacpp"


def test_no_published_smollm2_table_shows_inference_below_the_floor() -> None:
    tables = [p for p in PUBLISHED.glob("*.csv") if not p.stem.endswith("_rows")]
    assert len(tables) > 30
    assert scan_tables(PUBLISHED) == {}
    # the scan has something to find: these tables carry inference columns, withheld here
    h1_h3 = pd.read_csv(PUBLISHED / "03_h1_h3.csv")
    assert {"low", "p_raw", "p_holm"} <= set(inferential_columns(h1_h3.columns))
    small = h1_h3[h1_h3["n_clusters"] < MIN_CLUSTERS]
    assert len(small) and small[["low", "high", "p_raw", "p_holm"]].isna().all().all()


def test_published_captions_name_the_method_the_tables_use() -> None:
    """The intervals are the cluster-robust t; a caption may name a bootstrap only as what it
    is: the papers' method beside the t (03_h1_h3), the cue audit's own interval (its row of
    03_accuracy_by_policy), never as the tables' method."""
    captions = {
        p.name: p.read_text(encoding="utf-8").splitlines()[0] for p in PUBLISHED.glob("*.md")
    }
    assert len(captions) > 30
    wrong = {
        name: caption
        for name, caption in captions.items()
        if "bootstrap"
        in caption.replace("the papers' percentile bootstrap", "").replace(
            "the audit's percentile bootstrap", ""
        )
    }
    assert wrong == {}
    assert any("cluster-robust t" in caption for caption in captions.values())


@pytest.mark.skipif(
    not (ROOT / "tables" / "sim").is_dir(), reason="no sim build (make paper writes tables/sim)"
)
def test_no_sim_table_shows_inference_below_the_floor() -> None:
    assert scan_tables(ROOT / "tables" / "sim") == {}


def test_the_scan_finds_a_leak_a_missing_count_and_passes_a_clean_table(tmp_path) -> None:
    leak = pd.DataFrame({"estimate": [1.0], "p_value": [0.01], "n_clusters": [2], "n_calls": [4]})
    leak.to_csv(tmp_path / "a.csv", index=False)
    pd.DataFrame({"estimate": [1.0], "low": [0.0], "high": [2.0]}).to_csv(
        tmp_path / "b.csv", index=False
    )
    clean = leak.assign(p_value=float("nan"), n_clusters=MIN_CLUSTERS - 1)
    clean.to_csv(tmp_path / "c.csv", index=False)
    leak.to_csv(tmp_path / "d_rows.csv", index=False)  # rows for re-analysis: not a table
    found = scan_tables(tmp_path)
    assert set(found) == {"a.csv", "b.csv"}
    assert "p_value" in found["a.csv"][0] and "n_clusters" in found["b.csv"][0]
