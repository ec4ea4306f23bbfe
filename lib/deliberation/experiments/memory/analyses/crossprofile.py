"""CrossProfile analyses of notebook 03: the pre-specified tests, the ownership cells, the
classic-cell contrasts and the relevance labeller against the true roles."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pandas as pd

from deliberation.benchmarks.crossprofile import CLASSIC
from deliberation.experiments.memory.analyses.accuracy import (
    accuracy_table,
    answered,
    budget_scope,
    cue_baseline,
    differences,
    percent_interval,
)
from deliberation.memory_policies import FIXED_ITEM_COUNT, PRIMARY_FRACTION
from deliberation.stats import difference_statistic, mean_of, preregistered_tests
from deliberation.stats.cluster_t import cluster_t_many
from deliberation.stats.preregistered import PreregisteredTests
from deliberation.stats.small_samples import (
    MIN_CLUSTERS,
    PAPER_METHOD_MIN_CLUSTERS,
    SAME_CALLS_COLUMN,
)

if TYPE_CHECKING:
    from deliberation.inference.client import Client
    from deliberation.profiles.profile import Profile

H1_POLICIES = ("R1", "B4", "Random", "R1-rel")
# The relevance policies against R1 in the classic cell (:func:`classic_contrasts`).
CLASSIC_COMPARISONS = (("R1-rel", "R1"), ("oracle-rel", "R1"), ("oracle-rel", "R1-rel"))
VARIANT_ORDER = (
    "SP-DP-IP", "SP-DP-IS", "SP-DS-IP", "SP-DS-IS",
    "SS-DP-IP", "SS-DP-IS", "SS-DS-IP", "SS-DS-IS",
)  # fmt: skip


def _primary_rows(rows: pd.DataFrame, budget: float = PRIMARY_FRACTION) -> pd.DataFrame:
    """Rows of the pre-specified tests: main templates, tags kept, the primary budget."""
    keep = (rows["pilot"] == 0) & (rows["tags"] == "keep") & (rows["budget"] == budget)
    return rows[keep & rows["policy"].isin(H1_POLICIES)]


def _fixed_count_rows(rows: pd.DataFrame, item_limit: int = FIXED_ITEM_COUNT) -> pd.DataFrame:
    """Rows of the fixed-item-count control (main templates, tags kept)."""
    keep = (rows["pilot"] == 0) & (rows["tags"] == "keep") & (rows["item_limit"] == item_limit)
    return rows[keep & rows["policy"].isin(H1_POLICIES)]


def fixed_count_overlap(
    rows: pd.DataFrame, budget: float = PRIMARY_FRACTION, item_limit: int = FIXED_ITEM_COUNT
) -> pd.DataFrame:
    """How often a copy policy's memory at ``budget`` is the very memory it keeps at the fixed
    item count (same facts in the same order), per policy and over all of them: where it is,
    the fixed-count H1 re-reads the same decisions' memories and is almost the same test.
    Main templates, tags kept; rows are matched on task and policy."""
    keep = (rows["pilot"] == 0) & (rows["tags"] == "keep") & rows["policy"].isin(H1_POLICIES)
    columns = ["task", "policy", "kept_facts"]
    budgeted = rows.loc[keep & (rows["budget"] == budget), columns]
    fixed = rows.loc[keep & (rows["item_limit"] == item_limit), columns]
    pairs = budgeted.merge(fixed, on=["task", "policy"], suffixes=("", "_fixed"))
    if pairs.empty:
        raise ValueError(
            f"fixed_count_overlap: no (task, policy) with rows at r={budget:g} and "
            f"{item_limit} items"
        )
    pairs["same"] = pairs["kept_facts"].fillna("") == pairs["kept_facts_fixed"].fillna("")
    table = (
        pairs.groupby("policy", sort=False)["same"]
        .agg(memories="size", same_as_fixed="sum")
        .reset_index()
    )
    total = pd.DataFrame(
        [
            {
                "policy": "all copy policies",
                "memories": len(pairs),
                "same_as_fixed": pairs["same"].sum(),
            }
        ]
    )
    table = pd.concat([table, total], ignore_index=True)
    table["same_as_fixed"] = table["same_as_fixed"].astype(int)
    table["share %"] = 100 * table["same_as_fixed"] / table["memories"]
    return table.assign(budget=budget, item_limit=item_limit)


def policy_accuracy(
    rows: pd.DataFrame,
    *,
    pilot: bool,
    n_resamples: int,
    seed: int,
    cue_templates: Sequence | None = None,
) -> pd.DataFrame:
    """Accuracy of every policy and capacity on the main (or pilot) templates, tags kept; with
    ``cue_templates`` (the bank), the cue audit's best heuristic on the same templates is
    appended as a baseline row."""
    mine = rows[(rows["pilot"] == int(pilot)) & (rows["tags"] == "keep")]
    if mine.empty:  # a profile that lists templates of one set only
        which = "pilot" if pilot else "main"
        note = f"no {which} template in this profile's grid (experiments.crossprofile.templates)"
        return pd.DataFrame({"policy": [None], "note": [note]})
    table = accuracy_table(mine, ["policy", "capacity"], n_resamples=n_resamples, seed=seed)
    if cue_templates is None:
        return table
    used = set(mine["template"])
    baseline = cue_baseline([t for t in cue_templates if t.id in used], seed)
    return pd.concat([table, baseline], ignore_index=True)


def _pooled_rows(rows: pd.DataFrame) -> pd.DataFrame:
    """Rows of the pooled contrasts: main templates, tags kept, every token budget."""
    keep = (rows["pilot"] == 0) & (rows["tags"] == "keep") & rows["budget"].notna()
    return rows[keep & rows["policy"].isin(H1_POLICIES)]


def h1_h3_table(
    rows: pd.DataFrame, *, n_resamples: int, seed: int, budget: float = PRIMARY_FRACTION
) -> pd.DataFrame:
    """H1-H3 (Holm-adjusted together) and the secondary H1s, in points, from a results frame
    (:func:`_primary_rows` and :func:`_fixed_count_rows` select what each test reads); failed
    rows are left out.

    The pre-specified tests read the primary budget only; because that scope decides H3 on
    some profiles, H2 and H3 pooled over every budget in ``rows`` (:func:`_pooled_rows`) follow
    each of them as secondary rows (no Holm p). With a ``domain`` column, H1-H3 with domains
    as clusters follow as sensitivity rows. ``budgets`` names what each row reads;
    ``n_resamples`` and ``seed`` are the papers' percentile bootstrap's (shown where it has
    its floor of clusters)."""
    rows = answered(rows)
    fixed = _fixed_count_rows(rows)
    tests = preregistered_tests(
        _primary_rows(rows, budget),
        fixed_count_frame=fixed if not fixed.empty else None,
        sensitivity_cluster="domain" if "domain" in rows else None,
        n_resamples=n_resamples,
        seed=seed,
    )
    table = tests.table(scale=100)
    scopes = [
        f"{FIXED_ITEM_COUNT} items" if "fixed item count" in t else budget_scope([budget])
        for t in table["test"]
    ]
    table.insert(3, "budgets", scopes)
    pooled = _pooled_rows(rows)
    budgets = sorted(pooled["budget"].astype(float).unique())
    if len(budgets) < 2:
        return table
    scope = budget_scope(budgets)
    contrasts = {
        "H2": ("R1", "Random", tests.descriptions["H2"]),
        "H3": ("R1-rel", "R1", tests.descriptions["H3"]),
    }
    statistics = {
        f"{name}, budgets pooled": difference_statistic(pooled, a, b)
        for name, (a, b, _) in contrasts.items()
    }
    pooled_tests = PreregisteredTests(
        primary={},
        p_holm={},
        secondary=cluster_t_many(
            pooled, statistics, "template", n_resamples=n_resamples, seed=seed
        ),
        descriptions={f"{n}, budgets pooled": d for n, (_, _, d) in contrasts.items()},
        clusters=dict.fromkeys(statistics, "template"),
    ).table(scale=100)
    pooled_tests.insert(3, "budgets", scope)
    out = []
    for row in table.to_dict("records"):
        out.append(row)
        if row["test"] in contrasts and row["family"] == "primary":
            match = pooled_tests[pooled_tests["test"] == f"{row['test']}, budgets pooled"]
            out.extend(match.to_dict("records"))
    return pd.DataFrame(out, columns=table.columns)


def h1_h3_caption(table: pd.DataFrame) -> str:
    """The caption of :func:`h1_h3_table`, naming the budgets every row reads."""
    primary = table.loc[table["family"] == "primary", "budgets"].unique()
    pooled = [s for s in table["budgets"].unique() if s.endswith("pooled")]
    caption = (
        f"Pre-specified tests H1-H3 at {', '.join(primary)} (points; Holm over H1-H3) and "
        "secondary rows: H1 against Random at the same budget"
    )
    fixed = table.loc[table["test"].str.contains("fixed item count"), "budgets"].unique()
    if len(fixed):
        caption += f", H1 at {fixed[0]}"
    if pooled:
        caption += f", and H2 and H3 with budgets {pooled[0].removeprefix('r=')} (no Holm p)"
    if (table["family"] == "sensitivity").any():
        caption += "; sensitivity: H1-H3 with domains as clusters"
    return caption + (
        "; main templates, tags kept; 95% cluster-robust t intervals (G - 1 df; none below"
        f" {MIN_CLUSTERS} clusters); the papers' percentile bootstrap beside them from"
        f" {PAPER_METHOD_MIN_CLUSTERS} clusters"
    )


def cell_accuracy(
    rows: pd.DataFrame, *, n_resamples: int, seed: int, budget: float = PRIMARY_FRACTION
) -> pd.DataFrame:
    """Accuracy of every policy in each of the 8 ownership cells (main templates, tags kept,
    budgeted policies at ``budget`` and the references), with cluster-robust t intervals over
    templates."""
    keep = (rows["pilot"] == 0) & (rows["tags"] == "keep")
    keep &= (rows["budget"] == budget) | (rows["budget"].isna() & rows["item_limit"].isna())
    table = accuracy_table(rows[keep], ["policy", "variant"], n_resamples=n_resamples, seed=seed)
    parts = table["variant"].str.split("-", expand=True)
    names = {"S": "shared", "P": "private"}
    for i, role in enumerate(("support", "decoy", "irrelevant")):
        table.insert(2 + i, role, parts[i].str[1].map(names))
    table["variant"] = pd.Categorical(table["variant"], VARIANT_ORDER, ordered=True)
    policies = list(dict.fromkeys(table["policy"]))
    table["policy"] = pd.Categorical(table["policy"], policies, ordered=True)
    out = table.sort_values(["policy", "variant"]).reset_index(drop=True)
    return out.assign(policy=out["policy"].astype(str), variant=out["variant"].astype(str))


def cell_matrix(cells: pd.DataFrame) -> pd.DataFrame:
    """The cell table as policies x variants (accuracy, %), with each policy's templates
    (``n_clusters``), its cells' distinct calls, summed over the cells (``n_calls``), and what
    a row repeats (``same_calls_as``: "R1 (every cell)" when each of its cells is R1's cell
    read from the very same calls; else the cells that repeat another's calls, and whose)."""
    wide = cells.pivot(index="policy", columns="variant", values="accuracy")
    order = list(dict.fromkeys(cells["policy"]))
    wide = wide.loc[order, [v for v in VARIANT_ORDER if v in wide.columns]]
    wide["n_clusters"] = cells.groupby("policy")["n_clusters"].max().loc[order]
    if "n_calls" in cells:
        wide["n_calls"] = cells.groupby("policy")["n_calls"].sum().loc[order]
    if SAME_CALLS_COLUMN in cells:
        wide[SAME_CALLS_COLUMN] = [_same_policy(cells[cells["policy"] == p]) for p in order]
    return wide


def _same_policy(cells: pd.DataFrame) -> str:
    """One policy's cells' ``same_calls_as`` said once for its row: "R1 (every cell)" when
    every cell repeats R1's calls in that cell, else "<cell>: <what it repeats>" per cell."""
    same = [s if isinstance(s, str) else "" for s in cells[SAME_CALLS_COLUMN]]
    named = [(v, s) for v, s in zip(cells["variant"], same, strict=True) if s]
    if len(named) == len(cells) and len({s for _, s in named}) == 1:
        return f"{named[0][1]} (every cell)"
    return "; ".join(f"{v}: {s}" for v, s in named)


def classic_contrasts(
    rows: pd.DataFrame,
    comparisons: Sequence[tuple[str, str]] = CLASSIC_COMPARISONS,
    *,
    n_resamples: int,
    seed: int,
    budget: float = PRIMARY_FRACTION,
) -> pd.DataFrame:
    """Policy differences in the classic cell (support private, decoys shared, irrelevant
    private) at ``budget``, tags kept, main templates (R1-rel against R1 where the labeller
    kept every fact reads R1's very calls: ``shared_calls`` counts them)."""
    keep = (rows["pilot"] == 0) & (rows["tags"] == "keep") & (rows["budget"] == budget)
    keep &= rows["variant"] == CLASSIC.id
    return differences(
        rows[keep],
        comparisons,
        label=f"classic cell {CLASSIC.id}, r={budget:g}",
        n_resamples=n_resamples,
        seed=seed,
    )


def relevance_labels(profile: Profile, client: Client, templates: str = "main") -> pd.DataFrame:
    """The relevance labeller's answer for every fact of the profile's tasks (``templates``
    within the profile's selection: its listed templates, its ``limit``) beside its true role:
    one row per (task, fact) with ``relevant`` (1 for support and decoy facts: on topic) and
    ``labelled`` (1 if the labeller called it relevant) and ``key`` (the labelling call's
    cache key: tasks whose statements read alike share one call). The labelling calls go
    through the cache, so after a run this sends nothing."""
    from deliberation.experiments.memory.grid import Grid
    from deliberation.experiments.memory.pipeline import RunReport, prepare
    from deliberation.experiments.memory.runs import profile_tasks

    tasks = profile_tasks("crossprofile", profile, templates=templates)  # as the runs asked
    prepared = prepare(
        tasks,
        Grid(policies=("R1-rel",), budgets=(PRIMARY_FRACTION,), item_limit=None, tags=("keep",)),
        stage_prefix="crossprofile",
        profile=profile,
        client=client,
        seed=profile.seed,
        truth=lambda task: {f.id: f for f in task.facts},
        report=RunReport(),
    )
    rows = []
    for p in prepared:
        labels = p.pool.relevance or {}
        for fact in p.task.facts:
            rows.append(
                {
                    "task": p.task.id,
                    "template": p.task.template,
                    "variant": p.task.variant,
                    "fact": fact.id,
                    "role": fact.role,
                    "relevant": int(fact.role in ("support", "decoy")),
                    "labelled": int(bool(labels.get(fact.id, False))),
                    "key": p.call_keys.get("relevance", ""),  # one labelling call per task
                }
            )
    return pd.DataFrame(rows)


def labeller_scores(labels: pd.DataFrame, *, n_resamples: int, seed: int) -> pd.DataFrame:
    """Precision and recall of the relevance labels against the true roles (relevant = support
    or decoy), and the share labelled relevant within each role, with cluster-robust t
    intervals (%)."""
    statistics = {
        "precision": mean_of("relevant", {"labelled": 1}, label="precision"),
        "recall": mean_of("labelled", {"relevant": 1}, label="recall"),
        **{
            f"labelled relevant | {role}": mean_of("labelled", {"role": role})
            for role in ("support", "decoy", "irrelevant")
            if (labels["role"] == role).any()
        },
    }
    if not (labels["labelled"] == 1).any():
        statistics.pop("precision")
    results = cluster_t_many(labels, statistics, "template")
    return pd.DataFrame(
        [
            {
                "measure": name,
                **percent_interval(r, ("estimate", "low", "high", "interval", "n_clusters")),
            }
            for name, r in results.items()
        ]
    )
