"""``deliberation profile new --base-url URL``: a profile for a running OpenAI-compatible
server, filled in from what the server answers (:mod:`deliberation.profiles.starter`)."""

from __future__ import annotations

import argparse
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    from deliberation.cli import add_command

    profile = add_command(subparsers, "profile")
    commands = profile.add_subparsers(dest="profile_command", required=True)
    new = commands.add_parser(
        "new",
        help="write a profile for a running OpenAI-compatible server (asks it for its model"
        " and structured-output mode; a small starter grid)",
    )
    new.add_argument(
        "--base-url", required=True, help="the server's URL, e.g. http://127.0.0.1:8000/v1"
    )
    new.add_argument("--name", help="profile name (default: from the served model's name)")
    new.add_argument("--out", type=Path, help="file to write (default params/<name>.yaml)")
    new.add_argument("--model", help="the model to use when the server lists several")
    new.add_argument(
        "--api-key-env", help="environment variable holding the server's key (hosted APIs)"
    )
    new.add_argument("--force", action="store_true", help="overwrite an existing file")
    new.set_defaults(func=_new)


def _new(args: argparse.Namespace) -> int:
    from deliberation.profiles.starter import new_profile

    path, facts = new_profile(
        args.base_url,
        name=args.name,
        out=args.out,
        model=args.model,
        api_key_env=args.api_key_env,
        force=args.force,
    )
    print(f"model: {facts.model} (listed: {', '.join(facts.listed) or 'none'})")
    print(f"structured_output: {facts.structured_output} (asked the server: pre-flight search)")
    print(f"concurrency: {facts.engine.concurrency} ({facts.concurrency_note()})")
    print(f"wrote {path} (the smallest grid every notebook can analyse)")
    profile = path.stem if path.parent.resolve() == _params_dir().resolve() else str(path)
    print(f"next: deliberation run crossprofile --profile {profile} --limit 1 (a quick try),")
    print(
        f"      make check-real PROFILE={profile}, make plan PROFILE={profile}, make paper PROFILE={profile}"
    )
    return 0


def _params_dir() -> Path:
    from deliberation.io import paths

    return paths.params_dir()
