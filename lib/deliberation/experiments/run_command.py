"""``deliberation run <experiment>``: one command for every registered experiment.

The skeleton every experiment shares lives here once: load the profile, start its model server
if a call must be sent, open the run (cache, progress, synthetic label), call the experiment's
``run(profile, client, **options)``, let its ``report`` write the rows and print the summary, and
exit with :data:`~deliberation.exit_codes.CALLS_FAILED` when any call failed. An experiment adds
only its own flags (``Experiment.arguments``) beside the
common ``--profile``, ``--cache``, ``--out`` and ``--no-progress``, and may narrow a quick try
(``--limit`` without its grid flags: ``Experiment.quick_try``), which the run's first line names.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from deliberation.experiments import experiment, experiments

if TYPE_CHECKING:
    from deliberation.experiments.record import Experiment


def register(subparsers: argparse._SubParsersAction) -> None:
    from deliberation.cli import command_group

    group = command_group(subparsers, "run")
    for record in experiments().values():
        _add_run_parser(group, record)


def _add_run_parser(
    group: argparse._SubParsersAction, record: Experiment
) -> argparse.ArgumentParser:
    """``deliberation run <record.name>``: the common flags around the experiment's own."""
    from deliberation.cli import add_profile

    parser = group.add_parser(record.name, help=record.summary, description=record.description)
    add_profile(parser, default="sim")
    known = {action.dest for action in parser._actions}
    record.arguments(parser, record.name)
    options = tuple(a.dest for a in parser._actions if a.dest not in known)
    parser.add_argument("--cache", type=Path, help="cache file (default: the profile's)")
    parser.add_argument("--out", type=Path, help=record.out_help)
    if record.outputs is not None:
        record.outputs(parser)
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    parser.set_defaults(func=_run_command, experiment=record.name, run_options=options)
    return parser


def _run_command(args: argparse.Namespace) -> int:
    """Run, write the rows, print the counts and the summary; exit
    :data:`~deliberation.exit_codes.CALLS_FAILED` when any call failed and
    :data:`~deliberation.exit_codes.BAD_INPUT` when the options or the data do not fit."""
    from deliberation.exit_codes import BAD_INPUT
    from deliberation.inference.model_server import model_server
    from deliberation.profiles.profile import load_profile

    profile = load_profile(args.profile)
    record = experiment(args.experiment)
    options = {name: getattr(args, name) for name in args.run_options}
    quick = None
    if record.quick_try is not None and options.get("limit") is not None:
        # A quick try (`--limit`) narrows the grid flags not given, and says so first.
        try:
            options, quick = record.quick_try(profile, record.name, options)
        except (KeyError, ValueError) as error:
            print(f"deliberation run {record.name}: {error}")
            return BAD_INPUT
    with model_server(profile):  # starts the profile's server if a call must be sent
        return _run(args, profile, options, quick)


def _run(args: argparse.Namespace, loaded, options: dict, quick: str | None) -> int:
    from deliberation.exit_codes import BAD_INPUT, CALLS_FAILED, OK, CommandError
    from deliberation.inference import open_run
    from deliberation.io import paths

    record = experiment(args.experiment)
    command = f"deliberation run {record.name}"
    # open_run: a run against a serve-sim endpoint is labelled synthetic whatever the profile.
    profile, client = open_run(loaded, cache_file=args.cache, progress=not args.no_progress)
    if quick:
        print(f"{command}: {quick}")  # the first line, before anything is sent
    try:
        result = record.run(profile, client, progress=not args.no_progress, **options)
    except (KeyError, ValueError) as error:
        print(f"{command}: {error}")
        return BAD_INPUT
    except CommandError as error:
        print(f"{command}: {error}")
        return error.exit_code
    args.out = args.out or paths.run_rows(profile.name, record.name)
    failed = record.report(result, profile, args)
    if client.served_as:
        print(
            f"model: the server answered as {', '.join(sorted(client.served_as))} for the"
            f" profile's `model: {profile.model}` (recorded as served_as in the provenance;"
            " openai.strict_model: true fails such calls)"
        )
    failures = client.failed.lines(command)
    if failures or failed:
        print("")
        for line in failures or [failed]:
            print(line)
        return CALLS_FAILED
    return OK
