"""Figures of notebooks 02-05, drawn from the tables the notebooks write (no analysis here).

:func:`accuracy_by_budget` plots the `r=...` rows and the references of an accuracy table and
ignores any other row (the fixed-7 control, the cue baseline). As the tables do, a figure draws
no interval from fewer than ``min_clusters`` clusters and prints the n there instead, and every
accuracy figure draws the chance line (the table's ``chance`` column, 1/number of options).
Every code a figure shows is explained on it: policies in the legend ("R1: rarest first", from
the policy registry), ownership cells in a footnote (:data:`CELL_CODE_NOTE`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import seaborn as sns

from deliberation.experiments.memory.analyses.accuracy import REFERENCE
from deliberation.memory_policies import policy_legend
from deliberation.publish.plots import (
    CHANCE_STYLE,
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
from deliberation.stats.small_samples import MIN_CLUSTERS

# Colour-blind-safe colours for policies, one per policy in order of appearance.
PALETTE = sns.color_palette("colorblind", 10)
# Each reference line gets its own colour and dash pattern, so no two look alike (a dotted
# "all" beside a dotted "shared-only" could not be told apart); unknown references cycle.
_REFERENCE_STYLES = {
    "all": ("black", "-"),
    "empty": ("dimgrey", "--"),
    "private-only": ("tab:purple", "-."),
    "shared-only": ("tab:brown", (0, (1, 2))),
}
_MORE_STYLES = (("tab:olive", (0, (5, 1))), ("tab:cyan", (0, (3, 1, 1, 1, 1, 1))))

CELL_CODE_NOTE = (
    "Cell codes: support-decoys-irrelevant ownership, S = shared (every agent holds every fact "
    "of the group), P = private (one holder per fact); SP-DS-IP = support private, decoys "
    "shared, irrelevant private (the classic hidden-profile cell)."
)


def _reference_style(policy: str, index: int) -> tuple[str, object]:
    if policy in _REFERENCE_STYLES:
        return _REFERENCE_STYLES[policy]
    return _MORE_STYLES[index % len(_MORE_STYLES)]


def accuracy_by_budget(
    table: pd.DataFrame, title: str, *, min_clusters: int = MIN_CLUSTERS
) -> Figure:
    """Accuracy with 95% intervals by policy and budget (``capacity`` ``r=...``), the policies
    side by side at each budget; reference policies as horizontal lines; the chance line; no
    interval below ``min_clusters``."""
    fig = Figure(figsize=(8, 4.5), layout="constrained")
    ax = fig.subplots()
    budgeted = table[table["capacity"].str.startswith("r=")]
    budgets = sorted({float(c[2:]) for c in budgeted["capacity"]})
    slot = {b: i for i, b in enumerate(budgets)}
    policies = list(dict.fromkeys(budgeted["policy"]))
    width = 0.8 / max(1, len(policies))  # the policies share each budget's slot
    one_note = note_all_withheld(ax, budgeted.get("n_clusters"), min_clusters=min_clusters)
    for k, policy in enumerate(policies):
        part = budgeted[budgeted["policy"] == policy]
        x = [slot[float(c[2:])] + (k - (len(policies) - 1) / 2) * width for c in part["capacity"]]
        err = interval_errors(part["accuracy"], part["low"], part["high"],
                              part.get("n_clusters"), min_clusters=min_clusters,
                              figure=fig)  # fmt: skip
        ax.errorbar(x, part["accuracy"], yerr=err, marker="o", ls="none", capsize=3,
                    label=policy_legend(policy), color=PALETTE[k % len(PALETTE)])  # fmt: skip
        if not one_note:
            mark_small_samples(ax, x, part["accuracy"], part.get("n_clusters"),
                               min_clusters=min_clusters)  # fmt: skip
    references = table[table["capacity"] == REFERENCE]
    for k, (_, row) in enumerate(references.iterrows()):
        colour, style = _reference_style(row["policy"], k)
        ax.axhline(row["accuracy"], color=colour, lw=1.2, ls=style,
                   label=f"{policy_legend(row['policy'])} (reference, no budget)")  # fmt: skip
    draw_chance(ax, chance_level(budgeted if len(budgeted) else table))
    if not len(budgeted) and not len(references):
        note_no_data(ax)
    ax.set_xticks(range(len(budgets)), [f"r = {b:g}" for b in budgets])
    ax.set_xlim(-0.5, max(0.5, len(budgets) - 0.5))
    ax.set_ylim(-2, 102)
    ax.set_ylabel("accuracy (%)")
    ax.set_xlabel("memory budget r (fraction of the tokens of all facts)")
    fig.suptitle(title, fontsize=10)
    legend_outside(ax, fontsize=7)
    return fig


def cell_heatmaps(matrix: pd.DataFrame, title: str, *, chance: float | None = None) -> Figure:
    """One heatmap per policy: support ownership (rows) x decoy/irrelevant ownership (columns),
    accuracy (%) in each of the 8 cells. Colours diverge at ``chance`` (white; 1/3 by default):
    blue above chance, red below."""
    chance = 100 / 3 if chance is None else chance
    policies = list(matrix.index)
    ncols = min(4, max(1, len(policies)))
    nrows = int(np.ceil(max(1, len(policies)) / ncols))
    fig = Figure(figsize=(3 * ncols + 1.5, 2.3 * nrows + 1.2), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    columns = ["DP-IP", "DP-IS", "DS-IP", "DS-IS"]
    column_labels = ["decoys P\nirrel. P", "decoys P\nirrel. S", "decoys S\nirrel. P",
                     "decoys S\nirrel. S"]  # fmt: skip
    scale = {"vmin": 0, "vmax": 100, "center": chance, "cmap": "RdBu"}
    for index, (ax, policy) in enumerate(zip(axes.flat, policies, strict=False)):
        grid = pd.DataFrame(
            [[matrix.loc[policy].get(f"{s}-{c}", np.nan) for c in columns] for s in ("SP", "SS")],
            index=["support P", "support S"], columns=column_labels,
        )  # fmt: skip
        sns.heatmap(grid, ax=ax, annot=True, fmt=".0f", annot_kws={"fontsize": 8},
                    cbar=False, linewidths=0.5, linecolor="white", **scale)  # fmt: skip
        ax.set_title(policy_legend(policy), fontsize=9)
        ax.tick_params(labelsize=7, length=0)
        ax.set_xticklabels(column_labels, rotation=0)
        ax.set_yticklabels(ax.get_yticklabels() if index % ncols == 0 else [], rotation=0)
    for ax in axes.flat[len(policies) :]:
        ax.axis("off")
    mappable = axes.flat[0].collections[0] if policies else None
    if mappable is not None:
        bar = fig.colorbar(mappable, ax=axes, shrink=0.7,
                           label=f"accuracy (%); dotted: chance ({chance:.0f})")  # fmt: skip
        bar.ax.axhline(chance, **CHANCE_STYLE)
    fig.suptitle(title, fontsize=10)
    footnote(fig, "S = shared (every agent holds every fact of the group), P = private (one "
                  "holder per fact). White = chance; blue above it, red below.")  # fmt: skip
    return fig


def accuracy_by_lead(
    table: pd.DataFrame,
    title: str,
    *,
    policies: Sequence[str] = (),
    min_clusters: int = MIN_CLUSTERS,
) -> Figure:
    """Accuracy with 95% intervals per net evidence lead of the kept memory (none below
    ``min_clusters`` clusters), and the chance line; ``policies`` (pooled in the table) are
    named under the figure with what their codes mean."""
    fig = Figure(figsize=(7, 3.8), layout="constrained")
    ax = fig.subplots()
    n_clusters = table.get("n_clusters")
    err = interval_errors(table["accuracy"], table["low"], table["high"], n_clusters,
                          min_clusters=min_clusters, figure=fig)  # fmt: skip
    ax.errorbar(table["lead_bin"], table["accuracy"], yerr=err, marker="o", capsize=3,
                color=PALETTE[0], label="accuracy")  # fmt: skip
    if not note_all_withheld(ax, n_clusters, min_clusters=min_clusters):
        mark_small_samples(ax, table["lead_bin"], table["accuracy"], n_clusters,
                           min_clusters=min_clusters, horizontal=True)  # fmt: skip
    draw_chance(ax, chance_level(table))
    if not len(table):
        note_no_data(ax)
    ax.set_xticks(table["lead_bin"], table["lead"], fontsize=8)
    ax.set_ylim(-2, 102)
    ax.set_xlabel("net evidence lead of the kept memory (correct option minus best competitor)")
    ax.set_ylabel("accuracy (%)")
    fig.suptitle(title, fontsize=10)
    legend_outside(ax, fontsize=7)
    if policies:
        footnote(fig, "Policies pooled: " + "; ".join(policy_legend(p) for p in policies) + ".")
    return fig


def tag_effects(
    table: pd.DataFrame, title: str, policy: str = "all", *, min_clusters: int = MIN_CLUSTERS
) -> Figure:
    """Per ownership cell, the effect of removing / reassigning tags on ``policy``'s memory
    (bars, 95% intervals; none below ``min_clusters`` clusters, the n printed instead). A
    difference has no chance level: the zero line is drawn instead."""
    if "policy" in table:
        table = table[table["policy"] == policy].reset_index(drop=True)
    modes = [m for m in ("remove", "shuffle") if f"{m} - keep" in table]
    fig = Figure(figsize=(8, 4.2), layout="constrained")
    ax = fig.subplots()
    x = np.arange(len(table))
    width = 0.8 / max(1, len(modes))
    one_note = note_all_withheld(ax, table.get("n_clusters"), min_clusters=min_clusters)
    names = {"remove": "tags removed", "shuffle": "tags reassigned at random"}
    for k, mode in enumerate(modes):
        est = table[f"{mode} - keep"]
        n_clusters = table.get("n_clusters")
        err = interval_errors(est, table[f"{mode} low"], table[f"{mode} high"], n_clusters,
                              min_clusters=min_clusters, figure=fig)  # fmt: skip
        at = x + (k - (len(modes) - 1) / 2) * width
        bars = ax.bar(at, est, width, yerr=err, capsize=2, label=names[mode],
                      color=PALETTE[k % len(PALETTE)])  # fmt: skip
        label_bars_without_interval(ax, bars, err, "{:+.0f}")
        if not one_note:
            mark_small_samples(ax, at, est.clip(lower=0), n_clusters, min_clusters=min_clusters)
    ax.axhline(0, color="black", lw=0.8)
    if not len(table):
        note_no_data(ax)
    ax.set_xticks(x, table["variant"], rotation=30, fontsize=8)
    ax.set_xlabel("ownership cell")
    ax.set_ylabel("accuracy change vs tags kept\n(percentage points)")
    fig.suptitle(f"{title} (memory {policy_legend(policy)})", fontsize=10)
    legend_outside(ax, fontsize=8)
    footnote(fig, CELL_CODE_NOTE)
    return fig
