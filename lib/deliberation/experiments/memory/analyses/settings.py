"""A notebook's parameters resolved against its profile.

Notebooks have a ``parameters`` cell with ``budgets``, ``n_resamples`` and ``seed`` set to None:
None means the profile's value (``experiments.<benchmark>.budgets`` and ``.n_resamples``, the
profile's ``seed``), so the smoke profile runs with fewer resamples without editing the notebook.
A seed given in the notebook replaces the profile's everywhere (tasks, discussion, sim, bootstrap)
and is what the provenance sidecars record.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from deliberation.memory import PRIMARY_FRACTION
from deliberation.params import Profile


@dataclass(frozen=True)
class AnalysisSettings:
    budgets: tuple[float, ...]
    n_resamples: int
    seed: int
    primary_budget: float = PRIMARY_FRACTION


def resolve(
    profile: Profile,
    benchmark: str,  # a registered memory benchmark
    *,
    budgets: Sequence[float] | None = None,
    n_resamples: int | None = None,
    seed: int | None = None,
) -> tuple[Profile, AnalysisSettings]:
    """The profile to run (with ``seed`` applied) and the analysis settings; the primary budget
    (r = 0.6) must be among the budgets, since the pre-specified tests are defined there."""
    section = getattr(profile.experiments, benchmark)
    if seed is not None:
        profile = profile.model_copy(update={"seed": int(seed)})
    chosen = tuple(float(b) for b in (budgets if budgets is not None else section.budgets))
    if PRIMARY_FRACTION not in chosen:
        raise ValueError(
            f"budgets {list(chosen)} must include the primary budget r = {PRIMARY_FRACTION}"
        )
    resamples = int(n_resamples if n_resamples is not None else section.n_resamples)
    if resamples < 2:
        raise ValueError(f"n_resamples must be at least 2, got {resamples}")
    return profile, AnalysisSettings(budgets=chosen, n_resamples=resamples, seed=profile.seed)


def banner(profile: Profile, analysis: AnalysisSettings) -> str:
    """What made this notebook's results, said at the top of it."""
    kind = (
        "SYNTHETIC: made by the sim mechanism model, not a language model"
        if profile.synthetic
        else f"model output: {profile.label}"
    )
    return (
        f"profile {profile.name} (backend {profile.backend}, model {profile.model}, "
        f"params {profile.params_hash}, seed {profile.seed})\nresults: {kind}\n"
        f"budgets r = {', '.join(f'{b:g}' for b in analysis.budgets)}; primary r = "
        f"{analysis.primary_budget:g}; bootstrap resamples: {analysis.n_resamples}"
    )
