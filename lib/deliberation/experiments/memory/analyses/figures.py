"""Figures of notebooks 02-05, drawn from the tables the notebooks write (no analysis here).

:func:`accuracy_by_budget` plots the `r=...` rows and the references of an accuracy table and
ignores any other row (the fixed-7 control, the cue baseline). As the tables do, a figure draws
no interval from fewer than ``min_clusters`` clusters and prints the n there instead, and every
accuracy figure draws the chance line (the table's ``chance`` column, 1/number of options)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from deliberation.experiments.memory.analyses.accuracy import REFERENCE
from deliberation.publish.plots import (
    chance_level,
    draw_chance,
    interval_errors,
    mark_small_samples,
    note_all_withheld,
)
from deliberation.stats.small_samples import MIN_CLUSTERS

# Each reference line gets its own colour and dash pattern, so no two look alike (a dotted
# "all" beside a dotted "shared-only" could not be told apart); unknown references cycle.
_REFERENCE_STYLES = {
    "all": ("black", "-"),
    "empty": ("dimgrey", "--"),
    "private-only": ("tab:purple", "-."),
    "shared-only": ("tab:brown", ":"),
}
_MORE_STYLES = (("tab:olive", (0, (5, 1))), ("tab:cyan", (0, (3, 1, 1, 1, 1, 1))))


def _reference_style(policy: str, index: int) -> tuple[str, object]:
    if policy in _REFERENCE_STYLES:
        return _REFERENCE_STYLES[policy]
    return _MORE_STYLES[index % len(_MORE_STYLES)]


def accuracy_by_budget(
    table: pd.DataFrame, title: str, *, min_clusters: int = MIN_CLUSTERS
) -> plt.Figure:
    """Accuracy with 95% intervals by policy and budget (``capacity`` ``r=...``); reference
    policies as horizontal lines; the chance line; no interval below ``min_clusters``."""
    fig, ax = plt.subplots(figsize=(7.5, 4.5), layout="constrained")
    budgeted = table[table["capacity"].str.startswith("r=")]
    budgets = sorted({float(c[2:]) for c in budgeted["capacity"]})
    policies = list(dict.fromkeys(budgeted["policy"]))
    colours = plt.get_cmap("tab10")
    step = 0.012  # small horizontal offsets keep the intervals apart
    one_note = note_all_withheld(ax, budgeted.get("n_clusters"), min_clusters=min_clusters)
    for k, policy in enumerate(policies):
        part = budgeted[budgeted["policy"] == policy]
        x = [float(c[2:]) + (k - (len(policies) - 1) / 2) * step for c in part["capacity"]]
        err = interval_errors(part["accuracy"], part["low"], part["high"],
                              part.get("n_clusters"), min_clusters=min_clusters)  # fmt: skip
        ax.errorbar(x, part["accuracy"], yerr=err, marker="o", capsize=3, label=policy,
                    color=colours(k % 10))  # fmt: skip
        if not one_note:
            mark_small_samples(ax, x, part["accuracy"], part.get("n_clusters"),
                               min_clusters=min_clusters)  # fmt: skip
    references = table[table["capacity"] == REFERENCE]
    for k, (_, row) in enumerate(references.iterrows()):
        colour, style = _reference_style(row["policy"], k)
        ax.axhline(row["accuracy"], color=colour, lw=1.2, ls=style,
                   label=f"{row['policy']} (reference)")  # fmt: skip
    draw_chance(ax, chance_level(budgeted if len(budgeted) else table))
    ax.set_xticks(budgets, [f"r = {b:g}" for b in budgets])
    ax.set_ylim(-2, 102)
    ax.set_ylabel("accuracy (%)")
    ax.set_xlabel("memory budget (fraction of all fact tokens)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    return fig


def cell_heatmaps(matrix: pd.DataFrame, title: str) -> plt.Figure:
    """One heatmap per policy: support ownership (rows) x decoy/irrelevant ownership (columns),
    accuracy in each of the 8 cells."""
    policies = list(matrix.index)
    ncols = min(4, len(policies))
    nrows = int(np.ceil(len(policies) / ncols))
    fig, axes = plt.subplots(
        nrows, ncols, figsize=(3 * ncols + 1.5, 2.2 * nrows + 0.8), squeeze=False,
        layout="constrained",
    )  # fmt: skip
    columns = ["DP-IP", "DP-IS", "DS-IP", "DS-IS"]
    column_labels = ["decoys P\nirrel. P", "decoys P\nirrel. S", "decoys S\nirrel. P",
                     "decoys S\nirrel. S"]  # fmt: skip
    image = None
    for index, (ax, policy) in enumerate(zip(axes.flat, policies, strict=False)):
        grid = np.array(
            [[matrix.loc[policy].get(f"{s}-{c}", np.nan) for c in columns] for s in ("SP", "SS")]
        )
        image = ax.imshow(grid, vmin=0, vmax=100, cmap="RdYlGn", aspect="auto")
        for (i, j), value in np.ndenumerate(grid):
            if np.isfinite(value):
                ax.text(j, i, f"{value:.0f}", ha="center", va="center", fontsize=8)
        ax.set_title(policy, fontsize=9)
        ax.set_xticks(range(4), column_labels, fontsize=7)
        first = index % ncols == 0
        ax.set_yticks(range(2), ["support private", "support shared"] if first else [], fontsize=7)
    for ax in axes.flat[len(policies) :]:
        ax.axis("off")
    if image is not None:
        fig.colorbar(image, ax=axes, shrink=0.6, label="accuracy (%)")
    fig.suptitle(title, fontsize=10)
    fig.supxlabel(_CELL_CODE_NOTE, fontsize=7)
    return fig


_CELL_CODE_NOTE = (
    "Cell codes: S = shared (every agent holds every fact of the group), P = private (one "
    "holder each); SP-DS-IP = support private, decoys shared, irrelevant private (the classic cell)"
)


def accuracy_by_lead(
    table: pd.DataFrame, title: str, *, min_clusters: int = MIN_CLUSTERS
) -> plt.Figure:
    """Accuracy with 95% intervals per net evidence lead of the kept memory (none below
    ``min_clusters`` clusters), and the chance line."""
    fig, ax = plt.subplots(figsize=(6, 3.8), layout="constrained")
    n_clusters = table.get("n_clusters")
    err = interval_errors(table["accuracy"], table["low"], table["high"], n_clusters,
                          min_clusters=min_clusters)  # fmt: skip
    ax.errorbar(table["lead_bin"], table["accuracy"], yerr=err, marker="o", capsize=3)
    if not note_all_withheld(ax, n_clusters, min_clusters=min_clusters):
        mark_small_samples(ax, table["lead_bin"], table["accuracy"], n_clusters,
                           min_clusters=min_clusters, horizontal=True)  # fmt: skip
    if draw_chance(ax, chance_level(table)):
        ax.legend(fontsize=7)
    ax.set_xticks(table["lead_bin"], table["lead"], fontsize=8)
    ax.set_ylim(-2, 102)
    ax.set_xlabel("net evidence lead of the kept memory")
    ax.set_ylabel("accuracy (%)")
    ax.set_title(title, fontsize=10)
    return fig


def tag_effects(
    table: pd.DataFrame, title: str, policy: str = "all", *, min_clusters: int = MIN_CLUSTERS
) -> plt.Figure:
    """Per ownership cell, the effect of removing / reassigning tags on ``policy``'s memory
    (points, 95% intervals; none below ``min_clusters`` clusters, the n printed instead). A
    difference has no chance level: the zero line is drawn instead."""
    if "policy" in table:
        table = table[table["policy"] == policy].reset_index(drop=True)
    modes = [m for m in ("remove", "shuffle") if f"{m} - keep" in table]
    fig, ax = plt.subplots(figsize=(7, 3.8), layout="constrained")
    x = np.arange(len(table))
    width = 0.8 / max(1, len(modes))
    one_note = note_all_withheld(ax, table.get("n_clusters"), min_clusters=min_clusters)
    for k, mode in enumerate(modes):
        est = table[f"{mode} - keep"]
        n_clusters = table.get("n_clusters")
        err = interval_errors(est, table[f"{mode} low"], table[f"{mode} high"], n_clusters,
                              min_clusters=min_clusters)  # fmt: skip
        at = x + (k - (len(modes) - 1) / 2) * width
        ax.bar(at, est, width, yerr=err, capsize=2,
               label={"remove": "tags removed", "shuffle": "tags reassigned"}[mode])  # fmt: skip
        if not one_note:
            mark_small_samples(ax, at, est.clip(lower=0), n_clusters, min_clusters=min_clusters)
    ax.axhline(0, color="black", lw=0.8)
    ax.set_xticks(x, table["variant"], rotation=30, fontsize=8)
    ax.set_ylabel("accuracy change vs tags kept (points)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    return fig
