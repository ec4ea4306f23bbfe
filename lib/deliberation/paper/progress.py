"""Terminal progress during ``make paper``: which notebook, which cell, calls done of planned.

The notebook runs in a kernel (another process), so the two halves meet in files: papermill
reports each cell as it starts through the engine below (registered as ``deliberation``), and
the kernel's model client counts its calls into the file named by ``DELIBERATION_PROGRESS_FILE``
(``deliberation.inference.call_progress``). A ticker thread prints one line when something changed and at
least ``interval_s`` passed, so a long notebook is never silent and a short one prints nothing
extra.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from papermill.engines import NBClientEngine, papermill_engines

from deliberation.inference.call_progress import PROGRESS_FILE_ENV, read_calls

ENGINE_NAME = "deliberation"
INTERVAL_S = 15.0


def _first_line(source: str) -> str:
    for line in source.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            return line.strip()
    return ""


@dataclass
class NotebookProgress:
    """What a running notebook has done so far (cells from papermill, calls from the kernel)."""

    notebook: str
    planned_calls: int | None = None
    # The plan is exact on the sim; for a real model later stages are estimates ("about").
    planned_exact: bool = True
    calls_file: Path | None = None
    code_cells: int = 0
    cell: int = 0  # 1-based ordinal of the code cell running (0: none yet)
    cell_line: str = ""
    started: float = field(default_factory=time.monotonic)

    def calls(self) -> int:
        return read_calls(self.calls_file) if self.calls_file is not None else 0

    def state(self) -> tuple[int, int]:
        return self.cell, self.calls()

    def line(self) -> str:
        parts = [f"   {self.notebook}: cell {self.cell} of {self.code_cells}"]
        if self.cell_line:
            shown = self.cell_line if len(self.cell_line) <= 50 else self.cell_line[:47] + "..."
            parts[0] += f" (`{shown}`)"
        calls = self.calls()
        if self.planned_calls:
            # A count past the plan shows the plan was not exact: never "22,882 of 22,400".
            about = "" if self.planned_exact and calls <= self.planned_calls else "about "
            parts.append(f"{calls:,} of {about}{self.planned_calls:,} planned calls")
        elif calls:
            parts.append(f"{calls:,} calls")
        parts.append(f"{time.monotonic() - self.started:.0f} s")
        return ", ".join(parts)


class _ProgressEngine(NBClientEngine):
    """papermill's nbclient engine, telling a :class:`NotebookProgress` each code cell it starts."""

    @classmethod
    def execute_managed_notebook(  # type: ignore[override]
        cls, nb_man: Any, kernel_name: str, progress: NotebookProgress | None = None, **kwargs: Any
    ) -> Any:
        if progress is not None:
            code = [i for i, c in enumerate(nb_man.nb.cells) if c.cell_type == "code"]
            progress.code_cells = len(code)
            ordinal = {index: n for n, index in enumerate(code, 1)}
            started = nb_man.cell_start

            def cell_start(cell: Any, cell_index: int | None = None, **more: Any) -> Any:
                if cell_index in ordinal:
                    progress.cell = ordinal[cell_index]
                    progress.cell_line = _first_line(cell.source)
                return started(cell, cell_index, **more)

            nb_man.cell_start = cell_start
        return super().execute_managed_notebook(nb_man, kernel_name, **kwargs)


papermill_engines.register(ENGINE_NAME, _ProgressEngine)


@contextlib.contextmanager
def reporting(
    progress: NotebookProgress, out: Callable[[str], None], interval_s: float = INTERVAL_S
) -> Iterator[NotebookProgress]:
    """While the body runs a notebook: the kernel counts calls into a fresh file (through the
    environment it inherits) and a thread prints ``progress.line()`` when it changed, at most
    every ``interval_s`` seconds."""
    with tempfile.TemporaryDirectory(prefix="deliberation-progress-") as folder:
        progress.calls_file = Path(folder) / "calls.json"
        previous = os.environ.get(PROGRESS_FILE_ENV)
        os.environ[PROGRESS_FILE_ENV] = str(progress.calls_file)
        stop = threading.Event()
        shown: list[tuple[int, int]] = [(0, 0)]

        def tick() -> None:
            while not stop.wait(interval_s):
                state = progress.state()
                if state != shown[-1]:
                    shown.append(state)
                    out(progress.line())

        thread = threading.Thread(target=tick, name="paper-progress", daemon=True)
        thread.start()
        try:
            yield progress
        finally:
            stop.set()
            thread.join()
            if previous is None:
                os.environ.pop(PROGRESS_FILE_ENV, None)
            else:
                os.environ[PROGRESS_FILE_ENV] = previous
