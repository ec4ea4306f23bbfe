"""Tables of notebook 07 (DHD replay), computed from replay and proposal rows.

Every function is a pure function of the rows a run publishes (``07_dhd_replay_rows.csv`` and
its proposals), so the tables can be recomputed from those files alone. Intervals: the helpful
share among flips gets a cluster-robust t interval over *problems* (messages of one problem
move together) and, beside it, a Wilson interval (flips treated as independent, the only interval
the authors' released counts allow, so the two can be compared).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import seaborn as sns

from deliberation.experiments.dhd.labels import (
    CATEGORIES,
    helpful_share,
    leave_one_out_effects,
    repeated_tests,
    single_message_effects,
    six_cells,
    trajectory_values,
    wilson_interval,
    with_proposals,
)
from deliberation.publish.plots import (
    Figure,
    footnote,
    interval_errors,
    legend_outside,
    mark_small_samples,
    note_all_withheld,
    note_no_data,
    percent_axis,
)
from deliberation.stats import mean_of
from deliberation.stats.cluster_t import cluster_t
from deliberation.stats.small_samples import MIN_CLUSTERS, withhold_inference

_PROPOSALS = ("wrong", "correct")


def labelled_effects(rows: pd.DataFrame, proposals: pd.DataFrame) -> pd.DataFrame:
    """Single-message and leave-one-out effects in one frame (column ``design``: ``single`` or
    ``loo``), each joined with its message's proposal correctness."""
    single = single_message_effects(rows).assign(design="single")
    loo = leave_one_out_effects(rows).assign(design="loo")
    columns = ["problem", "benchmark", "design", "k", "message", "effect", "category"]
    columns += ["calls"] if "calls" in single and "calls" in loo else []
    effects = pd.concat([single[columns], loo[columns]], ignore_index=True)
    return with_proposals(effects, proposals)


def cells_table(effects: pd.DataFrame) -> pd.DataFrame:
    """The six cells (proposal wrong/correct x helpful/neutral/harmful), with unscored and
    unreadable messages counted, per design and benchmark, with the problems the messages come
    from (``n_clusters``) and, when the effects name their calls, the distinct integrator calls
    behind each row (``n_calls``)."""
    tables = []
    for design, rows in effects.groupby("design", sort=False):
        proposals = rows[["problem", "message", "proposal_correct"]].drop_duplicates()
        cells = six_cells(rows.drop(columns=["proposal", "proposal_correct"]), proposals)
        groups = rows.groupby(["benchmark", "proposal"])
        index = pd.MultiIndex.from_frame(cells[["benchmark", "proposal"]])
        cells["n_clusters"] = groups["problem"].nunique().reindex(index).to_numpy()
        if "calls" in rows:
            calls = groups["calls"].agg(lambda sets: len(frozenset().union(*sets)))
            cells["n_calls"] = calls.reindex(index).to_numpy()
        tables.append(cells.assign(design=design))
    columns = ["design", "benchmark", "proposal", *CATEGORIES, "unscored", "n_clusters"]
    if not tables:  # no replay at all (e.g. every recruiter reply failed): an empty table
        return pd.DataFrame(columns=columns)
    table = pd.concat(tables, ignore_index=True)
    return table[[*columns, *(["n_calls"] if "n_calls" in table else [])]]


_FLIP_SHARE_COLUMNS = [
    "design", "benchmark", "proposal", "helpful", "neutral", "harmful", "flips",
    "helpful_share", "cluster_low", "cluster_high", "wilson_low", "wilson_high", "n_clusters",
    "n_calls",
]  # fmt: skip


def flip_share_table(
    effects: pd.DataFrame, *, n_resamples: int = 10_000, seed: int = 0
) -> pd.DataFrame:
    """Helpful share among flips per design, benchmark (and pooled) and proposal correctness:
    counts, the share, a problem-clustered interval (the cluster-robust t: ``cluster_low``,
    ``cluster_high``) and a Wilson interval, and
    the problems the flips come from (``n_clusters``: both intervals are withheld below the
    cluster floor, as in every other table). ``n_resamples`` and ``seed`` are unused since the
    cluster t replaced the bootstrap (kept for the notebook's call)."""
    del n_resamples, seed
    rows = []
    for design, by_design in effects.groupby("design", sort=False):
        cells = cells_table(by_design)
        shares = helpful_share(cells.drop(columns="design"))
        for record in shares.to_dict("records"):
            if record["proposal"] not in _PROPOSALS:
                continue
            scope = by_design[by_design["proposal"] == record["proposal"]]
            if record["benchmark"] != "pooled":
                scope = scope[scope["benchmark"] == record["benchmark"]]
            flips = scope[scope["category"].isin(["helpful", "harmful"])]
            low = high = float("nan")
            if len(flips):
                result = cluster_t(
                    flips.assign(helpful=(flips["category"] == "helpful").astype(float)),
                    mean_of("helpful"),
                    cluster="problem",
                )
                low, high = result.low, result.high
            rows.append(
                {
                    "design": design,
                    "benchmark": record["benchmark"],
                    "proposal": record["proposal"],
                    "helpful": int(record["helpful"]),
                    "neutral": int(record["neutral"]),
                    "harmful": int(record["harmful"]),
                    "flips": int(record["flips"]),
                    "helpful_share": record["helpful_share"],
                    "cluster_low": low,
                    "cluster_high": high,
                    "wilson_low": record["share_low"],
                    "wilson_high": record["share_high"],
                    "n_clusters": int(flips["problem"].nunique()),
                    **(
                        {"n_calls": len(frozenset().union(*flips["calls"]))}
                        if "calls" in flips
                        else {}
                    ),
                }
            )
    table = pd.DataFrame(rows, columns=_FLIP_SHARE_COLUMNS)  # no flip at all: an empty table
    if len(table) and table["n_calls"].isna().all():  # effects that name no call
        table = table.drop(columns="n_calls")
    return withhold_inference(table)


def loo_by_k_table(effects: pd.DataFrame) -> pd.DataFrame:
    """Leave-one-out categories by pool size K (each message counted once per K) and pooled
    over K, per proposal correctness, with the rate among eligible (scored) messages, the
    problems they come from (``n_clusters``: messages of one problem share its pool, so the
    writer withholds an interval below the cluster minimum) and, when the effects name their
    calls, the distinct integrator calls behind them (``n_calls``)."""
    loo = effects[(effects["design"] == "loo") & (effects["category"] != "unscored")]
    loo = loo[loo["proposal"].isin(_PROPOSALS)]
    pooled = loo.assign(k="pooled")
    both = pd.concat([loo.assign(k=loo["k"].astype(int).astype(str)), pooled], ignore_index=True)
    table = both.groupby(["k", "proposal", "category"]).size().unstack(fill_value=0)
    for column in CATEGORIES:
        if column not in table.columns:
            table[column] = 0
    table = table[list(CATEGORIES)].reset_index()
    eligible = table[list(CATEGORIES)].sum(axis=1)
    for column in CATEGORIES:
        table[f"{column}_rate"] = table[column] / eligible
    table = table.assign(eligible=eligible)
    groups = both.groupby(["k", "proposal"])
    problems = groups["problem"].nunique()
    index = pd.MultiIndex.from_frame(table[["k", "proposal"]])
    table["n_clusters"] = problems.reindex(index).fillna(0).astype(int).to_numpy()
    if "calls" in both:
        calls = groups["calls"].agg(lambda sets: len(frozenset().union(*sets)))
        table["n_calls"] = calls.reindex(index).fillna(0).astype(int).to_numpy()
    return table


def repeated_table(
    rows: pd.DataFrame,
    proposals: pd.DataFrame,
    *,
    n_permutations: int = 10_000,
    seed: int = 0,
    q_threshold: float = 0.05,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Repeated replays: per message, its trajectory value (mean full-minus-removal over
    blocks), the within-block max-statistic test and the problem's BH q-value; and a summary of
    repeatable effects (problem q < threshold, message's own adjusted p < threshold) by
    proposal correctness and direction, with the distinct calls its messages' values read
    (``n_calls``: their removal calls and their problems' full calls)."""
    columns = ["problem", "benchmark", "message", "proposal", "value", "blocks", "effect"]
    columns += ["p_raw", "p_adjusted", "q_problem", "repeatable", "direction"]
    summary_columns = ["benchmark", "proposal", "direction", "messages", "repeatable"]
    if "block" in rows and rows["block"].isna().all() or rows.empty:  # no repeated replay
        return (
            pd.DataFrame(columns=columns),
            pd.DataFrame(columns=[*summary_columns, "problems_tested"]),
        )
    values = trajectory_values(rows)
    tests = repeated_tests(rows, n_permutations=n_permutations, seed=seed)
    messages = with_proposals(values.merge(tests, on=["problem", "message"], how="left"), proposals)
    repeatable = (messages["q_problem"] < q_threshold) & (messages["p_adjusted"] < q_threshold)
    messages["repeatable"] = repeatable
    messages["direction"] = messages["value"].map(
        lambda v: "helpful" if v > 0 else ("harmful" if v < 0 else "neutral")
    )
    summary = (
        messages.groupby(["benchmark", "proposal", "direction"])
        .agg(messages=("message", "size"), repeatable=("repeatable", "sum"))
        .reset_index()
    )
    summary["problems_tested"] = messages["problem"].nunique()
    if "key" in rows:  # a message's value reads its removal calls and its problem's full calls
        repeated = rows[rows["block"].notna() & rows["key"].notna()]
        full = repeated[repeated["arm"] == "full"].groupby("problem")["key"].agg(frozenset)
        removed = repeated[repeated["arm"].str.startswith("drop-")]
        dropped = removed.assign(message=removed["arm"].str.removeprefix("drop-").astype(int))
        own = dropped.groupby(["problem", "message"])["key"].agg(frozenset)
        keys = [
            own.get((p, int(m)), frozenset()) | full.get(p, frozenset())
            for p, m in zip(messages["problem"], messages["message"], strict=True)
        ]
        calls = pd.Series(keys, index=messages.index).groupby(
            [messages["benchmark"], messages["proposal"], messages["direction"]]
        )
        counts = calls.agg(lambda sets: len(frozenset().union(*sets)))
        index = pd.MultiIndex.from_frame(summary[["benchmark", "proposal", "direction"]])
        summary["n_calls"] = counts.reindex(index).to_numpy()
    return messages[columns], summary


DESIGN_NAMES = {"single": "single-message replay", "loo": "in-pool leave-one-out"}
FLIP_NOTE = (
    "A flip: the integrator's correctness changes with the message. Helpful = right only with "
    "it; harmful = right only without it. Dotted line at 50% = as many helpful as harmful "
    "flips (no direction), not a chance level."
)


def plot_flip_shares(
    shares: pd.DataFrame, title: str, *, min_clusters: int = MIN_CLUSTERS
) -> Figure:
    """Helpful share among flips (%) by benchmark (pooled last, and only when there is more
    than one benchmark: with one, "pooled" is the same data), wrong and correct proposals side
    by side, single-message and leave-one-out in two panels, problem-clustered intervals (none
    from fewer than ``min_clusters`` problems: the n is printed instead). The dotted line at
    50% is no direction (as many harmful flips as helpful), not a chance level."""
    # Without any flip (e.g. no pool could be drawn), both panels are drawn empty, saying so.
    designs = [d for d in ("single", "loo") if d in set(shares["design"])] or ["single", "loo"]
    fig = Figure(figsize=(5 * len(designs) + 1.6, 4.2), layout="constrained")
    axes = fig.subplots(1, len(designs), squeeze=False, sharey=True)
    colours = dict(zip(_PROPOSALS, sns.color_palette("colorblind", 2), strict=True))
    for ax, design in zip(axes[0], designs, strict=True):
        rows = shares[shares["design"] == design]
        benchmarks = [b for b in rows["benchmark"].unique() if b != "pooled"]
        if len(benchmarks) != 1 and (rows["benchmark"] == "pooled").any():
            benchmarks.append("pooled")
        ax.set_title(DESIGN_NAMES[design], fontsize=10)
        one_note = note_all_withheld(ax, rows.get("n_clusters"), min_clusters=min_clusters)
        for offset, proposal in ((-0.18, "wrong"), (0.18, "correct")):
            part = rows[rows["proposal"] == proposal].set_index("benchmark").reindex(benchmarks)
            x = np.arange(len(benchmarks)) + offset
            share = 100 * part["helpful_share"].to_numpy(dtype=float)
            n_clusters = part.get("n_clusters")
            err = interval_errors(share / 100, part["cluster_low"], part["cluster_high"],
                                  n_clusters, min_clusters=min_clusters, scale=100,
                                  figure=fig)  # fmt: skip
            err = np.clip(err, 0, None)  # a share at 0 or 1 can sit a rounding error outside
            ax.errorbar(x, share, yerr=err, fmt="o", capsize=3, color=colours[proposal],
                        label=f"{proposal} proposal")  # fmt: skip
            if not one_note:
                mark_small_samples(ax, x, share, n_clusters, min_clusters=min_clusters,
                                   horizontal=True)  # fmt: skip
        ax.axhline(50, color="grey", lw=0.8, ls=":")
        if not benchmarks:
            note_no_data(ax, "no flips in this run")
        ax.set_xticks(np.arange(len(benchmarks)), benchmarks, rotation=20)
        ax.set_xlim(-0.6, max(0.6, len(benchmarks) - 0.4))
        ax.set_ylim(-2, 102)  # a share is read against the whole scale; 0% and 100% stay whole
    axes[0][0].set_ylabel("helpful share among flips (%)")
    legend_outside(axes[0][-1], fontsize=8)
    fig.suptitle(title)
    footnote(fig, FLIP_NOTE)
    return fig


def loo_rate_intervals(by_k: pd.DataFrame) -> pd.DataFrame:
    """:func:`loo_by_k_table` with a Wilson 95% interval on each category's rate (messages
    treated as independent: labelled so wherever it is shown)."""
    out = by_k.copy()
    for category in CATEGORIES:
        bounds = [
            wilson_interval(int(c), int(n))
            for c, n in zip(out[category], out["eligible"], strict=True)
        ]
        out[f"{category}_low"] = [low for low, _ in bounds]
        out[f"{category}_high"] = [high for _, high in bounds]
    return withhold_inference(out)


def plot_loo_by_k(by_k: pd.DataFrame, title: str, *, min_clusters: int = MIN_CLUSTERS) -> Figure:
    """Helpful and harmful rates (%) among eligible messages by pool size K, with Wilson 95%
    intervals (messages as independent), none where a K's messages come from fewer than
    ``min_clusters`` problems (its n printed instead); integer K ticks; a y axis fitted to the
    rates (intervals included), not 0-100, so small rates are readable."""
    rows = loo_rate_intervals(by_k[by_k["k"] != "pooled"])
    fig = Figure(figsize=(7, 3.9), layout="constrained")
    ax = fig.subplots()
    ks = sorted(rows["k"].astype(int).unique())
    offsets = {("wrong", "helpful"): -0.09, ("wrong", "harmful"): -0.03,
               ("correct", "helpful"): 0.03, ("correct", "harmful"): 0.09}  # fmt: skip
    colours = dict(zip(_PROPOSALS, sns.color_palette("colorblind", 2), strict=True))
    tops: list[float] = []
    one_note = note_all_withheld(ax, rows.get("n_clusters"), min_clusters=min_clusters)
    for proposal, marker in (("wrong", "o"), ("correct", "s")):
        part = rows[rows["proposal"] == proposal].sort_values("k", key=lambda k: k.astype(int))
        for category, style in (("helpful", "-"), ("harmful", "--")):
            rate = 100 * part[f"{category}_rate"].to_numpy(dtype=float)
            n_clusters = part.get("n_clusters")
            err = interval_errors(rate / 100, part[f"{category}_low"], part[f"{category}_high"],
                                  n_clusters, min_clusters=min_clusters, scale=100,
                                  figure=fig)  # fmt: skip
            err = np.clip(err, 0, None)  # a rate at 0 or 1 can sit a rounding error outside
            tops += list(rate + np.nan_to_num(err[1]))
            x = part["k"].astype(int).to_numpy() + offsets[(proposal, category)]
            ax.errorbar(
                x, rate, yerr=err, fmt=style, marker=marker, capsize=2,
                color=colours[proposal], label=f"{proposal} proposal, {category}",
            )  # fmt: skip
            if category == "helpful" and not one_note:  # one n per point pair, not two
                mark_small_samples(ax, x, rate, n_clusters, min_clusters=min_clusters)
    if not ks:
        note_no_data(ax, "no leave-one-out replays in this run")
    ax.set_xticks(ks, [str(k) for k in ks])
    ax.set_xlabel("pool size K (messages the integrator sees)")
    ax.set_ylabel("rate among eligible messages (%)")
    percent_axis(ax, tops)
    legend_outside(ax, fontsize=8)
    fig.suptitle(title)
    footnote(fig, "Helpful: right with the message, wrong without it; harmful: the reverse. "
                  "Solid = helpful, dashed = harmful.")  # fmt: skip
    return fig
