"""CLI: ``deliberation data fetch | verify | sources | check``."""

from __future__ import annotations

import argparse
from pathlib import Path

from deliberation.io import paths


def register(subparsers: argparse._SubParsersAction) -> None:
    from deliberation.cli import add_command, add_list

    data = add_command(subparsers, "data")
    sub = data.add_subparsers(dest="data_command", required=True)

    fetch = sub.add_parser("fetch", help="download the pinned files with sha256 checks")
    fetch.add_argument("--dest", type=Path, default=None, help="default: data/external")
    add_list(
        fetch, "--only", metavar="NAME", help="benchmarks to fetch (default: all; commas or spaces)"
    )
    fetch.set_defaults(func=_fetch)

    verify = sub.add_parser("verify", help="check present files against their pinned sha256")
    verify.add_argument("--root", type=Path, default=None, help="default: data/external")
    add_list(verify, "--only", metavar="NAME")
    verify.set_defaults(func=_verify)

    sources = sub.add_parser("sources", help="list pinned repositories, commits and licences")
    sources.set_defaults(func=_sources)

    check = sub.add_parser("check", help="load every benchmark and grade its rendered gold answers")
    check.add_argument("--root", type=Path, default=None, help="default: data/external")
    add_list(check, "--only", metavar="NAME")
    check.set_defaults(func=_check)


def _fetch(args: argparse.Namespace) -> int:
    from deliberation.benchmarks.problems.download import FetchError, fetch

    dest = args.dest or paths.external_data_dir()
    try:
        results = fetch(dest, args.only)
    except KeyError as error:  # an unknown benchmark name
        print(error.args[0])
        return 2
    except FetchError as error:
        print(error)
        return 1
    downloaded = sum(r.status == "downloaded" for r in results)
    print(
        f"{len(results)} files in {dest}: {downloaded} downloaded, {len(results) - downloaded} already present"
    )
    return 0


def _verify(args: argparse.Namespace) -> int:
    from deliberation.benchmarks.problems.download import verify

    try:
        results = verify(args.root or paths.external_data_dir(), args.only)
    except KeyError as error:  # an unknown benchmark name
        print(error.args[0])
        return 2
    for result in results:
        if result.status != "present":
            print(f"{result.status:9s} {result.path}")
    bad = sum(r.status != "present" for r in results)
    print(f"{len(results) - bad} of {len(results)} files match their pinned sha256")
    return 1 if bad else 0


def _sources(args: argparse.Namespace) -> int:
    from deliberation.benchmarks.problems.sources import SOURCES

    for entry in SOURCES:
        print(
            f"{entry.name}: github.com/{entry.repository} @ {entry.commit[:8]}, {len(entry.files)} files"
        )
        print(f"    licence: {entry.licence}")
    print("Nothing is redistributed: `make data` downloads these files from their sources.")
    return 0


def _check(args: argparse.Namespace) -> int:
    from deliberation.benchmarks.problems import (
        BENCHMARKS,
        DatasetNotFoundError,
        grade,
        load,
        render_answer,
    )

    root = args.root or paths.external_data_dir()
    failed = 0
    missing = []
    for name in args.only or BENCHMARKS:
        try:
            items = load(name, root / name)
        except DatasetNotFoundError:
            missing.append(name)
            continue
        misses = [it.id for it in items if grade(it, render_answer(it)).score != 1.0]
        failed += len(misses)
        print(f"{name:9s} {len(items):5d} items, {len(misses)} rendered golds not graded correct")
        for item_id in misses[:10]:
            print(f"    {item_id}")
    if missing:
        print(
            f"no data for {', '.join(missing)} in {root}.\n"
            f"The benchmark files go in {root}/<benchmark>/. Get them with `deliberation data"
            " fetch` (or `make data`): it downloads the pinned files from their public sources"
            " and checks their sha256 (`deliberation data sources` lists them). To use files"
            " kept elsewhere, pass --root or set DELIBERATION_DATA_DIR."
        )
    return 1 if failed or missing else 0
