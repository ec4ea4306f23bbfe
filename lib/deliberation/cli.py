"""The ``deliberation`` command. Each area of the library contributes its subcommands from its
own ``commands`` module (a ``register(subparsers)`` function), so adding a command never means
editing a central switch."""

from __future__ import annotations

import argparse
import importlib
import logging
import sys

# One line per area; each module defines register(subparsers) and sets func= on its parsers.
COMMAND_MODULES = [
    "deliberation.inference.commands",
    "deliberation.crossprofile.commands",
    "deliberation.datasets.commands",
    "deliberation.memory_runs.commands",
    "deliberation.natural_runs.commands",
]


def command_group(
    subparsers: argparse._SubParsersAction, name: str, help: str
) -> argparse._SubParsersAction:
    """The subparsers of a command that several areas extend (``deliberation run crossprofile``
    beside ``run dhd``): created by the first area that asks, shared by the others."""
    parser = subparsers.choices.get(name)
    if parser is None:
        parser = subparsers.add_parser(name, help=help)
        parser.set_defaults(func=lambda args: parser.print_help() or 2)
        parser._group_subparsers = parser.add_subparsers(dest=f"{name}_command")  # type: ignore[attr-defined]
    return parser._group_subparsers  # type: ignore[attr-defined]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="deliberation", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    subparsers = parser.add_subparsers(dest="command", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(levelname)s %(name)s: %(message)s",
    )
    # HTTP client libraries log one INFO line per request; keep them for --verbose only.
    for noisy in ("httpx", "httpcore", "httpx2", "httpcore2", "openai"):
        logging.getLogger(noisy).setLevel(logging.DEBUG if args.verbose else logging.WARNING)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
