"""CLI: ``deliberation verify [PATHS]`` and ``deliberation tasks crossprofile --out FILE``."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from deliberation.crossprofile.errors import TemplateError
from deliberation.crossprofile.loader import bank_dir
from deliberation.crossprofile.tasks import DEFAULT_SEED, derive_tasks, write_tasks_jsonl
from deliberation.crossprofile.verifier import format_report, load_bank, verify_paths

log = logging.getLogger(__name__)


def register(subparsers: argparse._SubParsersAction) -> None:
    verify = subparsers.add_parser(
        "verify",
        help="check CrossProfile templates (default: the whole bank); exit 0 only if all pass",
        description=(
            "Check CrossProfile template files against the format and the answer-key rules. "
            "With no PATHS the whole bank (templates/crossprofile/) is verified, including its "
            "composition (60 main + 10 pilot, 5 main per domain). With PATHS (files or "
            "folders), every file gets the per-template checks and the files are checked "
            "against each other for duplicate ids and texts; add --composition to also check "
            "the bank's composition."
        ),
    )
    verify.add_argument("paths", nargs="*", type=Path, help="template files or folders")
    verify.add_argument(
        "--composition",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="check 60 main + 10 pilot over 12 domains (default: only when PATHS is empty)",
    )
    verify.add_argument(
        "--quiet", action="store_true", help="print only violations and the summary line"
    )
    verify.set_defaults(func=run_verify)

    crossprofile = _tasks_subparsers(subparsers).add_parser(
        "crossprofile",
        help="derive the CrossProfile tasks (template x 8 ownership variants) as JSONL",
    )
    crossprofile.add_argument("--out", type=Path, required=True, help="output .jsonl file")
    crossprofile.add_argument(
        "--seed",
        type=int,
        default=DEFAULT_SEED,
        help="seed of the private holders and the fact order",
    )
    crossprofile.add_argument(
        "--templates", type=Path, default=None, help="template folder (default: the bank)"
    )
    crossprofile.add_argument(
        "--no-pilot", action="store_true", help="main templates only (480 tasks)"
    )
    crossprofile.set_defaults(func=run_tasks)


def _tasks_subparsers(subparsers: argparse._SubParsersAction) -> argparse._SubParsersAction:
    """The ``tasks`` command's own subparsers, created once and shared by every benchmark area
    (so ``deliberation tasks hiddenbench`` can register beside ``tasks crossprofile``)."""
    parser = subparsers.choices.get("tasks")
    if parser is None:
        parser = subparsers.add_parser("tasks", help="derive benchmark tasks")
        parser.set_defaults(func=lambda args: parser.print_help() or 2)
        parser._benchmark_subparsers = parser.add_subparsers(dest="benchmark")  # type: ignore[attr-defined]
    return parser._benchmark_subparsers  # type: ignore[attr-defined]


def run_verify(args: argparse.Namespace) -> int:
    report = verify_paths(args.paths or None, composition=args.composition)
    if not report.files:
        where = ", ".join(map(str, args.paths)) if args.paths else str(bank_dir())
        print(f"no template files found in {where}")
        return 2
    print(format_report(report, details=not args.quiet))
    return 0 if report.ok else 1


def run_tasks(args: argparse.Namespace) -> int:
    try:
        templates = load_bank(args.templates, include_pilot=not args.no_pilot)
    except TemplateError as exc:
        print(f"templates fail verification; fix them first (deliberation verify):\n{exc}")
        return 1
    tasks = derive_tasks(templates, seed=args.seed)
    write_tasks_jsonl(tasks, args.out)
    n_pilot = sum(t.pilot for t in tasks)
    print(
        f"wrote {len(tasks)} tasks ({len(tasks) - n_pilot} main, {n_pilot} pilot) "
        f"from {len(templates)} templates to {args.out}"
    )
    return 0
