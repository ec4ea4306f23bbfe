"""``deliberation power PROFILE``: the preregistered tests' power at the profile's grid, the
smallest grid reaching the target, and its calls and cost from ``deliberation plan`` (a
planning aid; the simulation is :mod:`deliberation.stats.power`)."""

from __future__ import annotations

import argparse
import logging
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from deliberation.stats.small_samples import MIN_CLUSTERS as FLOOR

logger = logging.getLogger(__name__)

# Which reported model is "closest" to a profile: the first key its model name contains.
_CLOSEST_MODEL = {
    "qwen": "Qwen2.5-7B-Instruct",
    "llama": "Llama-3.1-8B-Instruct",
    "deepseek": "DeepSeek-V4.1-Flash",
    "gpt-oss": "gpt-oss-120b",
    "gemma": "gemma-4-31B-it",
}


def default_effects(
    model: str, overrides: Mapping[str, float] | None = None
) -> dict[str, tuple[float, str]]:
    """Each test's effect in points and where it comes from: the override, the paper's number
    for the closest model (results/paper_numbers.yaml), else the first model it reports."""
    from deliberation.results.side_by_side import load_paper_numbers
    from deliberation.stats.power import designs

    overrides = dict(overrides or {})
    headlines = {h.id: h for h in load_paper_numbers().headlines}
    wanted = next((v for k, v in _CLOSEST_MODEL.items() if k in model.lower()), None)
    names = {d.name for d in designs()}
    unknown = sorted(set(overrides) - names)
    if unknown:
        raise ValueError(
            f"deliberation power: --effect names no test: {', '.join(unknown)}"
            f" (tests: {', '.join(sorted(names))})"
        )
    effects = {}
    for design in designs():
        if design.name in overrides:
            effects[design.name] = (overrides[design.name], "--effect")
            continue
        if design.headline is None and design.reported_effect is not None:
            value, source = design.reported_effect
            effects[design.name] = (abs(value), source)
            continue
        if design.headline is None:
            effects[design.name] = (
                float(design.assumed_effect or 0.0),
                "assumed (the papers report no number)",
            )
            continue
        reported = headlines[design.headline].reported
        chosen = next((r for r in reported if r.model == wanted), reported[0])
        value = chosen.value - 100 * design.null_value
        effects[design.name] = (abs(value), f"{chosen.model} ({design.headline})")
    return effects


def _parse_effects(items: Sequence[str]) -> dict[str, float]:
    """``TEST=POINTS`` pairs (the test as the table names it)."""
    out = {}
    for item in items:
        name, sep, points = item.rpartition("=")
        try:
            out[name.strip()] = float(points)
        except ValueError:
            sep = ""
        if not sep or not name.strip():
            raise ValueError(f"deliberation power: --effect {item!r}: expected TEST=POINTS")
    return out


def recommended_cost(rows: Sequence, plan: object | None) -> list[tuple[int | None, str]]:
    """Calls and cost of each row's recommended grid: the plan's calls of the test's notebook
    scaled by recommended / current size (calls grow linearly with clusters and replays)."""
    from deliberation.profiles.cost import amount, estimate
    from deliberation.profiles.throughput import priced_cost

    if plan is None:
        return [(None, "not planned (--no-plan)") for _ in rows]
    table = plan.table()  # type: ignore[attr-defined]
    profile = plan.profile  # type: ignore[attr-defined]
    out = []
    for row in rows:
        part = table[table["notebook"].str.startswith(row.design.notebook + "_")]
        if row.recommended is None or part.empty or not row.n:
            why = "no plan rows" if part.empty else "target not reached"
            out.append((None, why))
            continue
        scale = row.recommended / row.n
        calls = int(round(part["requests"].sum() * scale))
        sent = max(1, int(part["to_send"].sum()))
        per_call = calls / sent
        prompt = int(part["prompt_tokens"].sum() * per_call)
        completion = int(part["completion_tokens"].sum() * per_call)
        ceiling = int(part["completion_ceiling"].sum() * per_call)
        if profile.synthetic:
            out.append((calls, "none (sim)"))
            continue
        # Priced as the plan prices: check-real's measured throughput where there is one.
        cost = estimate(priced_cost(profile)[0], prompt, completion, ceiling)
        if cost.gpu_hours is not None:
            out.append((calls, f"{amount(cost.gpu_hours)} {cost.device} h"))
        elif cost.money is not None:
            out.append((calls, f"{amount(cost.money)} {cost.currency}"))
        else:
            out.append((calls, "no cost section"))
    return out


def _power_frame(rows: Sequence, costs: Sequence[tuple[int | None, str]]):
    """The table with :data:`deliberation.stats.power.CSV_COLUMNS`."""
    import pandas as pd

    from deliberation.stats.power import CSV_COLUMNS

    records = []
    for row, (calls, cost) in zip(rows, costs, strict=True):
        if row.recommended is None:
            recommended = f"not reached at {row.design.dimension} <= 4096"
        else:
            recommended = f"{row.recommended} {row.design.dimension}"
            if row.bank_short:
                recommended += f" (bank has {row.bank}: {row.bank_short} short)"
        records.append(
            {
                "test": row.design.name,
                "effect_points": round(row.effect_points, 2),
                "power": round(row.power, 3),
                "mc_error": round(row.mc_error, 3),
                "recommended": recommended,
                "calls": calls,
                "cost": cost,
                "assumptions": f"effect: {row.effect_source}; SD: {row.spread_source}",
            }
        )
    return pd.DataFrame(records, columns=CSV_COLUMNS)


def cluster_banks() -> tuple[dict[str, int], list[str]]:
    """The most clusters per dimension that exist: CrossProfile's main templates and, when its
    file is here (``make data``, or the shared copies), HiddenBench's tasks; and what is missing."""
    from deliberation.benchmarks.hiddenbench.tasks import default_path, load_hiddenbench
    from deliberation.benchmarks.problems.items import DatasetNotFoundError
    from deliberation.stats.power import DEFAULT_BANKS

    banks = dict(DEFAULT_BANKS)
    missing = []
    try:
        banks["tasks"] = len(load_hiddenbench())
    except DatasetNotFoundError:
        missing.append(
            f"HiddenBench's file {default_path()} is absent (`make data`, or set"
            " DELIBERATION_DATA_DIR): its task count, and so the power at a grid without a"
            " hiddenbench limit, is unknown"
        )
    return banks, missing


def markdown(frame, **options) -> str:
    """The table as Markdown with a missing number (calls of a target not reached) blank."""
    return frame.astype(object).where(frame.notna(), "").to_markdown(index=False, **options)


def run_power(
    profile_name: str | object,
    effects: Mapping[str, float] | None = None,
    *,
    target: float = 0.8,
    alpha: float = 0.05,
    plan: bool | object = True,
    replicates: int = 400,
    compact: bool = False,
    curve_sizes: Sequence[int] = (),
):
    """(rows, table, lines): the power rows, the CSV table and the lines the command prints.
    ``plan``: a :class:`deliberation.paper.plan.Plan` already made, True to make one, False for
    none; ``compact``: without the per-test sources (``deliberation plan`` prints it so)."""
    from deliberation.io.paths import output_root
    from deliberation.profiles.profile import load_profile
    from deliberation.stats.power import MIN_CLUSTERS_TO_ESTIMATE, power_table

    profile = load_profile(profile_name) if isinstance(profile_name, str) else profile_name
    chosen = default_effects(profile.model or profile.name, effects)
    published: Path | None = output_root() / "tables" / profile.name
    sim: Path | None = output_root() / "tables" / "sim"
    if profile.synthetic:  # its own rows are the sim's
        published, sim = None, published
    banks, missing = cluster_banks()
    started = time.perf_counter()
    rows = power_table(
        profile.experiments,
        chosen,
        published if published is not None and published.is_dir() else None,
        sim_tables=sim if sim is not None and sim.is_dir() else None,
        banks=banks,
        target=target,
        alpha=alpha,
        replicates=replicates,
        curve_sizes=curve_sizes,
    )
    seconds = time.perf_counter() - started
    the_plan = None if plan is False else plan
    if plan is True:
        from deliberation.paper.plan import plan_calls

        the_plan = plan_calls(profile)
    frame = _power_frame(rows, recommended_cost(rows, the_plan))
    kind = profile.label  # the one label of its outputs (synthetic, or the model's)
    lines = [
        f"power: profile {profile.name} ({kind}); target {target:.0%}, alpha {alpha};"
        f" a planning aid: synthetic data with the effect planted, analysed as the notebooks do",
    ]
    if compact:
        shown = frame.rename(columns={"effect_points": "effect", "mc_error": "+/-"})
        lines += markdown(shown, tablefmt="simple").splitlines()
    else:
        lines += markdown(frame).splitlines()
    if not compact:
        lines.append("effects and variance components:")
    for row in [] if compact else rows:
        lines.append(
            f"- {row.design.name}: {row.effect_points:.2f} points from {row.effect_source};"
            f" at {row.n} {row.design.dimension}; SDs {row.spread_source}"
        )
    few = [r.design.name for r in rows if 0 < r.n < FLOOR and r.design.kind == "cluster t"]
    if few:
        lines.append(
            f"fewer than {FLOOR} clusters at this grid (" + ", ".join(few) + "): there the"
            " notebooks show no test at all (the measured floor), so no power; recommendations"
            f" start at {FLOOR}"
        )
    short = [r for r in rows if r.bank_short]
    benchmark = {"templates": "CrossProfile has", "tasks": "HiddenBench has"}
    for row in short:
        dimension = row.design.dimension
        lines.append(
            f"bank limit: {row.design.name} needs {row.recommended} {dimension};"
            f" {benchmark.get(dimension, 'the bank has')} {row.bank} ({row.bank_short} more"
            " would have to be written)"
        )
    if any(r.spread_kind == "sim" for r in rows):
        lines.append(
            "variance components from the sim's rows (tables/sim: synthetic (sim backend))"
            " where the profile has no published rows with"
            f" {MIN_CLUSTERS_TO_ESTIMATE} or more clusters"
        )
    if any(r.design.dimension == "tasks" and not r.n for r in rows):
        lines.extend(missing)
    lines.append(
        f"{len(rows)} tests simulated in {seconds:.1f} s ({replicates} replicates at the"
        " profile's grid; mc_error is the binomial standard error of the power)"
    )
    return rows, frame, lines


# The sizes every curve of the report is simulated at (besides the search's own).
CURVE_SIZES = (5, 10, 20, 40, 80, 160, 320)
_SPREAD_KINDS = {
    "paper": "variance: paper 1's H3 interval",
    "published": "variance: the profile's rows",
    "sim": "variance: sim rows [synthetic (sim backend)]",
    "assumed": "variance: assumed SDs",
}


def power_curves_figure(rows: Sequence, *, target: float = 0.8, title: str = ""):
    """Power against grid size, one panel per test: the simulated curve, the target, the
    profile's grid (dot), the recommendation (dotted line) and past the bank's end (shaded).
    Each panel says where its variance comes from (the sim's rows: synthetic)."""
    import textwrap

    from deliberation.publish.plots import Figure

    columns = 4
    lines = max(1, -(-len(rows) // columns))
    fig = Figure(figsize=(3.3 * columns, 2.7 * lines))
    axes = fig.subplots(lines, columns, squeeze=False, sharey=True)
    for ax, row in zip(axes.flat, rows, strict=False):
        curve = sorted(row.curve)
        sizes = [n for n, _ in curve]
        ax.plot(sizes, [p for _, p in curve], marker=".", color="C0", label="power")
        ax.axhline(target, linestyle="--", color="grey", linewidth=0.8)
        if row.n:
            ax.plot([row.n], [row.power], "o", color="C3", label="this grid")
        if row.recommended is not None:
            ax.axvline(row.recommended, linestyle=":", color="C2", label="recommended")
        right = max([*sizes, row.n or 1, row.recommended or 1])
        if row.bank is not None and row.bank < right:
            ax.axvspan(row.bank, right, color="grey", alpha=0.15, label="beyond the bank")
        ax.set_xscale("log")
        ax.set_ylim(-0.03, 1.03)
        ax.set_xlabel(row.design.dimension, fontsize=8)
        heading = [*textwrap.wrap(row.design.name, 40), f"{row.effect_points:g} points planted"]
        heading.append(_SPREAD_KINDS[row.spread_kind])
        ax.set_title("\n".join(heading), fontsize=6.5)
        ax.tick_params(labelsize=7)
    for ax in axes.flat[len(rows) :]:
        ax.set_visible(False)
    axes.flat[0].set_ylabel("power")
    axes.flat[0].legend(fontsize=6, loc="lower right")
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig


def docs_markers(profile: str) -> tuple[str, str]:
    """The markers around a profile's generated section of a Markdown page (``--docs``)."""
    return f"<!-- power:{profile}:begin -->", f"<!-- power:{profile}:end -->"


def power_summary(rows: Sequence, target: float = 0.8) -> str:
    """The numbers a reader of the table asks for, as a sentence: how many tests reach the
    target at this grid, the power of the others (lowest first), which rows run below the
    cluster floor (no test is shown there, so they never count as reaching the target) and which
    need more clusters than the bank has."""
    few = [r for r in rows if 0 < r.n < FLOOR and r.design.kind == "cluster t"]
    known = [r for r in rows if r.power == r.power]  # not NaN
    reached = [r for r in known if r.power >= target and r not in few]
    others = sorted((r for r in known if r not in reached), key=lambda r: r.power)
    text = f"At this grid {len(reached)} of the {len(known)} tests reach {target:.0%} power"
    if few:
        text += (
            f" ({len(few)} run at fewer than {FLOOR} clusters, where the notebooks show no test,"
            " and count as not reaching it)"
        )
    if others:
        listed = ", ".join(f"{r.design.name} {r.power:.2f}" for r in others)
        text += f"; the others' power, lowest first: {listed}"
    text += "."
    if few:
        text += (
            f" Below the floor of {FLOOR} clusters ({', '.join(r.design.name for r in few)}) no"
            " interval or test is shown, so no power either."
        )
    short = [r for r in rows if r.bank_short]
    if short:
        text += (
            " More clusters than the bank has: "
            + ", ".join(
                f"{r.design.name} ({r.recommended} {r.design.dimension}, {r.bank_short} short)"
                for r in short
            )
            + "."
        )
    return text


def _docs_section(profile: str, frame, rows: Sequence, command: str, target: float = 0.8) -> str:
    begin, end = docs_markers(profile)
    return (
        f"{begin}\n<!-- generated by `{command}`: rerun it, do not edit -->\n\n"
        f"{markdown(frame)}\n\n{power_summary(rows, target)}\n{end}"
    )


def write_docs_section(path: Path, profile: str, section: str) -> None:
    """Replace the profile's section between its markers (atomically); the markers must be in
    the page once each, so a misplaced section is an error, not a duplicate."""
    import re

    from deliberation.io.atomic import atomic_write_text

    begin, end = docs_markers(profile)
    text = path.read_text(encoding="utf-8")
    if text.count(begin) != 1 or text.count(end) != 1:
        raise ValueError(f"{path}: needs the markers {begin} and {end} once each")
    pattern = re.compile(re.escape(begin) + ".*?" + re.escape(end), re.DOTALL)
    atomic_write_text(path, pattern.sub(lambda _: section, text))


def _power(args: argparse.Namespace) -> int:
    import sys

    from deliberation.exit_codes import BAD_INPUT
    from deliberation.io.atomic import atomic_write_text

    try:
        effects = _parse_effects(args.effect)
        rows, frame, lines = run_power(
            args.profile, effects, target=args.power, alpha=args.alpha, plan=not args.no_plan
        )
    except ValueError as error:
        print(error, file=sys.stderr)
        return BAD_INPUT
    for line in lines:
        print(line)
    if args.csv:
        atomic_write_text(Path(args.csv), frame.to_csv(index=False))
    if args.docs:
        from deliberation.profiles.profile import load_profile

        profile = load_profile(args.profile).name
        command = " ".join(
            ["deliberation power", args.profile, *(["--no-plan"] if args.no_plan else [])]
            + [f"--effect '{e}'" for e in args.effect]
            + ([f"--power {args.power:g}"] if args.power != 0.8 else [])
            + ([f"--alpha {args.alpha:g}"] if args.alpha != 0.05 else [])
            + [f"--docs {args.docs}"]
        )
        try:
            write_docs_section(
                Path(args.docs), profile, _docs_section(profile, frame, rows, command, args.power)
            )
        except (OSError, ValueError) as error:
            print(f"deliberation power: {error}", file=sys.stderr)
            return BAD_INPUT
        print(f"written: the {profile} section of {args.docs}")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    from deliberation.cli import add_command, add_profile

    parser = add_command(subparsers, "power")
    add_profile(parser)
    parser.add_argument("--effect", action="append", default=[], metavar="TEST=POINTS")
    parser.add_argument("--power", type=float, default=0.8, help="target power (default 0.8)")
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--csv", help="write the table (test, effect_points, power, ...)")
    parser.add_argument(
        "--no-plan", action="store_true", help="skip the plan (no calls or cost columns)"
    )
    parser.add_argument(
        "--docs",
        metavar="FILE.md",
        help="also replace the profile's section of a Markdown page (between its"
        " <!-- power:PROFILE:begin/end --> markers) with the table and its summary",
    )
    parser.set_defaults(func=_power)
