"""CLI: ``deliberation data fetch | verify | sources | check``."""

from __future__ import annotations

import argparse
from pathlib import Path

from deliberation import paths


def register(subparsers: argparse._SubParsersAction) -> None:
    data = subparsers.add_parser("data", help="download and check the DHD benchmark files")
    sub = data.add_subparsers(dest="data_command", required=True)

    fetch = sub.add_parser("fetch", help="download the pinned files with sha256 checks")
    fetch.add_argument("--dest", type=Path, default=None, help="default: data/external")
    fetch.add_argument(
        "--only", nargs="+", metavar="NAME", help="benchmarks to fetch (default: all)"
    )
    fetch.set_defaults(func=_fetch)

    verify = sub.add_parser("verify", help="check present files against their pinned sha256")
    verify.add_argument("--root", type=Path, default=None, help="default: data/external")
    verify.add_argument("--only", nargs="+", metavar="NAME")
    verify.set_defaults(func=_verify)

    sources = sub.add_parser("sources", help="list pinned repositories, commits and licences")
    sources.set_defaults(func=_sources)

    check = sub.add_parser("check", help="load every benchmark and grade its rendered gold answers")
    check.add_argument("--root", type=Path, default=None, help="default: data/external")
    check.add_argument("--only", nargs="+", metavar="NAME")
    check.set_defaults(func=_check)


def _fetch(args: argparse.Namespace) -> int:
    from deliberation.datasets.fetch import FetchError, fetch

    dest = args.dest or paths.external_data_dir()
    try:
        results = fetch(dest, args.only)
    except FetchError as error:
        print(error)
        return 1
    downloaded = sum(r.status == "downloaded" for r in results)
    print(
        f"{len(results)} files in {dest}: {downloaded} downloaded, {len(results) - downloaded} already present"
    )
    return 0


def _verify(args: argparse.Namespace) -> int:
    from deliberation.datasets.fetch import verify

    results = verify(args.root or paths.external_data_dir(), args.only)
    for result in results:
        if result.status != "present":
            print(f"{result.status:9s} {result.path}")
    bad = sum(r.status != "present" for r in results)
    print(f"{len(results) - bad} of {len(results)} files match their pinned sha256")
    return 1 if bad else 0


def _sources(args: argparse.Namespace) -> int:
    from deliberation.datasets.sources import SOURCES

    for entry in SOURCES:
        print(
            f"{entry.name}: github.com/{entry.repository} @ {entry.commit[:8]}, {len(entry.files)} files"
        )
        print(f"    licence: {entry.licence}")
    print("Nothing is redistributed: `make data` downloads these files from their sources.")
    return 0


def _check(args: argparse.Namespace) -> int:
    from deliberation.datasets import BENCHMARKS, grade, load, render_answer

    root = args.root or paths.external_data_dir()
    failed = 0
    for name in args.only or BENCHMARKS:
        items = load(name, root / name)
        misses = [it.id for it in items if grade(it, render_answer(it)).score != 1.0]
        failed += len(misses)
        print(f"{name:9s} {len(items):5d} items, {len(misses)} rendered golds not graded correct")
        for item_id in misses[:10]:
            print(f"    {item_id}")
    return 1 if failed else 0
