"""Progress of model calls, shown where someone is looking.

Interactively (a terminal, JupyterLab) a batch shows a tqdm bar: the widget bar when ipywidgets
is installed, else the text bar (never ``tqdm.auto``'s fallback, which warns "IProgress not
found" into every notebook output that has a bar). Under ``make paper`` nobody reads the
executed notebook while it runs, so the bars are off there; instead every call done is counted
into the file the build names in ``DELIBERATION_PROGRESS_FILE``, and the build prints the notebook,
its cell and the calls done of those planned on the terminal (``deliberation.paper.progress``).
"""

from __future__ import annotations

import functools
import json
import os
import time
from collections.abc import Iterable
from typing import Any

PROGRESS_FILE_ENV = "DELIBERATION_PROGRESS_FILE"
_WRITE_EVERY_S = 0.5


@functools.cache
def _bar_class() -> type:
    try:
        import ipywidgets  # noqa: F401
    except ImportError:
        from tqdm.std import tqdm
    else:
        from tqdm.auto import tqdm
    return tqdm


def progress_bar(
    iterable: Any = None, *, total: int | None = None, desc: str, disable: bool = False
) -> Any:
    """A tqdm bar (over ``iterable``, or updated by hand up to ``total``); off under
    ``make paper``, whose build reports progress itself."""
    disable = disable or bool(os.environ.get(PROGRESS_FILE_ENV))
    return _bar_class()(iterable, total=total, desc=desc, disable=disable)


class _CallCounter:
    """The distinct prompts (cache keys) this process has done: a notebook that reads calls
    again (an analysis cell re-reading the relevance labels of a run it made) counts each once,
    as the plan counts them, so on the sim the count ends exactly at the plan's."""

    def __init__(self) -> None:
        self.done: set[str] = set()
        self.written_at = 0.0

    def add(self, keys: Iterable[str], *, flush: bool = False) -> None:
        path = os.environ.get(PROGRESS_FILE_ENV)
        if not path:
            return
        self.done.update(keys)
        now = time.monotonic()
        if not flush and now - self.written_at < _WRITE_EVERY_S:
            return
        self.written_at = now
        partial = f"{path}.{os.getpid()}.tmp"
        try:
            with open(partial, "w", encoding="utf-8") as handle:
                json.dump({"calls": len(self.done)}, handle)
            os.replace(partial, path)
        except OSError:
            pass  # progress is a courtesy: never fail a run over it


_counter = _CallCounter()


def calls_done(keys: Iterable[str] = (), *, flush: bool = False) -> None:
    """Count the prompts (cache keys) done, from the cache or the server, answered or failed,
    for the build's progress line: each key once per process. A no-op outside ``make paper``;
    written at most twice a second unless ``flush``."""
    _counter.add(keys, flush=flush)


def read_calls(path: str | os.PathLike[str]) -> int:
    """Calls done so far according to a progress file (0 before the first write)."""
    try:
        with open(path, encoding="utf-8") as handle:
            return int(json.load(handle).get("calls", 0))
    except (OSError, ValueError, AttributeError):
        return 0
