"""Figures say small samples as the tables do: no error bar from fewer clusters than the minimum
(its n printed instead), and the chance line on every figure of a proportion."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from matplotlib.container import ErrorbarContainer

from deliberation.experiments.memory.analyses import figures
from deliberation.experiments.natural import report
from deliberation.publish.plots import chance_level, interval_errors
from deliberation.stats.small_samples import MIN_CLUSTERS


def _drawn_bars(ax) -> int:
    """Error bars with finite ends, over every errorbar container (``bar(yerr=...)`` adds one
    beside its bars)."""
    count = 0
    for container in ax.containers:
        if not isinstance(container, ErrorbarContainer):
            continue
        for collection in container.lines[2]:
            segments = [np.asarray(s) for s in collection.get_segments()]
            count += sum(s.size > 0 and np.isfinite(s).all() for s in segments)
    return count


def _texts(ax) -> list[str]:
    """What the axes say about small samples: the "n = ..." marks beside estimates and the
    "no intervals" line under its title (bar value labels aside)."""
    marks = [t.get_text() for t in ax.texts if t.get_text().startswith("n = ")]
    notes = [line for line in ax.get_title().splitlines() if line.startswith("no intervals")]
    return marks + notes


def _chance_lines(ax) -> list[float]:
    return [ln.get_ydata()[0] for ln in ax.get_lines() if ln.get_label().startswith("chance")]


def test_interval_errors_are_empty_below_the_minimum_and_where_bounds_are_missing():
    errors = interval_errors([50, 60, 70], [40, 50, np.nan], [55, 80, 90], [2, 5, 9])
    assert np.isnan(errors[:, 0]).all() and np.isnan(errors[:, 2]).all()
    assert errors[:, 1].tolist() == [10, 20]
    assert interval_errors([0.5], [0.4], [0.7], [3], min_clusters=3, scale=100)[:, 0] == (
        pytest.approx([10, 20])
    )


def _accuracy(n_clusters: list[int], chance: float | None = 100 / 3) -> pd.DataFrame:
    table = pd.DataFrame(
        {
            "policy": ["R1", "R1", "all"],
            "capacity": ["r=0.4", "r=0.6", "reference"],
            "accuracy": [50.0, 60.0, 90.0],
            "low": [40.0, 50.0, 85.0],
            "high": [60.0, 70.0, 95.0],
            "n_clusters": n_clusters,
        }
    )
    return table if chance is None else table.assign(chance=chance)


def test_accuracy_by_budget_withholds_small_intervals_prints_n_and_draws_chance():
    ax = figures.accuracy_by_budget(_accuracy([2, 60, 60]), "t").axes[0]
    assert _drawn_bars(ax) == 1  # r=0.6 only
    assert _texts(ax) == ["n = 2 clusters"]
    assert _chance_lines(ax) == pytest.approx([100 / 3])
    wide = figures.accuracy_by_budget(_accuracy([60, 60, 60]), "t").axes[0]
    assert _drawn_bars(wide) == 2 and _texts(wide) == []
    # A profile's own minimum, and a table without chance (no n_options) draws no line.
    relaxed = figures.accuracy_by_budget(_accuracy([2, 60, 60], None), "t", min_clusters=2)
    assert _drawn_bars(relaxed.axes[0]) == 2 and _chance_lines(relaxed.axes[0]) == []


def test_accuracy_by_lead_withholds_small_intervals_and_draws_chance():
    table = pd.DataFrame(
        {
            "lead_bin": [-2, 0, 2],
            "lead": ["-2", "0", "+2"],
            "accuracy": [20.0, 40.0, 80.0],
            "low": [10.0, 30.0, 70.0],
            "high": [30.0, 50.0, 90.0],
            "n_clusters": [1, 12, 12],
            "chance": [100 / 3] * 3,
        }
    )
    ax = figures.accuracy_by_lead(table, "t").axes[0]
    assert _drawn_bars(ax) == 2 and _texts(ax) == ["n = 1 cluster"]
    assert _chance_lines(ax) == pytest.approx([100 / 3])


def test_tag_effects_withhold_every_effects_interval_below_the_minimum():
    table = pd.DataFrame(
        {
            "policy": ["all", "all"],
            "variant": ["SP-DS-IP", "SS-DS-IP"],
            "remove - keep": [-10.0, 5.0],
            "remove low": [-20.0, -1.0],
            "remove high": [0.0, 9.0],
            "shuffle - keep": [-4.0, 2.0],
            "shuffle low": [-8.0, -3.0],
            "shuffle high": [1.0, 6.0],
            "n_clusters": [2, 2],
        }
    )
    fig = figures.tag_effects(table, "t")
    ax = fig.axes[0]
    # Every bar withheld: one note for the axes, not a label on each bar; the figure counts
    # them, and the caption sentence says there are no error bars.
    assert _drawn_bars(ax) == 0
    assert _texts(ax) == [f"no intervals: n = 2 clusters each, fewer than {MIN_CLUSTERS}"]
    assert (fig.intervals.drawn, fig.intervals.withheld) == (0, 4)
    assert fig.intervals.sentence("95% intervals").startswith("No error bars")
    wide = figures.tag_effects(table.assign(n_clusters=6), "t")
    assert _drawn_bars(wide.axes[0]) == 4 and wide.intervals.sentence("95% x") == (
        "Error bars: 95% x."
    )


def test_natural_measures_withhold_one_template_bars_and_draw_chance():
    table = pd.DataFrame(
        {
            "profile": "p",
            "benchmark": "crossprofile",
            "prompt": ["plain", "plain"],
            "measure": ["decision: transcript", "decision: empty"],
            "estimate": [0.0, 1.0],
            "low": [0.0, 1.0],
            "high": [0.0, 1.0],
            "n_clusters": [1, 1],
            "chance": [1 / 3, 1 / 3],
        }
    )
    fig = report.plot_measures(table, ["decision: transcript", "decision: empty"], "t")
    ax = fig.axes[0]
    assert _drawn_bars(ax) == 0
    assert _texts(ax) == [f"no intervals: n = 1 cluster each, fewer than {MIN_CLUSTERS}"]
    assert _chance_lines(ax) == pytest.approx([100 / 3])
    assert chance_level(table.drop(columns="chance")) is None


def test_the_natural_accuracy_table_counts_calls_and_carries_chance():
    rows = pd.DataFrame(
        {
            "profile": "p",
            "kind": ["decision"] * 4 + ["vote"] * 2,
            "benchmark": "crossprofile",
            "task": ["t/a", "t/b", "u/a", "u/b", "t/a", "t/a"],
            "template": ["t", "t", "u", "u", "t", "t"],
            "variant": ["a", "b", "a", "b", "a", "a"],
            "prompt": "plain",
            "replicate": 0,
            "agent": ["", "", "", "", "A1", "A2"],
            "stage": ["", "", "", "", "initial", "initial"],
            "policy": ["empty"] * 4 + ["", ""],
            "answer": ["X"] * 6,
            "n_options": 3,
            "correct": [1, 1, 0, 0, 1, 0],
            "valid": 1,
            "key": ["k1", "k1", "k2", "k2", "v1", "v2"],  # one call per template, copied
        }
    )
    table = report.accuracy_table(rows, n_resamples=50).set_index("measure")
    empty = table.loc["decision: empty"]
    assert empty["n_rows"] == 4 and empty["n_calls"] == 2 and empty["n_clusters"] == 2
    assert empty["chance"] == pytest.approx(1 / 3)
    share = table.loc["group share (initial)"]
    assert share["n_rows"] == 1 and share["n_calls"] == 2
    invalid = report.invalid_table(rows).set_index("what")
    assert invalid.loc["empty", ["rows", "n_calls"]].tolist() == [4, 2]


def test_dhd_flip_shares_from_two_problems_get_no_bar_but_their_n():
    from deliberation.experiments.dhd import report as dhd
    from deliberation.stats.small_samples import withhold_inference

    shares = pd.DataFrame(
        {
            "design": ["single", "single"],
            "benchmark": ["omnimath", "omnimath"],
            "proposal": ["wrong", "correct"],
            "helpful_share": [0.5, 0.8],
            "cluster_low": [0.2, 0.6],
            "cluster_high": [0.7, 0.9],
            "wilson_low": [0.3, 0.5],
            "wilson_high": [0.7, 0.95],
            "n_clusters": [2, 8],
        }
    )
    ax = dhd.plot_flip_shares(shares, "t").axes[0]
    assert _drawn_bars(ax) == 1 and _texts(ax) == ["n = 2 clusters"]
    # The table writer withholds both of its intervals there (cluster t and Wilson).
    written = withhold_inference(shares)
    assert written.loc[0, ["cluster_low", "wilson_high"]].isna().all()
    assert written.loc[1, "cluster_low"] == 0.6


def test_natural_policy_contrasts_count_the_calls_both_policies_read():
    base = {"profile": "p", "kind": "decision", "benchmark": "crossprofile", "prompt": "plain",
            "replicate": 0, "valid": 1}  # fmt: skip
    rows = pd.DataFrame(
        [
            base | {"task": f"{t}/{v}", "template": t, "policy": policy, "correct": c, "key": k}
            for t in ("t", "u")
            for v in ("a", "b")
            for policy, c, k in (("empty", 1, f"{t}-empty"), ("R1", 0, f"{t}-{v}-R1"))
        ]
    )
    table = report.policy_contrasts(rows, [("R1", "empty")], n_resamples=50)
    # 8 rows: the empty memory is one call per template (2), R1 one per task (4).
    assert table.loc[0, "n_calls"] == 6 and table.loc[0, "estimate"] == pytest.approx(-1.0)
