"""Failed calls: requests that got no usable reply, kept apart from answers.

A failed call is never an answer: the response cache records it in its ``failures`` table and
the next run sends it again; everything computed from it fails too (the experiment packages
mark those rows ``failed``). :class:`FailedCalls` is a client's tally for the run: how many,
the first error and the server it came from, so a command can say what happened and exit with
:data:`deliberation.exit_codes.CALLS_FAILED`.

``make paper`` runs each notebook with :data:`LOG_ENV` naming a file: every client in the
notebook's kernel appends one JSON line per failed call to it, so the build learns that the
notebook is incomplete (and its tables and figures say so, :func:`incomplete_note`) without
the notebook doing anything.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import asdict, dataclass
from pathlib import Path

log = logging.getLogger(__name__)

LOG_ENV = "DELIBERATION_FAILED_CALLS_LOG"


@dataclass(frozen=True)
class FailedCall:
    stage: str
    error: str
    server: str  # where it was sent (a URL without credentials, or the backend's name)

    def line(self) -> str:
        return f"stage {self.stage} at {self.server}: {self.error}"


class FailedCalls:
    """The failed calls one client saw (each distinct request once per batch)."""

    def __init__(self) -> None:
        self.calls: list[FailedCall] = []

    def add(self, call: FailedCall) -> None:
        self.calls.append(call)
        path = os.environ.get(LOG_ENV)
        if path:
            try:
                with open(path, "a", encoding="utf-8") as log_file:
                    log_file.write(json.dumps(asdict(call)) + "\n")
            except OSError as exc:
                log.warning("cannot append to the failed-calls log %s: %s", path, exc)

    def __len__(self) -> int:
        return len(self.calls)

    @property
    def first(self) -> FailedCall | None:
        return self.calls[0] if self.calls else None

    def lines(self, command: str) -> list[str]:
        """What a command prints when calls failed (nothing when none did)."""
        if not self.calls:
            return []
        return [
            f"FAILED: {len(self.calls)} model calls got no usable reply; their rows (and every"
            " row computed from them) are marked failed and left out of every accuracy",
            f"first error: {self.calls[0].line()}",
            f"run the same command again to retry exactly those calls ({command});"
            " answered calls come from the cache",
        ]


def read_log(path: str | Path) -> list[FailedCall]:
    """The failed calls a notebook's kernel appended to ``path`` (none when it is absent)."""
    path = Path(path)
    if not path.is_file():
        return []
    calls = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            calls.append(FailedCall(**json.loads(line)))
        except (ValueError, TypeError):
            continue  # a line cut by a killed kernel: the others still count
    return calls


def logged_failures() -> list[FailedCall]:
    """Failed calls logged so far by this process's build log (:data:`LOG_ENV`), if any."""
    path = os.environ.get(LOG_ENV)
    return read_log(path) if path else []


def incomplete_note(calls: list[FailedCall]) -> str:
    """The caption prefix of an output made while calls had failed (empty when none had)."""
    if not calls:
        return ""
    return (
        f"INCOMPLETE (not final): {len(calls)} model calls failed in this notebook's run and are"
        " left out; the next `make paper` retries them. "
    )
