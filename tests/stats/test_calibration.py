"""The cluster floor is measured: the size of each method at zero effect by number of clusters
(experiments lane), and the constants and docs/reading-small-samples.md agree with it."""

from __future__ import annotations

from pathlib import Path

import pytest

from deliberation.stats import calibration
from deliberation.stats.cluster_t import METHOD, PAPER_METHOD
from deliberation.stats.small_samples import MIN_CLUSTERS, PAPER_METHOD_MIN_CLUSTERS

DOC = Path(__file__).resolve().parents[2] / "docs" / "reading-small-samples.md"
BEGIN, END = "<!-- size-table:begin -->", "<!-- size-table:end -->"


@pytest.mark.experiments
def test_the_floors_are_where_the_measured_false_positive_rate_is_at_most_1_5_alpha() -> None:
    table = calibration.size_table()
    assert calibration.floor(table, METHOD) == MIN_CLUSTERS
    assert calibration.floor(table, PAPER_METHOD) == PAPER_METHOD_MIN_CLUSTERS
    # the papers' percentile bootstrap is too liberal at few clusters (the issue's finding) ...
    paper = table[(table["method"] == PAPER_METHOD) & (table["G"] == 5)]
    assert paper["rejection at zero"].max() > 0.1
    # ... and the cluster t keeps its 95% intervals' coverage from the floor on
    coverage = table[(table["method"] == METHOD) & (table["G"] >= MIN_CLUSTERS)]
    assert coverage["coverage at 10 points"].dropna().between(0.93, 0.98).all()
    text = DOC.read_text(encoding="utf-8")
    shown = text[text.index(BEGIN) + len(BEGIN) : text.index(END)].strip()
    assert shown == calibration.summary_table(table).to_markdown(index=False), (
        "docs/reading-small-samples.md's size table is stale: paste"
        " calibration.summary_table(calibration.size_table()).to_markdown(index=False)"
    )


def test_the_floor_is_the_smallest_size_from_which_every_larger_one_passes() -> None:
    import pandas as pd

    rows = [
        {"method": "m", "G": g, "rejection at zero": rate}
        for g, rate in ((3, 0.05), (5, 0.09), (10, 0.07), (20, 0.05))
    ]
    assert calibration.floor(pd.DataFrame(rows), "m") == 10
    rows[-1]["rejection at zero"] = 0.2
    assert calibration.floor(pd.DataFrame(rows), "m") is None
