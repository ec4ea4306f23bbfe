"""Tables and figures of the natural-discussion experiment (notebook 06), from its rows.

Every interval is a 95% cluster-robust t interval (:mod:`deliberation.stats.cluster_t`, G - 1
df) over templates (CrossProfile) or tasks (HiddenBench), the ``template`` column, never rows;
none below the cluster floor. Invalid
votes and answers stay in every mean as wrong (``correct = 0``) and are counted in
:func:`invalid_table`.

Measures (one value per discussion, :func:`outcomes`):

- ``group share (initial|final)``: share of the agents whose vote is the key;
- ``group majority (initial|final)``: 1 when the most common vote is the key and leads strictly
  (a tie, or a plurality of invalid votes, is 0);
- ``decision: <policy>``: the decision call's correctness reading the full transcript, every
  fact, or a memory policy;
- ``private facts stated in full`` / ``... in part``: share of the discussion's private facts
  with that disclosure label (discussions without private facts have no value).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd
import seaborn as sns

from deliberation.memory_policies import policy_legend, registered_policies
from deliberation.publish.plots import (
    Figure,
    chance_level,
    draw_chance,
    footnote,
    interval_errors,
    label_bars_without_interval,
    legend_outside,
    mark_small_samples,
    note_all_withheld,
    note_no_data,
)
from deliberation.stats import mean_of, paired_differences
from deliberation.stats.cluster_t import cluster_t_many
from deliberation.stats.small_samples import MIN_CLUSTERS, distinct_calls, with_same_calls

_DISCUSSION = ["profile", "benchmark", "task", "template", "variant", "prompt", "replicate"]
FULL_PRIVATE, PARTIAL_PRIVATE = "private facts stated in full", "private facts stated in part"
_INTERVAL_COLUMNS = ["estimate", "low", "high", "interval", "n_clusters"]
_CALLS = "_calls"  # outcomes: the request keys behind each value (the tables count them)
GROUP_MEASURES = (
    "group share (initial)",
    "group share (final)",
    "group majority (final)",
    "decision: every-fact",
)
POLICY_PAIRS = (("transcript", "empty"), ("R1", "B3"), ("R1", "B4"), ("R1", "Random"))


def decision_measures(table: pd.DataFrame) -> list[str]:
    """The decision measures of an accuracy table: transcript, empty, every fact, then the
    policies in the order they appear."""
    found = [m for m in table["measure"].unique() if m.startswith("decision: ")]
    first = ["decision: transcript", "decision: empty", "decision: every-fact"]
    return [m for m in first if m in found] + [m for m in found if m not in first]


def group_votes(rows: pd.DataFrame) -> pd.DataFrame:
    """Per discussion and vote stage: agents, invalid votes, share correct, majority correct."""
    votes = rows[rows["kind"] == "vote"]
    out = []
    for key, group in votes.groupby([*_DISCUSSION, "stage"], sort=True, dropna=False):
        counts = group.loc[group["valid"] == 1, "answer"].value_counts()
        leads = len(counts) > 0 and (len(counts) == 1 or counts.iloc[0] > counts.iloc[1])
        leader_right = leads and group.loc[group["answer"] == counts.index[0], "correct"].max()
        majority = int(bool(leader_right))
        out.append(
            dict(zip([*_DISCUSSION, "stage"], key, strict=True))
            | {
                "agents": len(group),
                "invalid": int((group["valid"] == 0).sum()),
                "share_correct": float(group["correct"].mean()),
                "majority_correct": majority,
            }
            | ({_CALLS: _keys(group)} if "key" in group else {})
        )
    return pd.DataFrame(out)


def outcomes(rows: pd.DataFrame, disclosure: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per (discussion, measure) with its ``value`` (module docstring). Failed rows
    (``valid`` empty) and the disclosure of failed discussions are left out of every measure."""
    rows = rows[rows["valid"].notna()]
    if disclosure is not None:
        disclosure = disclosure[disclosure["label"] != "failed"]
    parts = []
    groups = group_votes(rows)
    for stage in ("initial", "final"):
        mine = groups[groups["stage"] == stage]
        for column, name in (
            ("share_correct", "group share"),
            ("majority_correct", "group majority"),
        ):
            parts.append(
                mine[_DISCUSSION].assign(
                    measure=f"{name} ({stage})",
                    value=mine[column],
                    **({_CALLS: mine[_CALLS]} if _CALLS in mine else {}),
                )
            )
    decisions = rows[rows["kind"] == "decision"]
    parts.append(
        decisions[_DISCUSSION].assign(
            measure="decision: " + decisions["policy"],
            value=decisions["correct"].astype(float),
            **({_CALLS: [_keys([k]) for k in decisions["key"]]} if "key" in decisions else {}),
        )
    )
    if disclosure is not None and len(disclosure):
        private = disclosure[disclosure["private"] == 1]
        rates = private.groupby(_DISCUSSION, dropna=False)[["full", "partial"]].mean().reset_index()
        calls = {}
        if "keys" in private:  # a discussion's rate is read from its message calls
            keys = private.groupby(_DISCUSSION, dropna=False)["keys"].first().reset_index()
            calls = {_CALLS: [_split_keys(k) for k in keys["keys"]]}
        for measure, column in ((FULL_PRIVATE, "full"), (PARTIAL_PRIVATE, "partial")):
            parts.append(rates[_DISCUSSION].assign(measure=measure, value=rates[column], **calls))
    frame = pd.concat(parts, ignore_index=True)
    frame["value"] = frame["value"].astype(float)
    return frame


def _split_keys(joined: object) -> frozenset[str]:
    """The request keys of a ``;``-joined ``keys`` cell (none for a blank one)."""
    return frozenset(k for k in joined.split(";") if k) if isinstance(joined, str) else frozenset()


def _keys(keys: Sequence[object] | pd.DataFrame) -> frozenset[str]:
    """The request keys behind some rows, or of a list of keys (unsent rows have none)."""
    values = keys["key"] if isinstance(keys, pd.DataFrame) else keys
    return frozenset(k for k in values if isinstance(k, str) and k)


def _interval_table(
    frame: pd.DataFrame,
    keys: Sequence[str],
    value: str,
    n_resamples: int,
    seed: int,
    *,
    outcome_of_call: Callable[[tuple], bool] | None = None,
) -> pd.DataFrame:
    """Mean of ``value`` per combination of ``keys`` with its cluster-robust t interval (none
    below the cluster floor: ``interval`` says why), and
    (when ``frame`` says which calls each value rests on, :data:`_CALLS`) ``n_rows`` and
    ``n_calls``: identical prompts are one cached call, so rows can repeat one answer. With
    ``outcome_of_call`` (true for the combinations whose value is each call's own outcome, a
    decision's correctness) ``same_calls_as`` names the earlier such row that read the very
    same calls: decisions on two memories that came out identical are one observation."""
    combos = frame[list(keys)].drop_duplicates().sort_values(list(keys))
    statistics = {
        str(i): mean_of(value, dict(zip(keys, combo, strict=True)))
        for i, combo in enumerate(combos.itertuples(index=False, name=None))
    }
    if not statistics:
        return pd.DataFrame(columns=[*keys, *_INTERVAL_COLUMNS])
    del n_resamples, seed  # the cluster t draws nothing (kept for the notebook's calls)
    results = cluster_t_many(frame, statistics, "template")
    counts, read = None, {}
    if _CALLS in frame:  # values averaged (decisions, or discussions for votes), their calls
        counts = {}
        for combo, part in frame.groupby(list(keys), sort=False, dropna=False):
            calls = [c for c in part[_CALLS] if isinstance(c, frozenset)]
            read[combo] = frozenset().union(*calls) if calls else None
            counts[combo] = (len(part), None if read[combo] is None else len(read[combo]))
    rows = []
    for (name, result), combo in zip(
        results.items(), combos.itertuples(index=False, name=None), strict=True
    ):
        del name
        row = dict(zip(keys, combo, strict=True)) | {
            "estimate": result.estimate,
            "low": result.low,
            "high": result.high,
            "interval": result.note,
            "n_clusters": result.n_clusters,
        }
        if counts is not None:
            row["n_rows"], row["n_calls"] = counts[combo]
        rows.append(row)
    extra = ["n_rows", "n_calls"] if _CALLS in frame else []
    table = pd.DataFrame(rows, columns=[*keys, *_INTERVAL_COLUMNS, *extra])
    if counts is None or outcome_of_call is None:
        return table
    combos = [tuple(c) for c in table[list(keys)].itertuples(index=False, name=None)]
    calls = [read[c] if outcome_of_call(c) else None for c in combos]
    return with_same_calls(table, calls, keys)


def accuracy_table(
    rows: pd.DataFrame,
    disclosure: pd.DataFrame | None = None,
    *,
    n_resamples: int = 10_000,
    seed: int = 0,
) -> pd.DataFrame:
    """Every measure by benchmark and prompt variant, with cluster-robust t intervals, the
    values and distinct calls behind each (``n_rows``, ``n_calls``) and, for the vote and
    decision measures, ``chance`` (a uniform guess: the mean of 1 / number of options, in the
    units of ``estimate``; empty for disclosure rates, which have none)."""
    table = _interval_table(
        outcomes(rows, disclosure),
        ["profile", "benchmark", "prompt", "measure"],
        "value",
        n_resamples,
        seed,
        outcome_of_call=lambda combo: str(combo[-1]).startswith("decision: "),
    )
    if "n_options" not in rows or table.empty:
        return table
    answered = rows[rows["n_options"].notna()]
    guess = (1 / answered["n_options"].astype(float)).groupby(answered["benchmark"]).mean()
    chosen = table["measure"].str.startswith(("group share", "group majority", "decision: "))
    table["chance"] = table["benchmark"].map(guess).where(chosen)
    return table


def disclosure_table(
    disclosure: pd.DataFrame,
    by: Sequence[str] = ("profile", "benchmark", "prompt", "private"),
    *,
    n_resamples: int = 10_000,
    seed: int = 0,
) -> pd.DataFrame:
    """Rates of full, partial and no disclosure per cell of ``by`` (facts pooled within a
    cell; templates resampled), with ``n_rows`` and ``n_calls`` (the distinct message calls
    the labels were read from) when the rows carry their discussions' ``keys``."""
    long = disclosure.melt(
        id_vars=[c for c in disclosure.columns if c not in ("full", "partial", "none")],
        value_vars=["full", "partial", "none"],
        var_name="disclosure",
        value_name="rate",
    )
    long["rate"] = long["rate"].astype(float)
    if "keys" in long:  # each fact's label is read from its discussion's message calls
        long[_CALLS] = [_split_keys(k) for k in long.pop("keys")]
    return _interval_table(long, [*by, "disclosure"], "rate", n_resamples, seed)


def paired_effect(
    rows: pd.DataFrame,
    disclosure: pd.DataFrame | None = None,
    *,
    a: str = "evidence-first",
    b: str = "plain",
    measures: Sequence[str] | None = None,
    n_resamples: int = 10_000,
    seed: int = 0,
) -> pd.DataFrame:
    """Prompt ``a`` minus prompt ``b`` per benchmark and measure, paired on (task, replicate):
    both variants of a task are discussed with fresh seeds, and only tasks with both count;
    ``n_calls``: the distinct calls both prompts' paired values rest on."""
    frame = outcomes(rows, disclosure)
    if measures is not None:
        frame = frame[frame["measure"].isin(measures)]
    pairs, differences, calls = [], {}, {}
    for (name, benchmark, measure), group in frame.groupby(
        ["profile", "benchmark", "measure"], sort=True
    ):
        if not {a, b} <= set(group["prompt"]):
            continue
        both = group.groupby(["template", "task", "replicate"])["prompt"].transform("nunique") == 2
        diff = paired_differences(
            group[both], a, b, by="prompt", value="value", pair_on=["task", "replicate"]
        )
        pairs.append(diff.assign(profile=name, benchmark=benchmark, measure=measure))
        differences[(name, benchmark, measure)] = len(diff)
        if _CALLS in group:  # the calls of both prompts' values the differences read
            read = [c for c in group.loc[both & group["prompt"].isin([a, b]), _CALLS]
                    if isinstance(c, frozenset)]  # fmt: skip
            calls[(name, benchmark, measure)] = len(frozenset().union(*read)) if read else None
    if not pairs:  # no task discussed under both prompts: the header, counts included
        columns = ["profile", "benchmark", "measure", *_INTERVAL_COLUMNS, "n_rows", "n_calls"]
        return pd.DataFrame(columns=[*columns, "contrast"])
    keys = ["profile", "benchmark", "measure"]
    table = _interval_table(
        pd.concat(pairs, ignore_index=True), keys, "difference", n_resamples, seed
    )
    combos = [tuple(k) for k in table[keys].itertuples(index=False)]
    table["n_rows"] = [differences[k] for k in combos]  # paired differences, one per task
    # the calls both prompts' values read (empty where the rows name none)
    table["n_calls"] = [calls.get(k) for k in combos]
    return table.assign(contrast=f"{a} - {b}")


def policy_contrasts(
    rows: pd.DataFrame,
    pairs: Sequence[tuple[str, str]],
    *,
    n_resamples: int = 10_000,
    seed: int = 0,
) -> pd.DataFrame:
    """Decision accuracy of policy ``a`` minus ``b`` on the same discussions, per benchmark
    and prompt variant, with the distinct decision calls both policies' rows rest on
    (``n_calls``, when the rows name their calls)."""
    decisions = rows[rows["kind"] == "decision"]
    parts, calls = [], {}
    for a, b in pairs:
        for (name, benchmark, prompt), group in decisions.groupby(
            ["profile", "benchmark", "prompt"], sort=True
        ):
            if not {a, b} <= set(group["policy"]):
                continue
            diff = paired_differences(
                group, a, b, by="policy", value="correct", pair_on=["task", "replicate"]
            )
            parts.append(
                diff.assign(profile=name, benchmark=benchmark, prompt=prompt, contrast=f"{a} - {b}")
            )
            read = group[group["policy"].isin([a, b]) & group["valid"].notna()]
            calls[(name, benchmark, prompt, f"{a} - {b}")] = distinct_calls(read)
    if not parts:  # no discussion with both policies: the header, counts included
        return pd.DataFrame(
            columns=["profile", "benchmark", "prompt", "contrast", *_INTERVAL_COLUMNS, "n_calls"]
        )
    keys = ["profile", "benchmark", "prompt", "contrast"]
    table = _interval_table(
        pd.concat(parts, ignore_index=True), keys, "difference", n_resamples, seed
    )
    if "key" in decisions:
        table["n_calls"] = [calls[tuple(k)] for k in table[keys].itertuples(index=False)]
    return table


def invalid_table(rows: pd.DataFrame) -> pd.DataFrame:
    """Rows and invalid answers per benchmark, kind, vote stage or decision policy (an invalid
    row is kept and counted wrong)."""
    frame = rows.assign(what=np.where(rows["kind"] == "vote", rows["stage"], rows["policy"]))
    table = (
        frame.groupby(["profile", "benchmark", "kind", "what"], sort=True)
        .agg(rows=("valid", "size"), invalid=("valid", lambda v: int((v == 0).sum())))
        .reset_index()
    )
    table["invalid_share"] = table["invalid"] / table["rows"]
    clusters = frame.groupby(["profile", "benchmark", "kind", "what"], sort=True)["template"]
    table["n_clusters"] = clusters.nunique().to_numpy()
    if "key" in frame:  # rows repeat a call where identical prompts were one cached call
        calls = frame.groupby(["profile", "benchmark", "kind", "what"], sort=True).apply(
            distinct_calls, include_groups=False
        )
        table.insert(table.columns.get_loc("rows") + 1, "n_calls", calls.to_numpy())
    if rows["valid"].isna().any():  # failed rows: no reply, counted apart (not invalid)
        failed = frame.assign(failed=frame["valid"].isna().astype(int))
        table["failed"] = (
            failed.groupby(["profile", "benchmark", "kind", "what"], sort=True)["failed"]
            .sum()
            .to_numpy()
        )
    return table


MEASURE_NOTES = {
    "transcript": "the whole discussion",
    "every-fact": "every fact of the task, no discussion",
    "group share (initial)": "share of agents voting right before discussing",
    "group share (final)": "share of agents voting right after discussing",
    "group majority (final)": "right when the final majority vote is right",
}


def measure_label(measure: str) -> str:
    """A measure as a figure names it: a decision policy with what its code means
    ("R1: rarest first"), the other measures as they are."""
    name = measure.removeprefix("decision: ")
    return policy_legend(name) if name in registered_policies() else name


def _measure_note(measures: Sequence[str]) -> str:
    notes = [f"{m.removeprefix('decision: ')} = {MEASURE_NOTES[m.removeprefix('decision: ')]}"
             for m in measures if m.removeprefix("decision: ") in MEASURE_NOTES]  # fmt: skip
    return "; ".join(notes) + "." if notes else ""


def plot_measures(
    table: pd.DataFrame, measures: Sequence[str], title: str, *, min_clusters: int = MIN_CLUSTERS
) -> Figure:
    """Bars (%, like notebooks 02-05) with 95% intervals: one panel per benchmark, one bar group
    per measure, one bar per prompt variant; no interval from fewer than ``min_clusters``
    clusters (the n is printed on the bar instead), and the chance line where the table has
    one (``chance``). Codes are explained: policies on the axis, the other measures below."""
    table = table[table["measure"].isin(measures)]
    benchmarks = sorted(table["benchmark"].unique())
    prompts = sorted(table["prompt"].unique(), key=lambda p: p != "plain")
    panels = max(1, len(benchmarks))
    fig = Figure(figsize=(2.2 + 1.0 * len(measures) * panels, 4.8), layout="constrained")
    axes = fig.subplots(1, panels, squeeze=False, sharey=True)
    width = 0.8 / max(1, len(prompts))
    colours = sns.color_palette("colorblind", max(1, len(prompts)))
    for ax, benchmark in zip(axes[0], benchmarks, strict=False):
        mine = table[table["benchmark"] == benchmark]
        present = [m for m in measures if m in set(mine["measure"])]
        ax.set_title(benchmark, fontsize=10)
        one_note = note_all_withheld(ax, mine.get("n_clusters"), min_clusters=min_clusters)
        for k, prompt in enumerate(prompts):
            part = mine[mine["prompt"] == prompt].set_index("measure").reindex(present)
            x = np.arange(len(present)) + (k - (len(prompts) - 1) / 2) * width
            n_clusters = part.get("n_clusters")
            err = interval_errors(part["estimate"], part["low"], part["high"], n_clusters,
                                  min_clusters=min_clusters, scale=100, figure=fig)  # fmt: skip
            bars = ax.bar(x, 100 * part["estimate"], width, yerr=err, capsize=2,
                          label=f"{prompt} prompt", color=colours[k])  # fmt: skip
            label_bars_without_interval(ax, bars, err)
            if not one_note:
                mark_small_samples(ax, x, 100 * part["estimate"], n_clusters,
                                   min_clusters=min_clusters)  # fmt: skip
        chance = chance_level(mine)
        draw_chance(ax, None if chance is None else 100 * chance)
        ax.set_xticks(np.arange(len(present)))
        ax.set_xticklabels([measure_label(m) for m in present], rotation=45, ha="right",
                           fontsize=8)  # fmt: skip
        ax.set_ylim(0, 109)  # room for a bar's value label above 100
        ax.set_yticks(range(0, 101, 20))
    if not benchmarks:
        note_no_data(axes[0][0])
    axes[0][0].set_ylabel("accuracy (%, 95% cluster-robust t interval)")
    legend_outside(axes[0][-1], fontsize="small")
    fig.suptitle(title)
    note = _measure_note(measures)
    if note:
        footnote(fig, note)
    return fig


def plot_disclosure(table: pd.DataFrame, title: str) -> Figure:
    """Stacked full / partial / none shares (%) of facts per benchmark, prompt and private flag."""
    index = [c for c in ("benchmark", "prompt", "private") if c in table.columns]
    pivot = table.pivot_table(index=index, columns="disclosure", values="estimate").reindex(
        columns=["full", "partial", "none"]
    )
    fig = Figure(figsize=(3 + 1.3 * len(pivot), 4.2), layout="constrained")
    ax = fig.subplots()
    bottom = np.zeros(len(pivot))
    colours = dict(zip(pivot.columns, sns.color_palette("colorblind", 3), strict=True))
    names = {"full": "stated in full", "partial": "stated in part", "none": "not stated"}
    for label in pivot.columns:
        share = 100 * pivot[label].fillna(0).to_numpy()
        ax.bar(range(len(pivot)), share, bottom=bottom, label=names[label], color=colours[label])
        bottom += share
    ax.set_xticks(range(len(pivot)))

    def bar_label(key: tuple) -> str:
        named = dict(zip(index, key if isinstance(key, tuple) else (key,), strict=True))
        lines = [str(named.get("benchmark", "")), f"{named.get('prompt', '')} prompt",
                 "private facts" if named.get("private") else "shared facts"]  # fmt: skip
        return "\n".join(line for line in lines if line.strip() and line != " prompt")

    ax.set_xticklabels([bar_label(key) for key in pivot.index], fontsize="small")
    if not len(pivot):
        note_no_data(ax)
    ax.set_ylabel("share of facts (%)")
    ax.set_ylim(0, 100)
    legend_outside(ax, title="in the discussion", fontsize="small")
    fig.suptitle(title)
    return fig
