"""The ``deliberation`` command. ``COMMANDS`` is the one registry of top-level commands: each
name with its one-line summary, so ``deliberation --help`` answers without importing any area
(numpy, pandas, pydantic and the HTTP client stay unloaded until a command runs). Each area's
``commands`` module (listed in ``_COMMAND_MODULES``) adds the options of its commands through
:func:`add_command` (or :func:`command_group` for a command several areas extend, such as
``run``), which take the summary from ``COMMANDS``: a name missing there, or claimed twice, is
an error when the parser is built."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import logging
import sys
from collections.abc import Callable, Sequence
from typing import Any

from deliberation import exit_codes

# One line per area; each module defines register(subparsers) and sets func= on its parsers.
_COMMAND_MODULES = [
    "deliberation.inference_commands",
    "deliberation.benchmarks.crossprofile.commands",
    "deliberation.benchmarks.problems.commands",
    "deliberation.experiments.run_command",
    "deliberation.paper.commands",
    "deliberation.results.commands",
    "deliberation.paper.power",
    "deliberation.profile_commands",
]

# The registry: every top-level command and what `deliberation --help` says of it.
COMMANDS = {
    "data": "download the DHD benchmark files, verify their checksums, list their sources",
    "crossprofile": "check the CrossProfile templates (verify) and measure surface cues (audit)",
    "tasks": "derive benchmark tasks from the CrossProfile templates",
    "cache": "inspect response caches (calls, hits, tokens, latency); export and import answers",
    "serve-sim": "serve the sim model over the OpenAI protocol (tests, local runs)",
    "models": "fetch and check the pinned model files",
    "profile": "write a profile for a running OpenAI-compatible server (profile new --base-url)",
    "serve": "start a profile's model server (its server: section) and keep it up until Ctrl-C",
    "run": "run a registered experiment through the response cache (`run --help` lists them)",
    "paper": "run the paper's notebooks for a profile, skipping those whose inputs are unchanged",
    "plan": "model calls, tokens, cache hits and cost per notebook and stage; sends nothing",
    "power": "power of each preregistered test at the profile's grid; the smallest grid reaching it",
    "report": "HTML site of a profile's executed notebooks, figures and tables",
    "check-real": "every experiment's stages on a profile's engine, tiny grid: a PASS/FAIL table",
    "chromium": "find headless Chromium for the report check; install it (apt-get, as root)",
    "replay": "rebuild a profile's tables from its published answers (results/); sends nothing",
    "nbval": "re-execute a profile's committed executed notebooks with nbval; compare outputs",
    "lab": "JupyterLab on notebooks/ with this environment's kernel (make lab)",
    "bench": "run every benchmark and write one table (build/bench.md)",
    "replies": "the prompts and raw replies of a profile's calls, from its response cache",
    "compare": "the headline numbers of several profiles side by side, with intervals",
    "parse-corpus": "collect free-text replies for the hand-labelled parser corpus; score it",
}


def add_command(
    subparsers: argparse._SubParsersAction, name: str, **kwargs: object
) -> argparse.ArgumentParser:
    """The parser of top-level command ``name``, with its summary from :data:`COMMANDS`."""
    if name not in COMMANDS:
        raise KeyError(f"command {name!r} is not in deliberation.cli.COMMANDS: add it there")
    if name in subparsers.choices:
        raise ValueError(f"command {name!r} is registered twice")
    return subparsers.add_parser(name, help=COMMANDS[name], **kwargs)


def command_group(subparsers: argparse._SubParsersAction, name: str) -> argparse._SubParsersAction:
    """The subparsers of a command that several areas extend (``deliberation run crossprofile``
    beside ``run dhd``): created by the first area that asks, shared by the others."""
    parser = subparsers.choices.get(name)
    if parser is None:
        parser = add_command(subparsers, name)
        parser.set_defaults(func=lambda args: parser.print_help() or 2)
        parser._group_subparsers = parser.add_subparsers(dest=f"{name}_command")  # type: ignore[attr-defined]
    return parser._group_subparsers  # type: ignore[attr-defined]


def positive_int(text: str) -> int:
    """An argparse type: a count of at least 1 (``--limit 0`` or ``-1`` is refused, not
    read as "everything" or as a slice from the end)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive count (1 or more), got {value}")
    return value


class ListOption(argparse.Action):
    """A list option that takes its values after commas, spaces or both, and may repeat:
    ``--policies R1 B4``, ``--policies R1,B4`` and ``--policies R1 --policies B4`` all give
    ``("R1", "B4")``. ``item_type`` converts each value, ``allowed`` lists the values it takes
    (argparse's own ``choices`` would see ``"R1,B4"`` as one value)."""

    def __init__(
        self,
        option_strings: list[str],
        dest: str,
        item_type: Callable[[str], Any] = str,
        allowed: Sequence[str] | None = None,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("nargs", "+")
        super().__init__(option_strings, dest, **kwargs)
        self.item_type, self.allowed = item_type, allowed

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        items = [part.strip() for value in values for part in str(value).split(",")]
        converted = []
        for item in filter(None, items):
            if self.allowed is not None and item not in self.allowed:
                parser.error(f"{option_string}: {item!r} is not one of {', '.join(self.allowed)}")
            try:
                converted.append(self.item_type(item))
            except (TypeError, ValueError) as error:
                parser.error(f"{option_string}: {item!r}: {error}")
        current = getattr(namespace, self.dest, None)
        earlier = () if current is None or current is self.default else tuple(current)
        setattr(namespace, self.dest, (*earlier, *converted))


def add_list(parser: argparse.ArgumentParser, *flags: str, **kwargs: Any) -> argparse.Action:
    """A :class:`ListOption`: every list option of the CLI takes commas or spaces."""
    return parser.add_argument(*flags, action=ListOption, **kwargs)


_PROFILE_SPEC = "_profile_spec"  # (dest, default, several) of a parser's profile option


def add_profile(
    parser: argparse.ArgumentParser,
    *,
    default: str | None = None,
    several: bool = False,
    required: bool = True,
    alias: bool = True,
    help: str = "profile name (params/<name>.yaml) or path",
) -> None:
    """``--profile P``, the one spelling every command takes (``--profile A B`` or ``A,B`` for a
    command of several profiles, dest ``profiles``); ``P`` given alone, without the flag, is
    kept as an alias (:func:`_resolve_profile` merges the two after parsing; ``alias=False``
    for a command whose positional arguments are something else). Without either: ``default``,
    else an error unless not ``required`` (then None)."""
    dest = "profiles" if several else "profile"
    shown = f"{help} (default {default})" if default else help
    if several:
        add_list(parser, "--profile", "--profiles", dest=dest, help=shown, default=None)
    else:
        parser.add_argument("--profile", dest=dest, help=shown, default=None)
    if alias:
        parser.add_argument(
            f"{dest}_alias",
            nargs="*" if several else "?",
            metavar="PROFILE",
            help="the same as --profile (an older spelling)",
        )
    parser.set_defaults(**{_PROFILE_SPEC: (dest, default, several, required)})


def _resolve_profile(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Merge a command's ``--profile`` with the positional alias: one of them, or the default."""
    spec = getattr(args, _PROFILE_SPEC, None)
    if spec is None:
        return
    dest, default, several, required = spec
    flag, alias = getattr(args, dest), getattr(args, f"{dest}_alias", None)
    if hasattr(args, f"{dest}_alias"):
        delattr(args, f"{dest}_alias")
    if several:
        alias = tuple(p for value in alias or () for p in value.split(",") if p) or None
    if flag is not None and alias:
        parser.error(f"{args.command}: give the profile once, as --profile {_shown(flag)}")
    value = flag if flag is not None else alias or None
    if value is None and default is not None:
        value = (default,) if several else default
    if value is None and required:
        parser.error(f"{args.command}: --profile is required (a name in params/ or a path)")
    setattr(args, dest, value)


def _shown(value: str | Sequence[str]) -> str:
    return value if isinstance(value, str) else " ".join(value)


_DESCRIPTION = """\
Reproducible companion to the papers "Rare, Relevant, and Still Wrong" (CrossProfile) and
"Wrong but Useful" (DHD). The experiments are the notebooks in notebooks/: `make paper` runs them
all with the sim profile (synthetic results, no GPU or network), `make paper PROFILE=<name>` with
a model from params/. These commands fetch the benchmark data, check the templates, and serve and
inspect what the notebooks use."""

_EPILOG = """\
examples:
  deliberation data fetch          download the pinned benchmark files into data/external/
  deliberation crossprofile verify check every CrossProfile template
  deliberation run crossprofile --profile sim --limit 1
                                   a quick try: one template, one policy, budget and
                                   tag mode (rows in build/runs/sim/)
  deliberation profile new --base-url http://127.0.0.1:8000/v1 --name my-model
                                   a profile for a running server (model, mode, small grid)
  deliberation replies --profile sim --invalid-first
                                   the prompts and raw replies behind those rows
  deliberation compare --profile sim my-model
                                   two profiles' headline numbers beside the papers'
  deliberation cache stats         what the response caches hold
  deliberation serve-sim --port 0  the sim behind an OpenAI-compatible endpoint

`deliberation COMMAND --help` describes a command's options."""


def _base_parser() -> tuple[argparse.ArgumentParser, argparse._SubParsersAction]:
    parser = argparse.ArgumentParser(
        prog="deliberation",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    return parser, subparsers


def _summary_parser() -> argparse.ArgumentParser:
    """The parser of ``deliberation --help``: every command by its summary, nothing imported."""
    parser, subparsers = _base_parser()
    for name, summary in COMMANDS.items():
        subparsers.add_parser(name, help=summary)
    return parser


def build_parser() -> argparse.ArgumentParser:
    """The full parser: every area's commands with their options (imports every area)."""
    parser, subparsers = _base_parser()
    for name in _COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def _command_given(argv: list[str]) -> bool:
    """Whether ``argv`` names a command (anything but the top-level options)."""
    return any(not arg.startswith("-") for arg in argv)


def _readable_anywhere() -> None:
    """Print on any terminal: a character the terminal's encoding (ASCII, Latin-1) cannot show,
    or a lone surrogate from a model's reply, is written as a backslash escape, never a crash."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with contextlib.suppress(ValueError, OSError):
                reconfigure(errors="backslashreplace")


def main(argv: list[str] | None = None) -> int:
    _readable_anywhere()
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser() if _command_given(argv) else _summary_parser()
    args = parser.parse_args(argv)
    _resolve_profile(parser, args)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(levelname)s %(name)s: %(message)s",
    )
    # HTTP client libraries log one INFO line per request; keep them for --verbose only.
    for noisy in ("httpx", "httpcore", "httpx2", "httpcore2", "openai"):
        logging.getLogger(noisy).setLevel(logging.DEBUG if args.verbose else logging.WARNING)
    from deliberation.inference.urls import install_log_redaction

    install_log_redaction()  # no URL credentials in any log line, the HTTP libraries' included
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        # Every answer received before the interrupt is already committed to the cache
        # (inference/interrupts.py): one line, no traceback.
        kept = sys.modules.get("deliberation.inference.cache")
        count = getattr(kept, "ANSWERS_STORED", 0)
        print(
            f"deliberation {args.command}: interrupted: {count} answers kept, rerun the same"
            " command to resume",
            file=sys.stderr,
        )
        return exit_codes.INTERRUPTED
    except Exception as error:
        code = getattr(error, "exit_code", None)
        if not args.verbose and isinstance(code, int) and not isinstance(code, bool):
            # An outcome the error names itself (server unreachable, pre-flight refused, model
            # mismatch, output unwritable, ...): its message and its own exit code.
            print(f"deliberation {args.command}: {error}", file=sys.stderr)
            return code
        if not args.verbose and _is_unwritable_output(error):
            # Written outside atomic.py (a notebook's output, a log): one line all the same.
            print(f"deliberation {args.command}: cannot write: {error}", file=sys.stderr)
            return exit_codes.OUTPUT_UNWRITABLE
        if args.verbose or not _is_user_error(error):
            raise
        # Bad input (a profile, a template, a data folder, a cache file, a missing key) is
        # reported as the error says it, naming the file and field, without a traceback.
        print(f"deliberation {args.command}: {error}", file=sys.stderr)
        return exit_codes.BAD_INPUT


def _is_unwritable_output(error: BaseException) -> bool:
    """A disk with no space left, or a read-only one (errno ENOSPC, EDQUOT, EFBIG, EROFS)."""
    import errno

    unwritable = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS}
    return isinstance(error, OSError) and error.errno in unwritable


# Errors that describe the user's input or environment; anything else is a bug and keeps its
# traceback. Matched by name so that this module imports no area (``--help`` stays fast).
_USER_ERRORS = frozenset(
    {
        "ProfileError",
        "MissingAPIKeyError",
        "InvalidAPIKeyError",
        "CacheError",
        "DatasetFormatError",
        "DatasetNotFoundError",
        "TemplateError",
        "ReferenceNotFoundError",
        "PoolExistsError",
        "FetchError",
        "ChecksumMismatch",
        "BackendUnavailableError",
        "ServerStartError",
        "PreflightError",
        "SendingForbiddenError",
    }
)


def _is_user_error(error: BaseException) -> bool:
    return any(
        cls.__name__ in _USER_ERRORS and cls.__module__.startswith("deliberation.")
        for cls in type(error).__mro__
    )


if __name__ == "__main__":
    sys.exit(main())
