"""Paper 1's notebooks in the session's smoke build: notebook 03's H1-H3 table recomputed
exactly from the rows it publishes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from deliberation.profiles.profile import load_profile
from deliberation.stats import preregistered_tests


def test_h1_h3_table_is_recomputed_exactly_from_the_published_rows(in_smoke_build):
    assert in_smoke_build["result"].ok, in_smoke_build["text"]
    tables = Path(in_smoke_build["env"]["DELIBERATION_OUTPUT_ROOT"]) / "tables" / "smoke"
    rows = pd.read_csv(tables / "03_crossprofile_h1_h3_rows.csv")
    published = pd.read_csv(tables / "03_h1_h3.csv")

    main = rows[(rows["pilot"] == 0) & (rows["tags"] == "keep")]
    recomputed = preregistered_tests(
        main[main["budget"] == 0.6],
        fixed_count_frame=main[main["item_limit"] == 7],
        sensitivity_cluster="domain",
        n_resamples=load_profile("smoke").experiments.crossprofile.n_resamples,
        seed=0,
    ).table(scale=100)

    primary = published[~published["test"].str.contains("pooled")].reset_index(drop=True)
    recomputed = recomputed.reset_index(drop=True)
    assert list(primary["test"]) == list(recomputed["test"])
    assert set(published["test"]) >= {"H1", "H2", "H3", "H1 vs Random", "H1 (fixed item count)"}
    assert {"H2, budgets pooled", "H3, budgets pooled"} <= set(published["test"])
    published = primary
    for column in ("estimate", "low", "high", "p_raw", "p_holm"):
        np.testing.assert_allclose(published[column], recomputed[column], rtol=1e-9, atol=0)
    assert (published["n_clusters"] == recomputed["n_clusters"]).all()
    assert list(published["interval"].fillna("")) == list(recomputed["interval"])
    sidecar = json.loads((tables / "03_h1_h3.provenance.json").read_text())
    assert sidecar["synthetic"] and "synthetic (sim backend)" in sidecar["caption"]
    assert "H1-H3 at r=0.6" in sidecar["caption"] and "0.4/0.6/0.8 pooled" in sidecar["caption"]


def test_no_table_of_the_smoke_build_shows_inference_below_the_floor(in_smoke_build):
    """The scan of every table the smoke build writes (one template or problem a cell here:
    every interval, p-value and test withheld, the estimate and counts kept)."""
    from deliberation.stats.small_samples import scan_tables

    assert in_smoke_build["result"].ok, in_smoke_build["text"]
    tables = Path(in_smoke_build["env"]["DELIBERATION_OUTPUT_ROOT"]) / "tables" / "smoke"
    assert len(list(tables.glob("*.csv"))) > 30
    assert scan_tables(tables) == {}
