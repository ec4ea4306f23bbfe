"""CLI: ``deliberation serve-sim`` and ``deliberation cache stats``."""

from __future__ import annotations

import argparse
from pathlib import Path

from deliberation import paths


def register(subparsers: argparse._SubParsersAction) -> None:
    from deliberation.cli import add_command
    from deliberation.inference.serve_sim import cli as serve_sim

    serve = add_command(subparsers, "serve-sim")
    serve_sim.add_arguments(serve)
    serve.set_defaults(func=serve_sim.run_from_args)

    cache = add_command(subparsers, "cache")
    cache_sub = cache.add_subparsers(dest="cache_command", required=True)
    stats = cache_sub.add_parser(
        "stats", help="calls, hits, tokens and latency by profile and stage"
    )
    stats.add_argument(
        "paths", nargs="*", type=Path, help="cache files (default: every .sqlite in the cache dir)"
    )
    stats.set_defaults(func=_cache_stats)


def _cache_stats(args: argparse.Namespace) -> int:
    import pandas as pd

    from deliberation.inference.cache import CacheFileError, ResponseCache

    files = args.paths or sorted(paths.cache_dir().glob("*.sqlite"))
    if not files:
        print(f"no cache files in {paths.cache_dir()}")
        return 0
    frames = []
    for file in files:
        if not file.is_file():
            print(f"{file}: no such cache file")
            return 2
        try:  # read-only: inspecting a cache never changes it (nor creates or migrates one)
            cache = ResponseCache(file, read_only=True)
        except CacheFileError as exc:
            print(exc)
            return 2
        with cache:
            frame = cache.stats()
        frame.insert(0, "cache", file.name)
        frames.append(frame)
    table = pd.concat(frames, ignore_index=True)
    with pd.option_context("display.width", 200, "display.max_columns", None):
        print(table.to_string(index=False))
    return 0
