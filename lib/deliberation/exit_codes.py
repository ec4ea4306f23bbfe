"""One exit code per outcome of a command, so a script (or `make`) can tell them apart.

The README's exit-code table is generated from :data:`EXIT_CODES`; every command returns one of
these names' values, never a bare number. An exception that should end a command with a given
code carries it as an ``exit_code`` attribute (:class:`CommandError` or any class with one): the
CLI prints its message on one line, without a traceback, and exits with that code.
"""

from __future__ import annotations

OK = 0
ERROR = 1  # an unexpected error (a bug): the traceback is shown
BAD_INPUT = 2  # bad arguments, profile, template or input file: the message names file and field
CALLS_FAILED = 3  # some model calls got no usable reply: rerun the same command to retry them
SERVER_UNREACHABLE = 4  # the model server could not be reached or started
PREFLIGHT_REFUSED = 5  # the server refused or ignored the profile's structured-output mode
MODEL_MISMATCH = 6  # the server serves (or replied as) another model than the profile names
OUTPUT_UNWRITABLE = 7  # an output or the response cache could not be written (e.g. disk full)
CHECK_FAILED = 8  # a check found a problem: check-real's stage table, replay's comparison
DATA_MISSING = 9  # benchmark data the command needs is not here: `make data` fetches it
INTERRUPTED = 130  # Ctrl-C / SIGTERM: every received answer is kept, rerun to resume

EXIT_CODES: dict[int, str] = {
    OK: "success",
    ERROR: "unexpected error (a bug: please report the traceback)",
    BAD_INPUT: "bad arguments or input (the message names the file and field)",
    CALLS_FAILED: "some model calls failed (no usable reply); rerun the same command to retry them",
    SERVER_UNREACHABLE: "the model server could not be reached or started",
    PREFLIGHT_REFUSED: "the server refused or ignored the structured-output mode (pre-flight)",
    MODEL_MISMATCH: "the server serves another model than the profile names",
    OUTPUT_UNWRITABLE: "an output or the response cache could not be written (disk full?)",
    CHECK_FAILED: "a check failed: a stage of check-real, or a table replay rebuilt differently",
    DATA_MISSING: "benchmark data is missing: run make data (the message names what needs it)",
    INTERRUPTED: "interrupted; every received answer is kept: rerun the same command to resume",
}


EXIT_CODES_BEGIN = "<!-- exit-codes:begin -->"
EXIT_CODES_END = "<!-- exit-codes:end -->"


def markdown_table() -> str:
    """The README's exit-code table (between :data:`EXIT_CODES_BEGIN` and :data:`EXIT_CODES_END`;
    a test checks that the README holds exactly this)."""
    rows = [f"| {code} | {meaning} |" for code, meaning in EXIT_CODES.items()]
    return "\n".join(["| code | outcome |", "| ---: | --- |", *rows])


class CommandError(Exception):
    """An outcome a command ends on, with its message for the user and its exit code."""

    exit_code: int = ERROR

    def __init__(self, message: str, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code
