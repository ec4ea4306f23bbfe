"""Memory-policy runs of paper 1 (``deliberation run crossprofile|hiddenbench``).

- :mod:`.grid`: policies x budgets (+ fixed item count) x tag modes.
- :mod:`.pipeline`: discussion -> labelling/summary calls -> memories -> decision calls, each
  stage one batch through the cache (identical prompts sent once, counts reported).
- :mod:`.runs`: tasks, the results frames (columns documented there) and the library entry
  point :func:`run_from_profile` behind the CLI (:mod:`.experiment`).
"""

from deliberation.experiments.memory.grid import Cell, Grid
from deliberation.experiments.memory.pipeline import RunReport, StageCounts
from deliberation.experiments.memory.runs import (
    CROSSPROFILE_COLUMNS,
    HIDDENBENCH_COLUMNS,
    RunResult,
    crossprofile_tasks,
    run_from_profile,
    run_memory_experiment,
    write_rows,
)

__all__ = [
    "CROSSPROFILE_COLUMNS",
    "HIDDENBENCH_COLUMNS",
    "Cell",
    "Grid",
    "RunReport",
    "RunResult",
    "StageCounts",
    "crossprofile_tasks",
    "run_from_profile",
    "run_memory_experiment",
    "write_rows",
]
