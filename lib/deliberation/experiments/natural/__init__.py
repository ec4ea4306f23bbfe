"""The natural-discussion experiment of paper 1 (``deliberation run natural``, notebook 06).

- :mod:`.runs`: discussions -> votes, disclosure labels, memories and decisions; the rows
  (columns documented there) and :func:`run_from_profile` behind the CLI (:mod:`.experiment`).
- :mod:`.report`: group accuracy, decision accuracy by condition, disclosure rates and the
  evidence-first effect, each with cluster-robust t intervals.
"""

from deliberation.experiments.natural.runs import (
    DISCLOSURE_COLUMNS,
    ROW_COLUMNS,
    NaturalResult,
    run_from_profile,
    run_natural_experiment,
)

__all__ = [
    "DISCLOSURE_COLUMNS",
    "ROW_COLUMNS",
    "NaturalResult",
    "run_from_profile",
    "run_natural_experiment",
]
