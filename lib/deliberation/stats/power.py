"""Power of the papers' preregistered tests at a profile's grid, by simulation (a planning aid).

Why simulation: the tests are cluster-robust t tests in Holm families and permutation tests,
whose power under clipped, unequal cells has no convenient closed form. Each replicate draws a
synthetic experiment with the effect planted (:func:`simulate_cluster_contrasts`,
:func:`_permutation_rejections`) and runs a vectorised equivalent of the notebooks' analysis
(:func:`t_p_values`: for a balanced design exactly the t of
:func:`deliberation.stats.cluster_t.contrast_inference`). Where the SDs come from and how the
planner is checked: docs/power.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd

# SDs used when a profile has no published rows for a test (or too few clusters to estimate):
# the cluster level and the cluster-to-cluster spread of the contrast, on the 0-1 scale (those
# of deliberation.benchmarks.crossprofile.simulate's uniform(-0.1, 0.1) shifts).
ASSUMED_SD = {"level": 0.1 / math.sqrt(3), "contrast": 0.1 / math.sqrt(3)}
MIN_CLUSTERS_TO_ESTIMATE = 5
_CROSSPROFILE_BANK = 60  # main templates in templates/crossprofile
# The most clusters that exist per dimension (the caller adds HiddenBench's task count, which
# needs its data file); the other dimensions are generated and have no limit.
DEFAULT_BANKS = {"templates": _CROSSPROFILE_BANK}
CSV_COLUMNS = [
    "test", "effect_points", "power", "mc_error", "recommended", "calls", "cost", "assumptions",
]  # fmt: skip
# Paper 1 reports H3 = +8.5 [3.5, 13.6] on 60 templates (Qwen): a per-template SD of the
# contrast of (13.6 - 3.5) / (2 x 1.96) x sqrt(60) = 20 points, binomial noise included. The
# planner takes it for every CrossProfile difference of two policies (H2 is one too); the
# worst case (cells at p = .5 plus the estimated or assumed SDs) is a sensitivity row.
PAPER_TEMPLATES = 60
PAPER_H3 = (8.5, 3.5, 13.6)
# Paper 1: "R1 scores 64.0% versus 64.5% for Random on Qwen": H2 is -0.5 points.
PAPER_H2 = (-0.5, "paper 1: R1 64.0% vs Random 64.5% (Qwen)")
# Paper 1's evidence-balance curve, copy policies pooled: 76.0% at a net lead of +2 against
# 13.5% at -2 (Qwen). Tested as the accuracy at +2 minus at -2 over templates (notebook 05's
# table; a template's memories reach -2 less often, so one cell each side is optimistic).
PAPER_LEAD_CURVE = (62.5, "paper 1: 76.0% at net lead +2 vs 13.5% at -2 (Qwen)")


@dataclass(frozen=True)
class Design:
    """One preregistered test: its statistic's cells, the grid dimension that sets its power."""

    name: str
    paper: int
    headline: str | None  # id in results/paper_numbers.yaml; None: not reported there
    dimension: str  # "templates", "tasks", "problems", "masking cases", "repeated replays"
    cells_positive: int  # cells on the + side of the contrast, per cluster
    cells_negative: int  # cells on the - side (0: a share tested against a null value)
    rows_per_cell: int  # rows per cell and cluster (budgets x replicates)
    notebook: str  # the notebook whose calls scale with the dimension (for calls and cost)
    rows_file: str | None = None  # tables/<profile>/<rows_file> to estimate the SDs from
    rows_filter: Mapping[str, object] = field(default_factory=dict)
    cluster_column: str = "template"
    family: str | None = None  # tests Holm-adjusted together
    null_value: float = 0.0  # the share a one-arm test is against (helpful share: 0.5)
    kind: str = "cluster t"  # or "permutation"
    assumed_effect: float | None = None  # points, when the papers report none
    reported_effect: tuple[float, str] | None = None  # the papers' number outside the headlines
    # an interaction of two differences ((a - b | x) - (a - b | y)): the statistic is twice the
    # difference of the + and - cell means, so each cell carries a quarter of the effect
    interaction: bool = False
    # the grid this design runs at is read from the profile by grid_size()


def designs() -> list[Design]:
    """Every preregistered test of both papers, in the papers' order."""
    # notebook 03's rows hold the pilot templates too; the tests run on the main ones
    cp = dict(rows_file="03_crossprofile_h1_h3_rows.csv", rows_filter={"pilot": 0})
    h1 = dict(cp, interaction=True)
    return [
        Design("H1", 1, "h1_r1_minus_b4", "templates", 8, 8, 1, "03", family="H1-H3", **h1),
        Design("H1 vs Random", 1, "h1_r1_minus_random", "templates", 8, 8, 1, "03", **h1),
        Design("H1 at 7 items", 1, "h1_fixed_seven_items", "templates", 8, 8, 1, "03", **h1),
        Design(
            "H2",
            1,
            None,
            "templates",
            8,
            8,
            1,
            "03",
            family="H1-H3",
            reported_effect=PAPER_H2,
            **cp,
        ),  # fmt: skip
        Design("H3", 1, "h3_r1rel_minus_r1", "templates", 8, 8, 1, "03", family="H1-H3", **cp),
        Design(
            "tags: remove - keep (classic cell)",
            1,
            "classic_cell_remove_tags",
            "templates",
            1,
            1,
            1,
            "04",
            rows_file="04_tag_ablation_rows.csv",
        ),
        Design(
            "tags: support shared - private",
            1,
            "social_proof_shared_minus_private",
            "templates",
            4,
            4,
            1,
            "04",
            rows_file="04_tag_ablation_rows.csv",
        ),
        Design(
            "evidence balance: lead +2 - lead -2",
            1,
            None,
            "templates",
            1,
            1,
            1,
            "05",
            rows_file="05_evidence_balance_rows.csv",
            reported_effect=PAPER_LEAD_CURVE,
        ),
        Design(
            "HiddenBench R1 - B3",
            1,
            "hiddenbench_r1_minus_b3",
            "tasks",
            3,
            3,
            1,
            "02",
            rows_file="02_hiddenbench_rows.csv",
            cluster_column="task",
        ),
        Design(
            "DHD helpful share - 50%",
            2,
            "wrong_helpful_share",
            "problems",
            1,
            0,
            1,
            "07",
            null_value=0.5,
            cluster_column="problem",
        ),
        Design(
            "six-cell: wrong-helpful reasoning hidden - full",
            2,
            "masking_reasoning_hidden",
            "masking cases",
            1,
            1,
            5,
            "08",
            cluster_column="problem",
        ),
        Design(
            "six-cell: wrong-helpful answer hidden - full",
            2,
            "masking_answer_hidden",
            "masking cases",
            1,
            1,
            5,
            "08",
            cluster_column="problem",
        ),
        Design(
            "repeated-replay permutation",
            2,
            None,
            "repeated replays",
            1,
            1,
            5,
            "07",
            kind="permutation",
            assumed_effect=30,
            cluster_column="problem",
        ),
        Design(
            "cross-fitted selection gain",
            2,
            "selection_gain",
            "problems",
            1,
            1,
            1,
            "08",
            cluster_column="problem",
        ),
    ]


@dataclass(frozen=True)
class Spread:
    """The SDs a design is simulated with, and where they come from."""

    level: float
    contrast: float
    source: str  # "tables/<profile>/<file> (k clusters)" or "assumed (no published rows)"
    kind: str = "assumed"  # "paper" (its interval), "published", "sim" (their rows), "assumed"
    total: float | None = None  # per-cluster SD of the contrast, binomial noise included


def estimate_spread(rows: pd.DataFrame, cluster: str, value: str = "correct") -> Spread | None:
    """Cluster SD of accuracy by the method of moments (variance of cluster means minus the
    binomial part), or None with fewer than :data:`MIN_CLUSTERS_TO_ESTIMATE` clusters."""
    if cluster not in rows or value not in rows:
        return None
    y = pd.to_numeric(rows[value], errors="coerce")
    grouped = y.groupby(rows[cluster]).agg(["mean", "size"])
    if len(grouped) < MIN_CLUSTERS_TO_ESTIMATE:
        return None
    p = float(y.mean())
    binomial = float((p * (1 - p) / grouped["size"]).mean())
    level = math.sqrt(max(0.0, float(grouped["mean"].var(ddof=1)) - binomial))
    return Spread(level, level, f"{len(grouped)} clusters")


def paper_spread() -> Spread:
    """The per-template SD of a CrossProfile policy contrast implied by paper 1's H3 interval."""
    value, low, high = PAPER_H3
    total = (high - low) / (2 * 1.959964) * math.sqrt(PAPER_TEMPLATES) / 100
    source = (
        f"paper 1's H3 interval {value:+g} [{low:g}, {high:g}] on {PAPER_TEMPLATES} templates:"
        f" per-template SD {total:.2f}"
    )
    return Spread(total, total, source, kind="paper", total=total)


def spread_for(
    design: Design,
    tables: Path | None,
    sim_tables: Path | None = None,
    *,
    worst_case: bool = False,
) -> Spread:
    """The papers' interval for a CrossProfile difference of two policies (not the interactions,
    whose SD the papers' H1 interval would give, nor the tag tests), unless ``worst_case``;
    else the rows' or the assumed SDs at p = .5 (below)."""
    paper = design.dimension == "templates" and design.family == "H1-H3"
    if paper and not worst_case and not design.interaction:
        return paper_spread()
    return _row_spread(design, tables, sim_tables)


def _row_spread(design: Design, tables: Path | None, sim_tables: Path | None = None) -> Spread:
    """The design's SDs from the profile's published rows when they allow it, else from the
    sim's rows (``tables/sim``, synthetic), else assumed; the source says which."""
    tried = []
    for folder, kind in ((tables, "published"), (sim_tables, "sim")):
        if not design.rows_file or folder is None:
            continue
        path = folder / design.rows_file
        if not path.is_file():
            continue
        rows = pd.read_csv(path)
        for column, level in design.rows_filter.items():
            if column in rows:
                rows = rows[rows[column] == level]
        found = estimate_spread(rows, design.cluster_column)
        if found is not None:
            label = " [synthetic (sim backend)]" if kind == "sim" else ""
            shown = "/".join(path.parts[-3:])  # tables/<profile>/<file>, not this machine's path
            return replace(found, source=f"{shown} ({found.source}){label}", kind=kind)
        tried.append(
            f"{'/'.join(path.parts[-3:])} has fewer than {MIN_CLUSTERS_TO_ESTIMATE} clusters"
        )
    why = "; ".join(tried) or ("no published rows" if design.rows_file else "no rows file")
    return Spread(ASSUMED_SD["level"], ASSUMED_SD["contrast"], f"assumed: {why}")


def holm_rows(p: np.ndarray) -> np.ndarray:
    """Holm-adjusted p-values of each row of ``p`` (replicates x tests): the step-down formula
    of :func:`deliberation.stats.holm`, vectorised (that one costs ~0.1 s a call)."""
    m = p.shape[1]
    order = np.argsort(p, axis=1)
    ranked = np.take_along_axis(p, order, axis=1) * (m - np.arange(m))
    adjusted_sorted = np.minimum(1.0, np.maximum.accumulate(ranked, axis=1))
    out = np.empty_like(p)
    np.put_along_axis(out, order, adjusted_sorted, axis=1)
    return out


def bh_rows(p: np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg q-values of each row of ``p``: the step-up formula of
    :func:`deliberation.stats.benjamini_hochberg`, vectorised."""
    m = p.shape[1]
    order = np.argsort(p, axis=1)
    ranked = np.take_along_axis(p, order, axis=1) * m / np.arange(1, m + 1)
    adjusted_sorted = np.minimum(1.0, np.minimum.accumulate(ranked[:, ::-1], axis=1)[:, ::-1])
    out = np.empty_like(p)
    np.put_along_axis(out, order, adjusted_sorted, axis=1)
    return out


def t_p_values(per_cluster: np.ndarray, null: float = 0.0, *, cells: int = 1, rows: int = 1):
    """Two-sided p of the cluster-robust t (G - 1 df) of the mean of ``per_cluster``
    (replicates x clusters), for a balanced design of ``cells`` cells with ``rows`` rows each
    per cluster: the one-sample t of the per-cluster contrasts with CR1's small-sample factor
    (N - 1) / (N - C) on the variance (N = G x cells x rows), which is exactly the t of
    :func:`deliberation.stats.cluster_t.contrast_inference`; no variation (SE 0) or fewer than
    2 clusters gives p = 1."""
    from scipy import stats as sps

    g = per_cluster.shape[1]
    if g < 2:
        return np.ones(per_cluster.shape[0])
    n = g * cells * rows
    factor = (n - 1) / (n - cells) if n > cells else 1.0
    se = per_cluster.std(axis=1, ddof=1) / math.sqrt(g) * math.sqrt(factor)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (per_cluster.mean(axis=1) - null) / se
    p = 2 * sps.t.sf(np.abs(t), g - 1)
    return np.where(se > 1e-12, p, 1.0)


def simulate_cluster_contrasts(
    design: Design,
    effect: float,
    n: int,
    spread: Spread,
    replicates: int,
    rng: np.random.Generator,
    rows_per_cell: int | None = None,
) -> np.ndarray:
    """Per-cluster observed contrasts (replicates x n) with ``effect`` (0-1 scale) planted.

    Cells of a contrast hold rows of probability ``0.5 + u_k + s_j * effect_k / 2`` (``u_k`` the cluster's level, normal
    with the cluster SD; ``effect_k`` the cluster's effect, normal around ``effect`` with the
    contrast SD; ``s_j = +-1`` the side of cell j), clipped to [0, 1]; for an interaction (H1: a
    difference of differences) each cell carries ``effect_k / 4``. At 0.5 the binomial variance
    is largest, so the power is not flattered."""
    m = rows_per_cell or design.rows_per_cell
    if spread.total is not None:  # the per-cluster contrast as the papers' interval implies
        return effect + rng.normal(0.0, spread.total, size=(replicates, n))
    level = rng.normal(0.0, spread.level, size=(replicates, n, 1))
    if design.cells_negative == 0:  # a share against its null value
        p = np.clip(design.null_value + effect + level, 0, 1)
        hits = rng.binomial(m * design.cells_positive, p[..., 0])
        return hits / (m * design.cells_positive) - design.null_value
    local = effect + rng.normal(0.0, spread.contrast, size=(replicates, n, 1))
    scale = 2.0 if design.interaction else 1.0
    plus = np.clip(0.5 + level + local / (2 * scale), 0, 1)
    minus = np.clip(0.5 + level - local / (2 * scale), 0, 1)
    pos = rng.binomial(m, np.broadcast_to(plus, (replicates, n, design.cells_positive)))
    neg = rng.binomial(m, np.broadcast_to(minus, (replicates, n, design.cells_negative)))
    return scale * (pos.mean(axis=2) / m - neg.mean(axis=2) / m)


def _permutation_rejections(
    effect: float,
    problems: int,
    blocks: int,
    replicates: int,
    alpha: float,
    rng: np.random.Generator,
    n_permutations: int = 200,
) -> np.ndarray:
    """Per replicate, the share of problems whose within-problem permutation test (BH across
    problems) finds a message whose removal changes success by ``effect``; ``blocks`` replays per
    arm. Permuting 0/1 labels within a problem draws the treated count hypergeometrically."""
    p_full = np.full((replicates, problems), 0.5 + effect / 2)
    p_drop = np.full((replicates, problems), 0.5 - effect / 2)
    full = rng.binomial(blocks, np.clip(p_full, 0, 1))
    drop = rng.binomial(blocks, np.clip(p_drop, 0, 1))
    observed = np.abs(full - drop)
    total = full + drop
    null_full = rng.hypergeometric(
        np.broadcast_to(total, (n_permutations, replicates, problems)),
        np.broadcast_to(2 * blocks - total, (n_permutations, replicates, problems)),
        blocks,
    )
    null = np.abs(2 * null_full - total)
    p = (1 + (null >= observed - 1e-9).sum(axis=0)) / (1 + n_permutations)
    return (bh_rows(p) <= alpha).mean(axis=1)


@dataclass(frozen=True)
class PowerEstimate:
    power: float
    mc_error: float  # binomial standard error of the estimate over the replicates


def estimate_power(
    design: Design,
    effect_points: float,
    n: int,
    spread: Spread,
    *,
    alpha: float = 0.05,
    replicates: int = 400,
    n_resamples: int = 400,
    seed: int = 0,
    family: Sequence[tuple[Design, float]] = (),
) -> PowerEstimate:
    """Rejection rate of ``design``'s test at ``n`` clusters (its dimension) with the effect
    planted; ``family``: the other (design, effect) pairs Holm-adjusted with it."""
    rng = np.random.default_rng(seed)
    effect = effect_points / 100
    if design.kind == "permutation":
        shares = _permutation_rejections(effect, 60, n, replicates, alpha, rng)
        return PowerEstimate(
            float(shares.mean()), float(shares.std(ddof=1) / math.sqrt(replicates))
        )
    del n_resamples  # the cluster t draws nothing

    def p_values(d: Design, effect: float) -> np.ndarray:
        contrasts = simulate_cluster_contrasts(d, effect, n, spread, replicates, rng)
        cells = d.cells_positive + d.cells_negative
        return t_p_values(contrasts, cells=cells, rows=d.rows_per_cell)

    p = p_values(design, effect)
    if family:
        others = [p_values(d, e / 100) for d, e in family]
        p = holm_rows(np.column_stack([p, *others]))[:, 0]
    rejected = p <= alpha
    rate = float(rejected.mean())
    return PowerEstimate(rate, math.sqrt(max(rate * (1 - rate), 1e-12) / replicates))


def grid_size(
    design: Design, experiments: object, banks: Mapping[str, int] | None = None
) -> int | None:
    """The profile's size of ``design.dimension``: its limit, else the whole bank (None: neither
    is known, e.g. HiddenBench's file is not downloaded)."""
    banks = dict(DEFAULT_BANKS if banks is None else banks)
    cp = experiments.crossprofile  # type: ignore[attr-defined]
    hb = experiments.hiddenbench  # type: ignore[attr-defined]
    dhd = experiments.dhd  # type: ignore[attr-defined]
    sizes = {
        "templates": _template_count(cp, banks.get("templates")),
        "tasks": hb.limit or banks.get("tasks"),
        "problems": dhd.repeated_problems if design.notebook == "08" else dhd.problems,
        "masking cases": dhd.masking_cases,
        "repeated replays": dhd.blocks,
    }
    return sizes[design.dimension]


def _template_count(crossprofile: object, bank: int | None) -> int | None:
    """Main templates the profile's CrossProfile grid runs: the main ones among its listed ids
    (every test reads main templates), else the bank; the first ``limit`` of them."""
    limit = crossprofile.limit  # type: ignore[attr-defined]
    listed = crossprofile.listed_main_templates()  # type: ignore[attr-defined]
    if listed is None:
        return limit or bank
    return min(listed, limit) if limit else listed


def _rows_per_cell(design: Design, experiments: object) -> int:
    """Rows per cell and cluster at the profile's grid (budgets, masking replicates)."""
    if design.dimension == "masking cases":
        return experiments.dhd.masking_replicates  # type: ignore[attr-defined]
    return design.rows_per_cell


@dataclass(frozen=True)
class PowerRow:
    """One test: power at the profile's grid and the smallest grid reaching the target."""

    design: Design
    effect_points: float
    effect_source: str
    n: int
    power: float
    mc_error: float
    recommended: int | None  # None: not reached within the search
    recommended_power: float
    spread_source: str
    bank_short: int = 0  # clusters missing from the bank for the recommendation
    curve: tuple[tuple[int, float], ...] = ()  # (n, power) simulated by the search
    spread_kind: str = "assumed"  # published | sim | assumed (Spread.kind)
    bank: int | None = None  # the most clusters of this dimension that exist


_SEARCH_CAP = 4096


def smallest_n(
    power_at, target: float, start: int, cap: int = _SEARCH_CAP
) -> tuple[int | None, float]:
    """The smallest n with power_at(n) >= target: doubling from ``start``, then bisection."""
    # below the floor the notebooks show no test at all (deliberation.stats.small_samples)
    from deliberation.stats.small_samples import MIN_CLUSTERS

    low, high = MIN_CLUSTERS - 1, max(MIN_CLUSTERS, start)
    value = power_at(high)
    while value < target:
        if high >= cap:
            return None, value
        low, high = high, min(cap, high * 2)
        value = power_at(high)
    best = (high, value)
    while high - low > max(1, high // 20):
        middle = (low + high) // 2
        at = power_at(middle)
        if at >= target:
            high, best = middle, (middle, at)
        else:
            low = middle
    return best


def _cached_power(cache, design, effect, spread, alpha, replicates, seed, family):
    """power(n) for the search, each n simulated once (``cache`` keeps the curve)."""

    def power_at(n: int) -> float:
        if n not in cache:
            cache[n] = estimate_power(
                design,
                effect,
                n,
                spread,
                alpha=alpha,
                replicates=replicates,
                seed=seed,
                family=family,
            ).power
        return cache[n]

    return power_at


def power_table(
    experiments: object,
    effects: Mapping[str, tuple[float, str]],
    tables: Path | None,
    *,
    sim_tables: Path | None = None,
    banks: Mapping[str, int] | None = None,
    target: float = 0.8,
    alpha: float = 0.05,
    replicates: int = 400,
    search_replicates: int = 200,
    seed: int = 0,
    names: Sequence[str] | None = None,
    curve_sizes: Sequence[int] = (),
    worst_case_rows: bool = True,
) -> list[PowerRow]:
    """Every design's power at the profile's grid and its recommended size (docs/power.md).
    ``tables``: the profile's published rows; ``sim_tables``: the sim's, used where the profile
    has none; ``banks``: the most clusters per dimension (default :data:`DEFAULT_BANKS`);
    ``names``: only these tests (their Holm family still counts); ``curve_sizes``: sizes to
    simulate for each row's ``curve`` besides those the search visits (the report's curves)."""
    banks = dict(DEFAULT_BANKS if banks is None else banks)
    out = []
    all_designs = designs()
    runs = [(d, False) for d in all_designs]
    if worst_case_rows:  # the sensitivity rows: H2 and H3 at the worst case p = .5
        runs += [(d, True) for d in all_designs if spread_for(d, None).kind == "paper"]
    for design, worst in runs:
        if names is not None and design.name not in names:
            continue
        effect, effect_source = effects[design.name]
        spread = spread_for(design, tables, sim_tables, worst_case=worst)
        base = design.name
        if worst:
            design = replace(design, name=f"{design.name} (worst case: p = .5)")
        m = _rows_per_cell(design, experiments)
        design_m = replace(design, rows_per_cell=m)
        family = [
            (replace(d, rows_per_cell=m), effects[d.name][0])
            for d in all_designs
            if design.family and d.family == design.family and d.name != base
        ]
        n_now = grid_size(design, experiments, banks)

        if n_now is None:
            now = PowerEstimate(float("nan"), float("nan"))
        else:
            now = estimate_power(
                design_m,
                effect,
                n_now,
                spread,
                alpha=alpha,
                replicates=replicates,
                seed=seed,
                family=family,
            )
        cache: dict[int, float] = {}
        search = _cached_power(
            cache, design_m, effect, spread, alpha, search_replicates, seed, family
        )
        recommended, at = smallest_n(search, target, n_now or 8)
        for size in curve_sizes:
            search(size)
        bank = banks.get(design.dimension)
        bank_short = 0
        if recommended is not None and bank is not None and recommended > bank:
            bank_short = recommended - bank
        out.append(
            PowerRow(
                design,
                effect,
                effect_source,
                n_now or 0,
                now.power,
                now.mc_error,
                recommended,
                at,
                spread.source,
                bank_short,
                tuple(sorted(cache.items())),
                spread.kind,
                bank,
            )
        )
    return out
