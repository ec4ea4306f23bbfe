"""CLI: ``deliberation replies`` (prompts and raw replies from the response cache) and
``deliberation compare`` (several profiles' headline numbers side by side)."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    replies = subparsers.add_parser(
        "replies",
        help="the prompts and raw replies of a profile's calls, from its response cache",
        description=(
            "Shows each call's prompt as sent and the model's raw reply, read from the profile's "
            "response cache (read-only). Validity, reason and task come from the rows the runs "
            "wrote (tables/<profile>/*_rows.csv, build/runs/<profile>/, and any --rows file); "
            "a reply no rows mention is checked against its request's output spec."
        ),
    )
    replies.add_argument("--profile", default="sim", help="profile name or path (default sim)")
    replies.add_argument("--stage", help="a stage (crossprofile.decision) or its prefix (dhd)")
    replies.add_argument("--task", help="a task id (template/variant) or a template id")
    order = replies.add_mutually_exclusive_group()
    order.add_argument(
        "--invalid-first", action="store_true", help="invalid replies first, then failed calls"
    )
    order.add_argument(
        "--only", choices=("invalid", "failed", "valid", "unchecked"), help="only these calls"
    )
    replies.add_argument("--limit", type=int, default=5, help="replies shown (default 5; 0: all)")
    replies.add_argument(
        "--rows", type=Path, nargs="+", default=[], help="rows files (deliberation run --out)"
    )
    replies.add_argument("--cache", type=Path, help="cache file (default: the profile's)")
    replies.set_defaults(func=_replies)

    compare = subparsers.add_parser(
        "compare",
        help="the headline numbers of several profiles side by side, with intervals",
        description=(
            "Reads each profile's published tables (tables/<profile>/, written by make paper) "
            "for every table the claims tables of figures/README.md name, and shows estimate "
            "[95% interval] side by side; also writes a report page."
        ),
    )
    compare.add_argument("profiles", nargs="+", metavar="profile", help="profile names")
    compare.add_argument("--tables", nargs="+", help="only these tables (file stems)")
    compare.add_argument(
        "--out", type=Path, help="page folder (default build/report/compare-<P1>-<P2>...)"
    )
    compare.set_defaults(func=_compare)


def _replies(args: argparse.Namespace) -> int:
    from deliberation.results.replies import find_replies, format_selection

    missing = [path for path in args.rows if not path.is_file()]
    if missing:
        print(f"deliberation replies: --rows: no such file {missing[0]}")
        return 2
    selection = find_replies(
        args.profile,
        cache_file=args.cache,
        rows=args.rows,
        stage=args.stage,
        task=args.task,
        only=args.only,
        invalid_first=args.invalid_first,
        limit=args.limit or None,
    )
    for line in format_selection(selection):
        print(line)
    return 0


def _compare(args: argparse.Namespace) -> int:
    from deliberation.results.compare import compare_profiles, write_comparison_page

    comparison = compare_profiles(args.profiles, tables=args.tables)
    for line in comparison.lines():
        print(line)
    page = write_comparison_page(comparison, args.out)
    print(f"\npage: {page}")
    made = any(not block.frame.empty for block in comparison.blocks)
    if not made:
        print("no headline table exists for these profiles yet: run make paper PROFILE=<name>")
    return 0 if made else 1
