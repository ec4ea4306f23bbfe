"""Accuracy tables and policy differences with cluster-robust t intervals (G - 1 df; none
below the cluster floor: :mod:`deliberation.stats.cluster_t`).

A results frame (:mod:`deliberation.experiments.memory.runs`) has a ``budget`` (fraction r) or an
``item_limit`` (fixed count) or neither (references); :func:`with_capacity` names the three in
one ``capacity`` column (``r=0.6``, ``7 items``, ``reference``), so tables group on strings.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from deliberation.stats import difference_statistic, mean_of
from deliberation.stats.cluster_t import ClusterEstimate, cluster_t_many
from deliberation.stats.preregistered import PAPER_COLUMNS
from deliberation.stats.small_samples import (
    MIN_CLUSTERS,
    PAPER_METHOD_MIN_CLUSTERS,
    SAME_CALLS_COLUMN,
    call_column,
    call_set,
    with_same_calls,
    withhold_inference,
)

REFERENCE = "reference"


def percent_interval(
    result: ClusterEstimate,
    columns: Sequence[str] = ("estimate", "low", "high", "interval", "p_value", "n_clusters"),
    *,
    paper: bool = False,
) -> dict[str, object]:
    """A result as table columns, proportions in percentage points, with the distinct model
    calls behind it (``n_calls``) when its rows name their calls, the calls both sides of a
    contrast read (``shared_calls``), and with ``paper`` the papers' percentile bootstrap
    (empty below its floor of clusters)."""
    row = result.as_row(scale=100)
    out = {column: row[column] for column in columns}
    if result.n_calls is not None:
        out["n_calls"] = result.n_calls
    if result.shared_calls is not None:
        out["shared_calls"] = result.shared_calls
    if paper:
        bootstrap = result.paper
        out[PAPER_COLUMNS[0]] = 100 * bootstrap.low if bootstrap else float("nan")
        out[PAPER_COLUMNS[1]] = 100 * bootstrap.high if bootstrap else float("nan")
        out[PAPER_COLUMNS[2]] = bootstrap.p_value if bootstrap else float("nan")
    return out


def answered(rows: pd.DataFrame) -> pd.DataFrame:
    """``rows`` without the failed ones (``valid`` empty: no usable reply), which no accuracy,
    difference or model counts; :func:`accuracy_table` reports how many there were."""
    return rows[rows["valid"].notna()] if "valid" in rows else rows


def capacity_label(budget: float | None, item_limit: int | None) -> str:
    if budget is not None and not pd.isna(budget):
        return f"r={float(budget):g}"
    if item_limit is not None and not pd.isna(item_limit):
        return f"{int(item_limit)} items"
    return REFERENCE


def budget_scope(budgets: Sequence[float]) -> str:
    """How a table names the budgets a contrast reads: ``r=0.6``, or ``r=0.4/0.6/0.8 pooled``."""
    values = sorted({float(b) for b in budgets})
    if not values:
        raise ValueError("budget_scope: no budgets")
    text = "/".join(f"{v:g}" for v in values)
    return f"r={text}" if len(values) == 1 else f"r={text} pooled"


def with_capacity(rows: pd.DataFrame) -> pd.DataFrame:
    """``rows`` with a ``capacity`` column (see the module docstring)."""
    limits = rows["item_limit"] if "item_limit" in rows else pd.Series(None, index=rows.index)
    labels = [capacity_label(b, n) for b, n in zip(rows["budget"], limits, strict=True)]
    return rows.assign(capacity=labels)


def accuracy_table(
    rows: pd.DataFrame,
    by: Sequence[str],
    *,
    cluster: str = "template",
    n_resamples: int = 10_000,
    seed: int = 0,
) -> pd.DataFrame:
    """Accuracy (%) of every combination of ``by`` seen in ``rows`` (in order of appearance),
    over its distinct calls, with a 95% cluster-robust t interval (none below the cluster
    floor, ``interval`` says why; ``n_resamples`` and ``seed`` are unused since the cluster t
    replaced the bootstrap here, kept for the notebooks' calls); invalid answers count as
    wrong and are counted in ``invalid``. Failed rows (``valid`` empty: no usable reply) are in
    neither numerator nor denominator; when there are any, a ``failed`` column counts them.
    ``n_calls`` counts the distinct model calls behind ``n_rows`` (identical prompts are one
    cached call), ``same_calls_as`` names an earlier row that read exactly the same calls (its
    accuracy is then equal by construction: :func:`~deliberation.stats.small_samples.with_same_calls`),
    and with ``n_options`` in the rows ``chance`` is the accuracy of a uniform guess (%, the
    mean of 1 / number of options)."""
    by = list(by)
    if rows.empty:
        raise ValueError("accuracy_table: no rows")
    failed_mask = rows["valid"].isna()
    failed = rows[failed_mask].groupby(by, sort=False, dropna=False).size()
    rows = rows[~failed_mask]
    if rows.empty:
        raise ValueError(f"accuracy_table: every one of {int(failed_mask.sum())} rows failed")
    combos = list(dict.fromkeys(rows[by].itertuples(index=False, name=None)))
    statistics = {
        str(i): mean_of("correct", dict(zip(by, combo, strict=True)))
        for i, combo in enumerate(combos)
    }
    results = cluster_t_many(rows, statistics, cluster)
    grouped = rows.groupby(by, sort=False, dropna=False)
    sizes, invalid = grouped.size(), grouped["valid"].apply(lambda v: int((v == 0).sum()))
    calls = None
    if call_column(rows) is not None:
        calls = {(k if len(by) > 1 else k[0]): call_set(g) for k, g in grouped}
    chance = None
    if "n_options" in rows:
        chance = (
            (1 / rows["n_options"].astype(float))
            .groupby([rows[c] for c in by], sort=False, dropna=False)
            .mean()
        )
    out = []
    for i, combo in enumerate(combos):
        result = results[str(i)]
        key = combo if len(combo) > 1 else combo[0]
        out.append(
            {
                **dict(zip(by, combo, strict=True)),
                "accuracy": 100 * result.estimate,
                "low": 100 * result.low,
                "high": 100 * result.high,
                "interval": result.note,
                "n_rows": int(sizes[key]),
                **({} if calls is None else {"n_calls": len(calls[key])}),
                "n_clusters": result.n_clusters,
                "invalid": int(invalid[key]),
            }
        )
        if chance is not None:
            out[-1]["chance"] = 100 * float(chance[key])
        if failed_mask.any():
            out[-1]["failed"] = int(failed.get(key, 0))
    table = pd.DataFrame(out)
    if calls is None:
        return table
    keys = [c if len(c) > 1 else c[0] for c in combos]
    return with_same_calls(table, [calls[k] for k in keys], by)


def differences(
    rows: pd.DataFrame,
    comparisons: Sequence[tuple[str, str]],
    *,
    average_over: Sequence[str] = (),
    label: str = "",
    cluster: str = "template",
    n_resamples: int = 10_000,
    seed: int = 0,
) -> pd.DataFrame:
    """Policy a minus policy b (points) for each pair, on ``rows`` (averaged with equal weight
    over the cells of ``average_over``), with its cluster-robust t interval and p over
    ``cluster`` and the papers' percentile bootstrap beside it (``n_resamples``, ``seed``;
    from its floor of clusters); failed rows are left out."""
    rows = answered(rows)
    statistics = {
        f"{a} - {b}": difference_statistic(rows, a, b, average_over=average_over)
        for a, b in comparisons
    }
    results = cluster_t_many(rows, statistics, cluster, n_resamples=n_resamples, seed=seed)
    return pd.DataFrame(
        [
            {
                "comparison": name,
                "where": label,
                **percent_interval(r, paper=True),
            }
            for name, r in results.items()
        ]
    )


def difference_by_budget(
    rows: pd.DataFrame,
    a: str,
    b: str,
    *,
    cluster: str = "template",
    n_resamples: int = 10_000,
    seed: int = 0,
) -> pd.DataFrame:
    """``a - b`` at every token budget of ``rows`` and averaged over budgets with equal weight
    (rows without a budget are ignored)."""
    budgeted = rows[rows["budget"].notna() & rows["policy"].isin([a, b])]
    if budgeted.empty:
        raise ValueError(f"difference_by_budget: no budgeted rows of {a} or {b}")
    budgeted = budgeted.assign(budget=budgeted["budget"].astype(float))
    kwargs = dict(cluster=cluster, n_resamples=n_resamples, seed=seed)
    parts = [
        differences(budgeted[budgeted["budget"] == r], [(a, b)], label=f"r={r:g}", **kwargs)
        for r in sorted(budgeted["budget"].unique())
    ]
    parts.append(
        differences(
            budgeted, [(a, b)], average_over=("budget",), label="mean over budgets", **kwargs
        )
    )
    return pd.concat(parts, ignore_index=True)


def cue_baseline(templates, seed: int) -> pd.DataFrame:
    """The best meaning-free heuristic of the cue audit as one accuracy row (its interval is
    the audit's percentile bootstrap over templates: the heuristic makes one pick per template,
    whatever the cell), withheld below that method's own floor of clusters
    (:data:`~deliberation.stats.small_samples.PAPER_METHOD_MIN_CLUSTERS`), where it rejects too
    often."""
    from deliberation.benchmarks.crossprofile.audit import audit

    table = audit(templates, seed=seed, draws=0).table  # accuracies only: no random-keys bars
    thresholded = table[table["thresholded"]]
    best = thresholded.loc[thresholded["accuracy"].idxmax()]
    baseline = pd.DataFrame(
        [
            {
                "policy": f"cue baseline: {best['heuristic']}",
                "capacity": "no model",
                "accuracy": 100 * best["accuracy"],
                "low": 100 * best["ci_low"],
                "high": 100 * best["ci_high"],
                "n_rows": int(best["n"]),
                "n_clusters": int(best["n"]),
                "invalid": 0,
                "chance": 100 * best["chance"],
            }
        ]
    )
    return withhold_inference(baseline, PAPER_METHOD_MIN_CLUSTERS)


def rounded(frame: pd.DataFrame, digits: int = 1) -> pd.DataFrame:
    """Display copy: floats rounded (p-values kept to 4 significant digits)."""
    out = frame.copy()
    for column in out.columns:
        if pd.api.types.is_float_dtype(out[column]):
            if column.startswith("p_"):
                out[column] = out[column].map(lambda p: float(f"{p:.4g}") if np.isfinite(p) else p)
            else:
                out[column] = out[column].round(digits)
    return out


def accuracy_matrix(table: pd.DataFrame, *, min_clusters: int = MIN_CLUSTERS) -> pd.DataFrame:
    """An :func:`accuracy_table` by policy and capacity as policies (rows) x capacities, each
    entry ``accuracy [low, high]``, or ``accuracy (n = 2 clusters)`` below the floor, or the
    accuracy with the row's own reason for no interval ("the 4 clusters agree exactly"), and
    the clusters and distinct calls of each policy (``n_clusters``, ``n_calls``: the largest
    over its capacities; for reading, not re-analysis: the long table has the data), and
    which entries repeat another's calls (``same_calls_as``: "7 items: r=0.6"). No
    interval from fewer than ``min_clusters`` clusters (:func:`withhold_inference`)."""
    if "n_clusters" in table:
        table = withhold_inference(table, min_clusters)

    clusters = table["n_clusters"] if "n_clusters" in table else [None] * len(table)
    notes = table["interval"] if "interval" in table else [""] * len(table)

    def entry(a: float, lo: float, hi: float, n: object, note: object) -> str:
        if pd.notna(lo) and pd.notna(hi):
            return f"{a:.1f} [{lo:.1f}, {hi:.1f}]"
        if n is not None and pd.notna(n) and int(n) < min_clusters:
            return f"{a:.1f} (n = {int(n)} cluster{'' if int(n) == 1 else 's'})"
        if isinstance(note, str) and note:  # e.g. "the 4 clusters agree exactly"
            return f"{a:.1f} ({note.split(':')[0]})"
        return f"{a:.1f}"

    cells = table.assign(
        entry=[
            entry(*values)
            for values in zip(
                table["accuracy"], table["low"], table["high"], clusters, notes, strict=True
            )
        ]
    )
    wide = cells.pivot(index="policy", columns="capacity", values="entry")
    columns = list(dict.fromkeys(cells["capacity"]))
    policies = list(dict.fromkeys(cells["policy"]))
    wide = wide.loc[policies, columns].fillna("")
    counts = [c for c in ("n_clusters", "n_calls") if c in cells]
    if counts:
        wide = wide.join(cells.groupby("policy")[counts].max().loc[policies])
    if SAME_CALLS_COLUMN in cells:  # "7 items: r=0.6": the entry repeats those calls
        notes: dict[object, list[str]] = {policy: [] for policy in policies}
        for policy, capacity, same in zip(
            cells["policy"], cells["capacity"], cells[SAME_CALLS_COLUMN], strict=True
        ):
            if isinstance(same, str) and same:
                notes[policy].append(f"{capacity}: {same}")
        wide[SAME_CALLS_COLUMN] = ["; ".join(notes[policy]) for policy in policies]
    return wide.reset_index()
