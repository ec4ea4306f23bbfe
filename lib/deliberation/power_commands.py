"""``deliberation power PROFILE``: the preregistered tests' power at the profile's grid, the
smallest grid reaching the target, and its calls and cost from ``deliberation plan`` (a
planning aid; the simulation is :mod:`deliberation.stats.power`)."""

from __future__ import annotations

import argparse
import logging
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

logger = logging.getLogger(__name__)

# Which reported model is "closest" to a profile: the first key its model name contains.
CLOSEST_MODEL = {
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
    wanted = next((v for k, v in CLOSEST_MODEL.items() if k in model.lower()), None)
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


def parse_effects(items: Sequence[str]) -> dict[str, float]:
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
    from deliberation.cost import amount, estimate

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
        cost = estimate(profile.cost, prompt, completion, ceiling)
        if cost.gpu_hours is not None:
            out.append((calls, f"{amount(cost.gpu_hours)} GPU h"))
        elif cost.money is not None:
            out.append((calls, f"{amount(cost.money)} {cost.currency}"))
        else:
            out.append((calls, "no cost section"))
    return out


def power_frame(rows: Sequence, costs: Sequence[tuple[int | None, str]]):
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
                recommended += f" (bank has {row.design.bank}: {row.bank_short} short)"
        records.append(
            {
                "test": row.design.name,
                "effect_points": round(row.effect_points, 2),
                "power": round(row.power, 3),
                "mc_error": round(row.mc_error, 3),
                "recommended": recommended,
                "calls": calls,
                "cost": cost,
            }
        )
    return pd.DataFrame(records, columns=CSV_COLUMNS)


def run_power(
    profile_name: str,
    effects: Mapping[str, float] | None = None,
    *,
    target: float = 0.8,
    alpha: float = 0.05,
    plan: bool = True,
    replicates: int = 400,
):
    """(rows, table, lines): the power rows, the CSV table and the lines the command prints."""
    from deliberation.params import load_profile
    from deliberation.paths import output_root
    from deliberation.stats.power import power_table

    profile = load_profile(profile_name)
    chosen = default_effects(profile.model or profile.name, effects)
    tables = output_root() / "tables" / profile.name
    started = time.perf_counter()
    rows = power_table(
        profile.experiments,
        chosen,
        tables if tables.is_dir() else None,
        target=target,
        alpha=alpha,
        replicates=replicates,
    )
    seconds = time.perf_counter() - started
    the_plan = None
    if plan:
        from deliberation.paper.plan import plan_calls

        the_plan = plan_calls(profile)
    frame = power_frame(rows, recommended_cost(rows, the_plan))
    kind = "synthetic (sim backend)" if profile.synthetic else f"{profile.backend} {profile.model}"
    lines = [
        f"power: profile {profile.name} ({kind}); target {target:.0%}, alpha {alpha};"
        f" a planning aid: synthetic data with the effect planted, analysed as the notebooks do",
        *frame.to_markdown(index=False).splitlines(),
        "effects and variance components:",
    ]
    for row in rows:
        lines.append(
            f"- {row.design.name}: {row.effect_points:.2f} points from {row.effect_source};"
            f" at {row.n} {row.design.dimension}; SDs {row.spread_source}"
        )
    few = [r.design.name for r in rows if 0 < r.n < 5]
    if few:
        lines.append(
            "fewer than 5 clusters at this grid (" + ", ".join(few) + "): there the cluster"
            " bootstrap rejects a true null far more often than alpha, so a high power is not"
            " evidence; recommendations start at 5"
        )
    short = [r for r in rows if r.bank_short]
    for row in short:
        lines.append(
            f"bank limit: {row.design.name} needs {row.recommended} templates; CrossProfile has"
            f" {row.design.bank} main templates ({row.bank_short} more would have to be written)"
        )
    lines.append(
        f"{len(rows)} tests simulated in {seconds:.1f} s ({replicates} replicates at the"
        " profile's grid; mc_error is the binomial standard error of the power)"
    )
    return rows, frame, lines


def _power(args: argparse.Namespace) -> int:
    import sys

    from deliberation.atomic import atomic_write_text
    from deliberation.exit_codes import BAD_INPUT

    try:
        effects = parse_effects(args.effect)
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
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    from deliberation.cli import add_command

    parser = add_command(subparsers, "power")
    parser.add_argument("profile")
    parser.add_argument("--effect", action="append", default=[], metavar="TEST=POINTS")
    parser.add_argument("--power", type=float, default=0.8, help="target power (default 0.8)")
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--csv", help="write the table (test, effect_points, power, ...)")
    parser.add_argument(
        "--no-plan", action="store_true", help="skip the plan (no calls or cost columns)"
    )
    parser.set_defaults(func=_power)
