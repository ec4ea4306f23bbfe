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
    invalid answers, and how many distinct calls the rows come from). ``item_limit``: None the
    profile's fixed count, 0 none. ``policies`` and ``tags`` are what the notebook would read,
    run only where the profile's grid lists them (:func:`within_profile_grid`)."""
    policies, tags = within_profile_grid(benchmark, profile, policies, tags)
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
    # A set with no task (a profile listing no pilot template) adds no rows, and no untyped columns.
    frames = [f for f in frames if not f.empty] or frames[:1]
    return with_capacity(pd.concat(frames, ignore_index=True)), lines


def within_profile_grid(
    benchmark: str, profile: Profile, policies: Sequence[str] | None, tags: Sequence[str]
) -> tuple[tuple[str, ...] | None, tuple[str, ...]]:
    """The notebook's ``policies`` (None: the profile's) and ``tags`` that the profile's
    ``experiments.<benchmark>`` section lists, in the notebook's order: the profile's grid bounds
    every notebook, so a small grid (a slow model's) sends no call its author left out. What
    an analysis cannot do without is a grid need (``make plan`` checks it before sending)."""
    section = getattr(profile.experiments, benchmark)
    kept_policies = policies
    if policies is not None and section.policies is not None:
        kept_policies = tuple(p for p in policies if p in section.policies)
    kept_tags = tuple(t for t in tags if t in section.tags)
    if kept_policies == () or not kept_tags:
        raise ValueError(
            f"experiments.{benchmark}: the profile's grid (policies {section.policies},"
            f" tags {list(section.tags)}) lists none of the notebook's policies"
            f" {list(policies or ())} or none of its tags {list(tags)}"
            " (make plan names what each notebook needs)"
        )
    return (None if kept_policies is None else tuple(kept_policies)), kept_tags


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
