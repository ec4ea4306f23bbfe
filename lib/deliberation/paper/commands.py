"""CLI: ``deliberation paper``, ``deliberation plan``, ``deliberation report``,
``deliberation replay``, ``deliberation nbval``, ``deliberation lab`` and ``deliberation
bench`` (the Makefile's ``paper``, ``plan``, ``report``, ``replay``, ``nbval``, ``lab`` and
``bench`` targets)."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    from deliberation.cli import add_command

    paper = add_command(subparsers, "paper")
    paper.add_argument("profile", help="profile name or path")
    paper.add_argument("--notebooks", nargs="+", help="only these (names, stems or NN prefixes)")
    paper.add_argument("--force", action="store_true", help="run every notebook (FORCE=1)")
    paper.add_argument("--no-plan", action="store_true", help="do not print the plan first")
    paper.add_argument(
        "--publish",
        action="store_true",
        help="publish (PUBLISH=1): write figures/ and tables/ of a profile with published"
        " results (without it such a build writes build/outputs/), and the executed notebooks"
        " to notebooks/executed/<profile>/",
    )
    paper.set_defaults(func=_paper)

    plan = add_command(subparsers, "plan")
    plan.add_argument("profiles", nargs="+", metavar="profile", help="profile names or paths")
    plan.add_argument("--notebooks", nargs="+", help="only these (names, stems or NN prefixes)")
    plan.add_argument(
        "--csv", type=Path, help="also write the per-stage table as CSV (one profile)"
    )
    plan.add_argument(
        "--summary", action="store_true", help="one line per profile: totals and cost (Markdown)"
    )
    plan.add_argument(
        "--no-power",
        action="store_true",
        help="skip the power table (deliberation power; ~15 s a profile)",
    )
    plan.set_defaults(func=_plan)

    report = add_command(subparsers, "report")
    report.add_argument("profile", help="profile name or path")
    report.add_argument("--out", type=Path, help="folder (default build/report/<profile>)")
    report.add_argument(
        "--no-power", action="store_true", help="without the power page (~20 s of simulation)"
    )
    report.set_defaults(func=_report)

    replay = add_command(subparsers, "replay")
    replay.add_argument("profile", help="profile name or path")
    replay.add_argument("--notebooks", nargs="+", help="only these (names, stems or NN prefixes)")
    replay.add_argument(
        "--root", type=Path, help="folder holding results/ and tables/ (default: the repository)"
    )
    replay.set_defaults(func=_replay)

    lab = add_command(subparsers, "lab")
    lab.add_argument("--profile", default="sim", help="DELIBERATION_PROFILE for the kernels")
    lab.add_argument(
        "jupyter_args",
        nargs=argparse.REMAINDER,
        help="after --: passed on to jupyter lab (deliberation lab -- --port 8890)",
    )
    lab.set_defaults(func=_lab)

    nbval = add_command(subparsers, "nbval")
    nbval.add_argument(
        "profiles",
        nargs="*",
        metavar="profile",
        help="profile names or paths (default: every profile with notebooks/executed/<profile>/)",
    )
    nbval.add_argument(
        "--root", type=Path, help="folder holding notebooks/executed/ (default: the repository)"
    )
    nbval.set_defaults(func=_nbval)

    bench = add_command(subparsers, "bench")
    bench.add_argument("--only", nargs="+", help="only these benchmark scripts (stems)")
    bench.add_argument("--out", type=Path, help="Markdown file (default build/bench.md)")
    bench.set_defaults(func=_bench)


def _print_now(line: str) -> None:
    print(line, flush=True)


def _user_errors() -> tuple[type[Exception], ...]:
    """Errors that name a file and field: printed as one line, never as a traceback."""
    from deliberation.paper.manifest import ManifestError
    from deliberation.paper.outputs import OutputListError
    from deliberation.profiles.profile import ProfileError

    return (ManifestError, OutputListError, ProfileError)


def _reported(command):
    """Run a command; a user error is printed with the command's name and exits with 2."""

    def run(args: argparse.Namespace) -> int:
        try:
            return command(args)
        except _user_errors() as error:
            print(f"deliberation {args.command}: {error}")
            return 2

    return run


@_reported
def _paper(args: argparse.Namespace) -> int:
    from deliberation.inference import require_backend
    from deliberation.paper.build import build_paper, output_folders
    from deliberation.profiles.profile import load_profile

    profile = load_profile(args.profile)
    require_backend(profile)  # before the plan: no vLLM, no notebook runs
    with output_folders(profile, publish=args.publish):
        result = build_paper(
            args.profile,
            notebooks=args.notebooks,
            force=args.force,
            plan=not args.no_plan,
        )
    if result.failed is not None:
        return result.failed.exit_code  # 7 for a full disk, else 1
    if not result.ok:
        return 1
    if args.publish:
        from deliberation.paper.executed import PublishError, publish_build

        try:
            publish_build(args.profile, notebooks=args.notebooks, out=_print_now)
        except PublishError as error:
            print(f"deliberation paper: not published: {error}", flush=True)
            return 1
    return 0


@_reported
def _replay(args: argparse.Namespace) -> int:
    from deliberation.paper.replay import replay_published

    report = replay_published(args.profile, committed_root=args.root, notebooks=args.notebooks)
    for line in report.lines():
        print(line, flush=True)
    return 0 if report.ok else 1


@_reported
def _lab(args: argparse.Namespace) -> int:
    from deliberation.paper.lab import run_lab
    from deliberation.profiles.profile import load_profile

    load_profile(args.profile)  # a wrong name stops here, not in every kernel
    extra = args.jupyter_args[1:] if args.jupyter_args[:1] == ["--"] else args.jupyter_args
    return run_lab(args.profile, extra)


@_reported
def _nbval(args: argparse.Namespace) -> int:
    from deliberation.paper.executed import check_executed, published_profiles

    failed = []
    profiles = args.profiles or published_profiles(args.root)
    if not profiles:
        print("deliberation nbval: no executed notebooks are published (notebooks/executed/)")
        return 2
    for profile in profiles:
        report = check_executed(profile, root=args.root, out=lambda line: print(line, flush=True))
        for line in report.lines():
            print(line, flush=True)
        if not report.ok:
            failed.append(report.profile)
    return 1 if failed else 0


@_reported
def _plan(args: argparse.Namespace) -> int:
    import pandas as pd

    from deliberation.paper.manifest import load_manifest, select
    from deliberation.paper.plan import format_plan, plan_calls, summary_row

    if args.csv and len(args.profiles) > 1:
        raise SystemExit("deliberation plan: --csv takes one profile")
    entries = select(load_manifest(), args.notebooks)
    rows = []
    for name in args.profiles:
        plan = plan_calls(name, entries)
        if args.summary:
            rows.append(summary_row(plan))
            continue
        for line in format_plan(plan):
            print(line)
        if not args.no_power:
            for line in _power_beside_plan(plan):
                print(line, flush=True)
        if args.csv:
            from deliberation.io.atomic import atomic_write_text

            atomic_write_text(args.csv, plan.table().to_csv(index=False))
    if rows:
        print(pd.DataFrame(rows).to_markdown(index=False))
    return 0


def _power_beside_plan(plan) -> list[str]:
    """The power table of the plan's profile, its recommended grids costed from this plan
    (``deliberation power`` prints it with each test's sources)."""
    from deliberation.paper.power import run_power

    _, _, lines = run_power(plan.profile, plan=plan, compact=True)
    return [
        "",
        *lines,
        f"(each test's effect and variance source: deliberation power {plan.profile.name};"
        " skip this table: --no-power, make plan NOPOWER=1)",
    ]


@_reported
def _report(args: argparse.Namespace) -> int:
    from deliberation.paper.site import build_report

    index = build_report(args.profile, out=args.out, power=not args.no_power)
    print(f"report: {index}")
    return 0


def _bench(args: argparse.Namespace) -> int:
    from deliberation.paper.bench import run_benchmarks

    try:
        run_benchmarks(only=args.only, out=args.out)
    except ValueError as error:
        print(f"deliberation bench: {error}")
        return 2
    return 0
