"""A notebook's parameters resolved against its profile.

Notebooks have a ``parameters`` cell with ``budgets``, ``n_resamples`` and ``seed`` set to None:
None means the profile's value (``experiments.<benchmark>.budgets`` and ``.n_resamples``, the
profile's ``seed``), so the smoke profile runs with fewer resamples without editing the notebook.
A seed given in the notebook replaces the profile's everywhere (tasks, discussion, sim, bootstrap)
and is what the provenance sidecars record.

The parameters arrive as papermill parsed them (``-p n_resamples 200`` an int, ``-p budgets 0.6`` a
float, ``-p seed abc`` or any ``-r`` a string), so :func:`_check_parameters` checks them on entry
(:func:`resolve` calls it first) and a wrong one is a :class:`NotebookParameterError` naming the
parameter, what it got and what it takes, instead of a ``TypeError`` deep inside the analysis.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass

from deliberation.memory_policies import PRIMARY_FRACTION
from deliberation.profiles.profile import Profile

_MAX_RESAMPLES = 1_000_000  # a bound like every input's: 10,000 is the papers' number


class NotebookParameterError(ValueError):
    """A notebook parameter of the wrong type or out of range; names the parameter."""

    def __init__(self, name: str, value: object, expected: str) -> None:
        super().__init__(
            f"notebook parameter {name}: expected {expected}, got {type(value).__name__}"
            f" {value!r} (papermill: -p {name} VALUE, or -y for a list)"
        )
        self.name = name


def _is_integer(value: object) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _is_real(value: object) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _check_parameters(
    *, budgets: object = None, n_resamples: object = None, seed: object = None
) -> tuple[tuple[float, ...] | None, int | None, int | None]:
    """The parameters as :func:`resolve` takes them (None: the profile's), checked: ``budgets``
    a fraction r in (0, 1] or a list of distinct ones, ``n_resamples`` an integer from 2 to
    :data:`_MAX_RESAMPLES`, ``seed`` an integer. Raises :class:`NotebookParameterError`."""
    fractions = None
    if budgets is not None:
        listed = [budgets] if _is_real(budgets) else budgets
        expected = "a budget fraction r in (0, 1] or a list of distinct ones, e.g. [0.4, 0.6, 0.8]"
        if isinstance(listed, str | bytes) or not isinstance(listed, Sequence) or not listed:
            raise NotebookParameterError("budgets", budgets, expected)
        if not all(_is_real(r) and math.isfinite(r) and 0 < r <= 1 for r in listed):
            raise NotebookParameterError("budgets", budgets, expected)
        fractions = tuple(float(r) for r in listed)
        if len(set(fractions)) != len(fractions):
            raise NotebookParameterError("budgets", budgets, expected)
    if n_resamples is not None and not (
        _is_integer(n_resamples) and 2 <= n_resamples <= _MAX_RESAMPLES
    ):
        raise NotebookParameterError(
            "n_resamples", n_resamples, f"an integer from 2 to {_MAX_RESAMPLES:,}"
        )
    if seed is not None and not _is_integer(seed):
        raise NotebookParameterError("seed", seed, "an integer")
    return (
        fractions,
        None if n_resamples is None else int(n_resamples),  # type: ignore[call-overload]
        None if seed is None else int(seed),  # type: ignore[call-overload]
    )


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
    (r = 0.6) must be among the budgets, since the pre-specified tests are defined there. The
    notebook's parameters are checked first (:func:`_check_parameters`)."""
    budgets, n_resamples, seed = _check_parameters(
        budgets=budgets, n_resamples=n_resamples, seed=seed
    )
    section = getattr(profile.experiments, benchmark)
    if seed is not None:
        profile = profile.model_copy(update={"seed": int(seed)})
    chosen = tuple(float(b) for b in (budgets if budgets is not None else section.budgets))
    if PRIMARY_FRACTION not in chosen:
        raise ValueError(
            f"budgets {list(chosen)} must include the primary budget r = {PRIMARY_FRACTION}"
        )
    # Checked once where it came from: the notebook's parameter above, the profile's section
    # by its options model (at least 2).
    resamples = n_resamples if n_resamples is not None else section.n_resamples
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
        f"{analysis.primary_budget:g}; intervals: cluster-robust t (the papers' bootstrap beside"
        f" some, from 20 clusters: {analysis.n_resamples} resamples)"
    )
