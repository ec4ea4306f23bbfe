"""The SmolLM2 answer-position table of docs/reading-small-samples.md (after counterbalancing)
recomputed from the rows committed now, which carry each answer's listed position."""

from __future__ import annotations

import io
import re

import pandas as pd
import pytest

from deliberation.io import paths
from deliberation.stats.position_bias import position_bias_table

PROFILE = "smollm2-135m-llamacpp"
# docs row label -> (published rows table, cluster, selection)
SOURCES = {
    "02 HiddenBench": ("02_hiddenbench_rows", "task", None),
    "03 CrossProfile, main + pilot": ("03_crossprofile_h1_h3_rows", "template", None),
    "03 CrossProfile, main templates": ("03_crossprofile_h1_h3_rows", "template", ("pilot", 0)),
    "03 CrossProfile, pilot templates": ("03_crossprofile_h1_h3_rows", "template", ("pilot", 1)),
    "04 tag ablation": ("04_tag_ablation_rows", "template", None),
    "05 evidence balance": ("05_evidence_balance_rows", "template", None),
    "06 natural discussion, votes": ("06_natural_discussion_rows", "template", ("kind", "vote")),
    "06 natural discussion, decisions": (
        "06_natural_discussion_rows",
        "template",
        ("kind", "decision"),
    ),
}


def _documented() -> pd.DataFrame:
    text = (paths.repo_root() / "docs" / "reading-small-samples.md").read_text(encoding="utf-8")
    block = re.search(r"position-bias-after: begin -->\n(.*?)<!--", text, re.S)
    assert block, "docs/reading-small-samples.md: no position-bias-after table"
    lines = [line.strip().strip("|").split("|") for line in block.group(1).strip().splitlines()]
    header, body = [c.strip() for c in lines[0]], [[c.strip() for c in r] for r in lines[2:]]
    return pd.DataFrame(body, columns=header).set_index("rows (notebook)")


def test_the_documented_after_table_is_what_the_committed_rows_give():
    documented = _documented()
    assert set(documented.index) == set(SOURCES)
    tables = paths.repo_root() / "tables" / PROFILE
    for label, (table, cluster, selection) in SOURCES.items():
        text = (tables / f"{table}.csv").read_text(encoding="utf-8")
        rows = pd.read_csv(io.StringIO(text), keep_default_na=False, na_values=[""])
        if selection is not None:
            rows = rows[rows[selection[0]] == selection[1]]
        computed = position_bias_table(rows, cluster=cluster, n_resamples=100).iloc[0]
        row = documented.loc[label]
        assert int(row["decisions"]) == computed["decisions"], label
        assert int(row["distinct calls"]) == computed["n_calls"], label
        assert int(row["clusters"]) == computed["n_clusters"], label
        assert float(row["chance %"]) == pytest.approx(computed["chance %"], abs=0.0501), label
        for k, column in enumerate(["1st %", "2nd %", "3rd %", "4th %"], start=1):
            share = computed.get(f"position {k} %")
            if row[column] == "":
                assert share is None or pd.isna(share), (label, column)
            else:
                assert float(row[column]) == pytest.approx(share, abs=0.0501), (label, column)
