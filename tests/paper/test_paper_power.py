"""deliberation.paper.power: the banks the power table checks against, HiddenBench's data."""

from __future__ import annotations

import json

import pytest

from deliberation.benchmarks.hiddenbench import tasks as hiddenbench
from deliberation.paper.power import cluster_banks, default_effects
from deliberation.profiles.profile import load_profile
from deliberation.stats.power import designs, power_table
from deliberation.stats.small_samples import MIN_CLUSTERS

HB = "HiddenBench R1 - B3"


def test_without_hiddenbench_data_the_task_count_is_unknown_and_said(tmp_path, monkeypatch):
    monkeypatch.setenv("DELIBERATION_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("DELIBERATION_SHARED_DATA", str(tmp_path / "none"))
    banks, missing = cluster_banks()
    assert "tasks" not in banks and banks["templates"] == 60
    assert len(missing) == 1 and "make data" in missing[0] and "DELIBERATION_DATA_DIR" in missing[0]
    rows = power_table(
        load_profile("qwen2.5-7b-vllm").experiments,
        default_effects("qwen"),
        None,
        banks=banks,
        replicates=50,
        search_replicates=50,
        names=[HB],
    )
    assert (
        [r.design.name for r in rows] == [HB] and rows[0].n == 0 and rows[0].power != rows[0].power
    )


def test_hiddenbench_row_runs_at_every_task_of_the_data_file():
    """qwen2.5-7b-vllm sets no hiddenbench limit: its grid is every task of the file. Run with
    DELIBERATION_DATA_DIR=/work/shared/data (a folder holding hiddenbench/) or after `make data`."""
    path = hiddenbench.default_path()
    if not path.is_file():
        pytest.skip(
            f"HiddenBench's file {path} is absent: run `make data` or set DELIBERATION_DATA_DIR"
            " to a folder holding hiddenbench/benchmark_all_clean.json"
        )
    banks, missing = cluster_banks()
    tasks = len(json.loads(path.read_text()))
    assert banks["tasks"] == tasks and not missing
    (row,) = power_table(
        load_profile("qwen2.5-7b-vllm").experiments,
        default_effects("qwen", {HB: 60.0}),
        None,
        banks=banks,
        replicates=100,
        search_replicates=50,
        names=[HB],
    )
    assert row.n == tasks and row.bank == tasks
    assert row.power > 0.9  # 60 points over every task


def test_recommended_calls_and_cost_scale_the_plans_rows_of_the_tests_notebook():
    import pandas as pd

    from deliberation.paper.power import recommended_cost
    from deliberation.stats.power import PowerRow

    class FakePlan:  # the two things recommended_cost reads from a Plan
        profile = load_profile("qwen2.5-7b-vllm")

        def table(self):
            return pd.DataFrame(
                {
                    "notebook": ["03_crossprofile_h1_h3", "07_dhd_replay"],
                    "requests": [1000, 50],
                    "to_send": [500, 50],
                    "prompt_tokens": [5_000_000, 1],
                    "completion_tokens": [100_000, 1],
                    "completion_ceiling": [1_000_000, 1],
                }
            )

    h3 = next(d for d in designs() if d.name == "H3")
    row = PowerRow(h3, 8.5, "test", 60, 0.7, 0.02, 120, 0.8, "test")
    unreached = PowerRow(h3, 8.5, "test", 60, 0.1, 0.02, None, 0.2, "test")
    (calls, cost), (none, why) = recommended_cost([row, unreached], FakePlan())
    assert calls == 2000  # twice the templates, twice the notebook's calls
    assert cost.endswith("GPU h") and float(cost.split()[0]) > 0
    assert none is None and why == "target not reached"
    assert recommended_cost([row], None) == [(None, "not planned (--no-plan)")]


def fake_row(name: str, n: int, power: float, recommended: int | None = 10, bank_short=0):
    from deliberation.stats.power import PowerRow

    design = next(d for d in designs() if d.name == name)
    return PowerRow(design, 10.0, "t", n, power, 0.02, recommended, 0.8, "t", bank_short)


def test_the_summary_counts_what_reaches_the_target_and_names_the_rest_lowest_first():
    from deliberation.paper.power import power_summary

    rows = [
        fake_row("H1", 2, 1.0),  # 2 clusters: no evidence
        fake_row("H2", 60, 0.9),
        fake_row("H3", 60, 0.37, recommended=80, bank_short=20),
        fake_row("DHD helpful share - 50%", 200, 0.14),
    ]
    text = power_summary(rows)
    assert text.startswith(
        f"At this grid 1 of the 4 tests reach 80% power (1 run at fewer than {MIN_CLUSTERS}"
        " clusters, where the notebooks show no test"
    )
    assert "lowest first: DHD helpful share - 50% 0.14, H3 0.37, H1 1.00." in text
    assert f"Below the floor of {MIN_CLUSTERS} clusters (H1) no interval or test" in text
    assert "H3 (80 templates, 20 short)" in text


def test_the_docs_section_replaces_only_the_profiles_marked_part(tmp_path):
    from deliberation.paper.power import docs_markers, write_docs_section

    begin, end = docs_markers("p")
    page = tmp_path / "power.md"
    page.write_text(f"# Power\n\nbefore\n{begin}\nold numbers\n{end}\nafter\n")
    write_docs_section(page, "p", f"{begin}\nnew numbers\n{end}")
    assert page.read_text() == f"# Power\n\nbefore\n{begin}\nnew numbers\n{end}\nafter\n"
    page.write_text("no markers\n")
    with pytest.raises(ValueError, match=f"{page}: needs the markers"):
        write_docs_section(page, "p", "x")
    assert page.read_text() == "no markers\n"


def test_the_docs_markers_in_docs_power_md_are_those_the_command_writes():
    from deliberation.io import paths
    from deliberation.paper.power import docs_markers

    text = (paths.repo_root() / "docs" / "power.md").read_text()
    for profile in ("qwen2.5-7b-vllm", "smollm2-135m-llamacpp"):
        begin, end = docs_markers(profile)
        assert text.count(begin) == 1 and text.count(end) == 1
        assert f"deliberation power {profile}" in text.split(begin)[1].split(end)[0]
