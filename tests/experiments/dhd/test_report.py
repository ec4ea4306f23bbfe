"""Notebook 07's figures (deliberation.experiments.dhd.report): percentages like notebooks 02-05, integer
pool sizes, intervals on every LOO rate, and no "pooled" beside a single benchmark."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from deliberation.experiments.dhd import report


def shares(benchmarks):
    rows = []
    for design in ("single", "loo"):
        for benchmark in [*benchmarks, "pooled"]:
            for proposal, share in (("wrong", 0.4), ("correct", 0.75)):
                rows.append({"design": design, "benchmark": benchmark, "proposal": proposal,
                             "helpful_share": share, "cluster_low": share - 0.1,
                             "cluster_high": share + 0.1})  # fmt: skip
    return pd.DataFrame(rows)


def test_helpful_share_shows_pooled_only_beside_several_benchmarks_and_in_percent():
    one = report.plot_flip_shares(shares(["synthetic"]), "t")
    assert [t.get_text() for t in one.axes[0].get_xticklabels()] == ["synthetic"]
    assert one.axes[0].get_ylim()[1] > 100 and "(%)" in one.axes[0].get_ylabel()
    points = one.axes[0].lines[0].get_ydata()
    assert np.allclose(points, [40.0])
    two = report.plot_flip_shares(shares(["a", "b"]), "t")
    assert [t.get_text() for t in two.axes[1].get_xticklabels()] == ["a", "b", "pooled"]
    plt.close("all")


def test_loo_by_k_has_integer_ticks_wilson_intervals_and_a_title_apart_from_the_axes():
    by_k = pd.DataFrame(
        [
            {"k": k, "proposal": p, "helpful": h, "neutral": 10, "harmful": 2}
            for k in ("2", "3", "pooled")
            for p, h in (("wrong", 3), ("correct", 0))
        ]
    )
    by_k["eligible"] = by_k[["helpful", "neutral", "harmful"]].sum(axis=1)
    by_k["n_clusters"] = 6
    for column in ("helpful", "neutral", "harmful"):
        by_k[f"{column}_rate"] = by_k[column] / by_k["eligible"]
    fig = report.plot_loo_by_k(by_k, "LOO effects")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["2", "3"]
    assert fig.get_suptitle() == "LOO effects" and ax.get_title() != fig.get_suptitle()
    assert len(ax.containers) == 4  # helpful and harmful, wrong and correct, each with bars
    intervals = report.loo_rate_intervals(by_k)
    wrong = intervals[(intervals["k"] == "2") & (intervals["proposal"] == "wrong")].iloc[0]
    assert wrong["helpful_low"] < 3 / 15 < wrong["helpful_high"]
    zero = intervals[(intervals["k"] == "2") & (intervals["proposal"] == "correct")].iloc[0]
    assert zero["helpful_low"] == 0 and zero["helpful_high"] > 0
    plt.close("all")


def test_six_cells_of_a_run_without_any_replay_is_an_empty_table_with_its_columns():
    """A real model whose every recruiter reply failed has no pool, so no replay: the notebook
    writes an empty six-cells table instead of stopping."""
    empty = pd.DataFrame(columns=["problem", "benchmark", "design", "k", "message", "effect",
                                  "category", "proposal", "proposal_correct"])  # fmt: skip
    table = report.cells_table(empty)
    assert table.empty
    assert list(table.columns[:3]) == ["design", "benchmark", "proposal"]


def test_every_analysis_of_notebooks_07_and_08_gives_an_empty_table_when_no_pool_was_drawn(
    tmp_path, monkeypatch
):
    """A small real model may give no usable recruiter reply at all (SmolLM2-135M copies the
    JSON template, so its five role names repeat): no pool, no replay. The notebooks must still
    finish, with empty tables, and not stop at the first concatenation of nothing."""
    from deliberation.experiments.dhd import masking, selection
    from deliberation.experiments.dhd.labels import trajectory_values
    from deliberation.experiments.dhd.run import run_profile
    from deliberation.inference import open_run
    from deliberation.profiles.profile import load_profile

    monkeypatch.setenv("DELIBERATION_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("DELIBERATION_OUTPUT_ROOT", str(tmp_path / "out"))
    settings, client = open_run(load_profile("smoke"))
    results = run_profile(settings, client)
    assert len(results.replays)  # the columns of a real run, then no row
    replays, proposals = results.replays.iloc[0:0], results.proposals.iloc[0:0]
    effects = report.labelled_effects(replays, proposals)
    assert report.cells_table(effects).empty
    shares = report.flip_share_table(effects, n_resamples=20)
    assert shares.empty and "helpful_share" in shares
    plt.close(report.plot_flip_shares(shares, "empty"))
    assert report.loo_rate_intervals(report.loo_by_k_table(effects)).empty
    messages, summary = report.repeated_table(replays, proposals, n_permutations=20)
    assert messages.empty and summary.empty and "repeatable" in summary
    values = trajectory_values(replays)
    assert masking.choose_cases(values, proposals, per_cell=1).empty
    per_fold = selection.cross_fitted_selection(replays, proposals)
    assert per_fold.empty and "held_out_block" in per_fold
    assert selection.policy_accuracy(per_fold, n_resamples=20).empty
    assert selection.selector_gains(per_fold, n_resamples=20).empty


def test_flip_shares_count_the_problems_and_the_distinct_calls_they_compare():
    def replay(problem, arm, message, correct, key):
        return {"problem": problem, "benchmark": "synthetic", "k": None, "message": message,
                "arm": arm, "replicate": 0, "block": None, "answer": "x", "correct": correct,
                "valid": 1, "error": "", "key": key}  # fmt: skip

    rows = pd.DataFrame(
        [
            replay("p1", "solo", None, 0, "solo-1"),
            replay("p1", "single", 0, 1, "a"),  # helpful
            replay("p1", "single", 1, 1, "b"),  # helpful
            replay("p2", "solo", None, 1, "solo-2"),
            replay("p2", "single", 0, 0, "c"),  # harmful
        ]
    )
    proposals = pd.DataFrame(
        {"problem": ["p1", "p1", "p2"], "message": [0, 1, 0], "proposal_correct": [0, 0, 0]}
    )
    effects = report.labelled_effects(rows, proposals)
    table = report.flip_share_table(effects, n_resamples=20)
    wrong = table[(table["design"] == "single") & (table["benchmark"] == "synthetic")].iloc[0]
    assert wrong["flips"] == 3 and wrong["n_clusters"] == 2
    assert wrong["n_calls"] == 5  # three single-message calls and the two solo calls


def _loo_effects(problems: int) -> pd.DataFrame:
    rows = []
    for p in range(problems):
        for k in (2, 3):
            for m, category in enumerate(("helpful", "neutral", "harmful")):
                rows.append({"problem": f"p{p}", "design": "loo", "k": k, "message": m,
                             "category": category, "proposal": "wrong",
                             "calls": frozenset({f"p{p}-k{k}-m{m}", f"p{p}-k{k}-full"})})  # fmt: skip
    return pd.DataFrame(rows)


def test_loo_by_k_counts_its_problems_and_calls_and_shows_no_interval_below_the_minimum():
    """Messages of one problem share its pool: the table says how many problems (clusters) and
    distinct calls each rate rests on, the writer withholds its Wilson bounds below the cluster
    minimum, and the figure draws no error bar there."""
    from deliberation.stats.small_samples import MIN_CLUSTERS

    few = report.loo_by_k_table(_loo_effects(MIN_CLUSTERS - 1))
    assert report.loo_rate_intervals(few)["helpful_low"].isna().all()
    few = report.loo_by_k_table(_loo_effects(3))
    row = few[(few["k"] == "2") & (few["proposal"] == "wrong")].iloc[0]
    assert row["n_clusters"] == 3 and row["eligible"] == 9
    assert row["n_calls"] == 3 * 4  # three messages' removal calls + the full pool's, per problem
    pooled = few[(few["k"] == "pooled") & (few["proposal"] == "wrong")].iloc[0]
    assert pooled["n_clusters"] == 3 and pooled["n_calls"] == 2 * 3 * 4
    written = report.loo_rate_intervals(few)  # 3 problems: at the floor, intervals shown
    assert written["helpful_low"].notna().all() and (written["interval"] == "").all()
    fig = report.plot_loo_by_k(few, "LOO effects", min_clusters=5)
    bars = [c for c in fig.axes[0].containers if c.has_yerr]
    assert bars and all(np.isnan(seg).all() for c in bars for seg in c.lines[2][0].get_segments())
    enough = report.loo_by_k_table(_loo_effects(6))
    assert not report.loo_rate_intervals(enough)["helpful_low"].isna().any()
    plt.close("all")


def test_six_cells_say_how_many_problems_and_distinct_calls_each_row_rests_on():
    effects = _loo_effects(3).assign(benchmark="synthetic", proposal_correct=0)
    table = report.cells_table(effects)
    row = table.iloc[0]
    assert (row["design"], row["helpful"], row["neutral"], row["harmful"]) == ("loo", 6, 6, 6)
    assert row["n_clusters"] == 3 and row["n_calls"] == 3 * 2 * 4
    assert report.cells_table(effects.drop(columns="calls")).columns[-1] == "n_clusters"


def test_repeated_replay_summary_counts_the_calls_its_messages_read(tmp_path, monkeypatch):
    """Each message's trajectory value reads its own removal calls and its problem's full calls:
    the summary row of a (proposal, direction) counts those calls, distinct, over its messages."""
    from deliberation.experiments.dhd.run import run_profile
    from deliberation.inference import open_run
    from deliberation.profiles.profile import load_profile

    monkeypatch.setenv("DELIBERATION_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("DELIBERATION_OUTPUT_ROOT", str(tmp_path / "out"))
    settings, client = open_run(load_profile("smoke"))
    results = run_profile(settings, client)
    replays, proposals = results.replays, results.proposals
    messages, summary = report.repeated_table(replays, proposals, n_permutations=20)
    assert len(summary) and summary["n_calls"].gt(0).all()
    repeated = replays[replays["block"].notna()]
    for row in summary.itertuples(index=False):
        mine = messages[(messages["benchmark"] == row.benchmark)
                        & (messages["proposal"] == row.proposal)
                        & (messages["direction"] == row.direction)]  # fmt: skip
        read = set()
        for problem, message in zip(mine["problem"], mine["message"], strict=True):
            of_problem = repeated[repeated["problem"] == problem]
            arms = of_problem["arm"].isin(["full", f"drop-{int(message)}"])
            read |= set(of_problem.loc[arms, "key"])
        assert row.n_calls == len(read)
