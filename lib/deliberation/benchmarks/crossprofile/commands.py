"""CLI: ``deliberation crossprofile verify [PATHS]``, ``deliberation crossprofile audit
[PATHS]`` and ``deliberation tasks crossprofile --out FILE``. Library imports happen inside the
handlers, so ``deliberation --help`` stays fast.
"""

from __future__ import annotations

import argparse
from pathlib import Path

_VERIFY_DESCRIPTION = (
    "Check CrossProfile template files against the format, the answer-key rules and the bank-v2 "
    "balance design. With no PATHS the whole bank (templates/crossprofile/) is verified, "
    "including its composition (60 main + 10 pilot, 5 main per domain) and tone balance. With "
    "PATHS (files or folders), every file gets the per-template checks and the files are "
    "checked against each other for duplicate ids and texts and borrowed option names; add "
    "--composition to also check the bank-level rules."
)


def _add_verify_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="*", type=Path, help="template files or folders")
    parser.add_argument(
        "--composition",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="check 60 main + 10 pilot over 12 domains and the bank's tone balance "
        "(default: only when PATHS is empty)",
    )
    parser.add_argument(
        "--quiet", action="store_true", help="print only violations and the summary line"
    )


def register(subparsers: argparse._SubParsersAction) -> None:
    from deliberation.cli import add_command, command_group

    crossprofile = add_command(subparsers, "crossprofile")
    sub = crossprofile.add_subparsers(dest="crossprofile_command", required=True)

    verify = sub.add_parser(
        "verify",
        help="check CrossProfile templates (default: the whole bank); exit 0 only if all pass",
        description=_VERIFY_DESCRIPTION,
    )
    _add_verify_arguments(verify)
    verify.set_defaults(func=_run_verify)

    audit = sub.add_parser(
        "audit",
        help="role-blind readers vs chance over the main templates; exit 1 if one is more "
        "than 10 points above chance and above its random-keys bar",
        description=(
            "Run the cue audit (deliberation.benchmarks.crossprofile.audit) over the main templates of "
            "PATHS (default: the bank), each reader against chance + 10 points and against its "
            "own 95th percentile with the keys drawn at random. Templates need only parse, not "
            "pass the verifier, so an old bank can be audited too."
        ),
    )
    audit.add_argument("paths", nargs="*", type=Path, help="template files or folders")
    audit.add_argument(
        "--seed", type=int, default=None, help="task seed of the fact order (default: 0)"
    )
    audit.add_argument(
        "--family",
        action="append",
        default=None,
        metavar="NAME",
        help="run only the readers of this family (repeatable): surface, counts, topicality, "
        "order, lookup, classifier, meaning (default: all)",
    )
    audit.add_argument(
        "--draws",
        type=int,
        default=None,
        help="random-key draws each trained reader is retrained on for its random-keys bar "
        "(default: 100; 0 skips them, and the 10-point bar alone judges trained readers)",
    )
    audit.set_defaults(func=_run_audit)

    tasks = command_group(subparsers, "tasks").add_parser(
        "crossprofile",
        help="derive the CrossProfile tasks (template x 8 ownership variants) as JSONL",
    )
    tasks.add_argument("--out", type=Path, required=True, help="output .jsonl file")
    tasks.add_argument(
        "--seed",
        type=int,
        default=None,
        help="seed of the private holders and the fact order (default: 0)",
    )
    tasks.add_argument(
        "--templates", type=Path, default=None, help="template folder (default: the bank)"
    )
    tasks.add_argument("--no-pilot", action="store_true", help="main templates only (480 tasks)")
    tasks.set_defaults(func=_run_tasks)


def _seed(args: argparse.Namespace) -> int:
    from deliberation.benchmarks.crossprofile.tasks import DEFAULT_SEED

    return DEFAULT_SEED if args.seed is None else args.seed


def _run_verify(args: argparse.Namespace) -> int:
    from deliberation.benchmarks.crossprofile.loader import bank_dir
    from deliberation.benchmarks.crossprofile.verifier import format_report, verify_paths

    report = verify_paths(args.paths or None, composition=args.composition)
    if not report.files:
        where = ", ".join(map(str, args.paths)) if args.paths else str(bank_dir())
        print(f"no template files found in {where}")
        return 2
    print(format_report(report, details=not args.quiet))
    return 0 if report.ok else 1


def _run_audit(args: argparse.Namespace) -> int:
    from deliberation.benchmarks.crossprofile.audit import audit, format_audit
    from deliberation.benchmarks.crossprofile.loader import bank_dir, read_template, template_files

    files = template_files(args.paths or [bank_dir()])
    templates, problems = [], []
    for path in files:
        template, found = read_template(path)
        problems += found
        if template is not None:
            templates.append(template)
    if problems:
        print("\n".join(map(str, problems)))
        print("templates that do not parse cannot be audited; fix them first")
        return 2
    if not any(not t.pilot for t in templates):
        print(f"no main templates found in {', '.join(map(str, args.paths or [bank_dir()]))}")
        return 2
    from deliberation.benchmarks.crossprofile.audit import DRAWS, FAMILIES, readers

    if args.draws is not None and args.draws < 0:
        print(f"--draws must be 0 or more, got {args.draws}")
        return 2
    unknown = sorted(set(args.family or ()) - set(FAMILIES))
    if unknown:
        print(f"--family {', '.join(unknown)}: not a family of readers ({', '.join(FAMILIES)})")
        return 2
    battery = [r for r in readers(_seed(args)) if not args.family or r.family in args.family]
    draws = DRAWS if args.draws is None else args.draws
    report = audit(templates, seed=_seed(args), draws=draws, battery=battery)
    print(format_audit(report))
    return 0 if report.ok else 1


def _run_tasks(args: argparse.Namespace) -> int:
    from deliberation.benchmarks.crossprofile.errors import TemplateError
    from deliberation.benchmarks.crossprofile.tasks import derive_tasks, write_tasks_jsonl
    from deliberation.benchmarks.crossprofile.verifier import load_bank

    try:
        templates = load_bank(args.templates, include_pilot=not args.no_pilot)
    except TemplateError as exc:
        print(
            "templates fail verification; fix them first (deliberation crossprofile verify):"
            f"\n{exc}"
        )
        return 1
    tasks = derive_tasks(templates, seed=_seed(args))
    write_tasks_jsonl(tasks, args.out)
    n_pilot = sum(t.pilot for t in tasks)
    print(
        f"wrote {len(tasks)} tasks ({len(tasks) - n_pilot} main, {n_pilot} pilot) "
        f"from {len(templates)} templates to {args.out}"
    )
    return 0
