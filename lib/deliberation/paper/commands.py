"""CLI: ``deliberation paper``, ``plan``, ``report``, ``replay``, ``nbval``, ``check-real``,
``lab``, ``chromium`` and ``bench``: the Makefile's targets of the same names, whose recipes call
these and hold no logic of their own (tests/test_makefile.py checks each recipe against this
parser)."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

NOTEBOOKS_HELP = "only these notebooks (names, stems or NN prefixes; commas or spaces)"


def register(subparsers: argparse._SubParsersAction) -> None:
    from deliberation.cli import add_command, add_list, add_profile

    paper = add_command(subparsers, "paper")
    add_profile(paper)
    add_list(paper, "--notebooks", help=NOTEBOOKS_HELP)
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
    add_profile(plan, several=True)
    add_list(plan, "--notebooks", help=NOTEBOOKS_HELP)
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
    add_profile(report)
    report.add_argument("--out", type=Path, help="folder (default build/report/<profile>)")
    report.add_argument(
        "--no-power", action="store_true", help="without the power page (~20 s of simulation)"
    )
    report.set_defaults(func=_report)

    replay = add_command(subparsers, "replay")
    add_profile(replay)
    add_list(replay, "--notebooks", help=NOTEBOOKS_HELP)
    replay.add_argument(
        "--root", type=Path, help="folder holding results/ and tables/ (default: the repository)"
    )
    replay.set_defaults(func=_replay)

    check = add_command(subparsers, "check-real")
    add_profile(check)
    check.set_defaults(func=_check_real)

    lab = add_command(subparsers, "lab")
    add_profile(lab, default="sim")
    lab.add_argument(
        "--lab-args", default="", help='options for Jupyter, one string: "--port 8890 --no-browser"'
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

    chromium = add_command(subparsers, "chromium")
    chromium.add_argument(
        "--check", action="store_true", help="only say whether it is installed (exit 2: not)"
    )
    chromium.set_defaults(func=_chromium)

    bench = add_command(subparsers, "bench")
    add_list(bench, "--only", help="only these benchmark scripts (stems)")
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
    return report.exit_code


@_reported
def _lab(args: argparse.Namespace) -> int:
    from deliberation.paper.lab import run_lab
    from deliberation.profiles.profile import load_profile

    load_profile(args.profile)  # a wrong name stops here, not in every kernel
    return run_lab(args.profile, shlex.split(args.lab_args))


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

    from deliberation.experiments.grid_needs import check_grid
    from deliberation.paper.manifest import load_manifest, select
    from deliberation.paper.plan import format_plan, plan_calls, summary_row
    from deliberation.profiles.profile import load_profile

    if args.csv and len(args.profiles) > 1:
        raise SystemExit("deliberation plan: --csv takes one profile")
    entries = select(load_manifest(), args.notebooks)
    rows = []
    for name in args.profiles:
        # A grid a notebook cannot analyse is refused here, naming the key and a value.
        check_grid(load_profile(name), [e.name for e in entries])
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
        f"(each test's effect and variance source: deliberation power --profile {plan.profile.name};"
        " skip this table: --no-power, make plan NOPOWER=1)",
    ]


@_reported
def _report(args: argparse.Namespace) -> int:
    from deliberation.paper.site import build_report

    index = build_report(args.profile, out=args.out, power=not args.no_power)
    print(f"report: {index}")
    return 0


@_reported
def _check_real(args: argparse.Namespace) -> int:
    from deliberation.paper.check_real import run_check_real

    return run_check_real(args.profile)


@_reported
def _chromium(args: argparse.Namespace) -> int:
    from deliberation.paper.browser import install_chromium

    print(install_chromium(install=not args.check))
    return 0


def _bench(args: argparse.Namespace) -> int:
    from deliberation.paper.bench import run_benchmarks

    try:
        run_benchmarks(only=args.only, out=args.out)
    except ValueError as error:
        print(f"deliberation bench: {error}")
        return 2
    return 0
