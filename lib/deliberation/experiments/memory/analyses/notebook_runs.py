"""The runs a paper-1 notebook analyses: ``deliberation run`` through the notebook's client,
main and pilot templates in one frame (``pilot`` column), with the ``capacity`` label."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd

from deliberation.benchmarks import memory_benchmark
from deliberation.experiments.memory import run_from_profile
from deliberation.experiments.memory.analyses.accuracy import with_capacity
from deliberation.experiments.memory.analyses.settings import AnalysisSettings
from deliberation.stats.small_samples import calls_note

if TYPE_CHECKING:
    from deliberation.inference.client import Client
    from deliberation.profiles.profile import Profile


def notebook_rows(
    benchmark: str,  # a registered memory benchmark
    profile: Profile,
    client: Client,
    analysis: AnalysisSettings,
    *,
    tags: Sequence[str] = ("keep",),
    policies: Sequence[str] | None = None,
    templates: Sequence[str] = ("main",),
    item_limit: int | None = None,
    budgets: Sequence[float] | None = None,
) -> tuple[pd.DataFrame, list[str]]:
    """Rows of every requested template set (CrossProfile) or of the profile's HiddenBench
    tasks, with the notebook's budgets (or ``budgets``), and the runs' report lines (counts,
    invalid answers, and how many distinct calls the rows come from). ``item_limit``: None the profile's fixed count, 0 none."""
    frames, lines = [], []
    selects = memory_benchmark(benchmark).selects_templates
    for template_set in templates if selects else (None,):
        result = run_from_profile(
            benchmark,
            profile,
            policies=policies,
            budgets=tuple(budgets) if budgets is not None else analysis.budgets,
            tags=tags,
            item_limit=item_limit,
            templates=template_set,
            client=client,
            progress=False,
        )
        frames.append(result.frame)
        name = f"{benchmark} {template_set or ''}".strip()
        lines += [f"{name}: {line}" for line in result.report.lines()]
        # Rows are not observations: identical prompts were one call (stats.small_samples).
        lines.append(f"{name}: {calls_note(result.frame)}")
    return with_capacity(pd.concat(frames, ignore_index=True)), lines


def notebook_experiment(
    profile: Profile,
    client: Client,
    *,
    benchmark: str,  # a registered memory benchmark
    primary_budget_only: bool = False,
    **options: Any,
) -> tuple[pd.DataFrame, list[str]]:
    """A paper-1 notebook's model calls with its default parameters, for
    ``notebooks/manifest.yaml`` (``deliberation plan`` calls it):
    :func:`~deliberation.experiments.memory.analyses.settings.resolve` then
    :func:`notebook_rows` with the notebook's options; ``primary_budget_only`` runs only
    r = 0.6, as notebook 04 does."""
    from deliberation.experiments.memory.analyses.settings import resolve

    run_profile, analysis = resolve(profile, benchmark)
    budgets = (analysis.primary_budget,) if primary_budget_only else None
    return notebook_rows(benchmark, run_profile, client, analysis, budgets=budgets, **options)
