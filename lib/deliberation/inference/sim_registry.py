"""The sim's behaviour registry: what the sim answers for each stage tag, and the parameters
behaviours read.

In full: ``docs/sim.md``, section "Writing a behaviour (inference/sim_registry.py)".
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import numpy as np

from deliberation.inference.base import ChatRequest


@dataclass(frozen=True)
class SimAnswer:
    """What a behaviour answers: the text, and the value it stands for when structured."""

    text: str
    parsed: Any = None


@dataclass(frozen=True)
class SimContext:
    """What a behaviour sees: the request, a generator seeded from it, the profile's parameters."""

    request: ChatRequest
    rng: np.random.Generator
    parameters: Mapping[str, float] = field(default_factory=dict)
    # declared_parameters() as the backend read it for this batch (None: read it here). It
    # scans sys.modules, so a batch reads it once rather than once per param() call.
    declared: Mapping[str, float] | None = None

    def param(self, name: str, default: float | None = None) -> float:
        """A declared mechanism parameter: the profile's value, else ``default`` when given,
        else the declared default. A name no module declares is an error."""
        declared = declared_parameters() if self.declared is None else self.declared
        if name not in declared:
            raise KeyError(
                f"sim parameter {name!r} is not declared; add it to the behaviour module's"
                " PARAMETERS (see inference/sim_registry.py)"
            )
        if name in self.parameters:
            return float(self.parameters[name])
        return float(declared[name] if default is None else default)

    @property
    def prompt(self) -> str:
        """The last user message: what the behaviour answers."""
        for message in reversed(self.request.messages):
            if message.role == "user":
                return message.content
        return ""

    @property
    def choices(self) -> tuple[str, ...] | None:
        return None if self.request.structured is None else self.request.structured.choices


SimBehaviour = Callable[[SimContext], SimAnswer]
_SeedView = Callable[[ChatRequest], ChatRequest]
_BEHAVIOURS: dict[str, SimBehaviour] = {}
_SEED_VIEWS: dict[str, _SeedView] = {}


def sim_behaviour(
    stage: str, *, seed_view: _SeedView | None = None
) -> Callable[[SimBehaviour], SimBehaviour]:
    """Register the sim's answer for a stage tag; ``a.b`` also serves ``a.b.c`` unless that
    has its own behaviour (longest dotted prefix wins).

    ``seed_view`` maps a request to what its random generator is seeded from (default: the
    request itself). A behaviour whose answer must not depend on something the prompt shows
    (e.g. the order options are listed in) gives a view that puts it in a canonical form, so
    the same content in another order draws the same noise."""

    def decorate(func: SimBehaviour) -> SimBehaviour:
        if stage in _BEHAVIOURS:
            raise ValueError(f"sim behaviour for stage {stage!r} registered twice")
        _BEHAVIOURS[stage] = func
        if seed_view is not None:
            _SEED_VIEWS[stage] = seed_view
        return func

    return decorate


# Modules that register behaviours or declare parameters, given by the packages that own them
# (the experiments registry); this module imports none of them.
BEHAVIOUR_MODULES: list[ModuleType] = []


def register_behaviour_modules(*modules: ModuleType) -> None:
    """Modules whose behaviours and ``PARAMETERS`` the sim should know (importing a module
    registers its decorated behaviours)."""
    BEHAVIOUR_MODULES.extend(m for m in modules if m not in BEHAVIOUR_MODULES)


@dataclass(frozen=True)
class StageBehaviour:
    """A behaviour serving one stage of a family (and its seed view)."""

    behaviour: SimBehaviour
    seed_view: _SeedView | None = None


def register_stage_behaviours(stages: Mapping[str, StageBehaviour]) -> None:
    """Serve each stage with its behaviour; a stage already served by it is left as it is."""
    for stage, entry in stages.items():
        if _BEHAVIOURS.get(stage) is not entry.behaviour:
            sim_behaviour(stage, seed_view=entry.seed_view)(entry.behaviour)


# Functions registering more behaviours, called once at the first lookup (the experiments
# registry registers its records' so: reading the records at import would import the
# experiments, which import the profile loader, which imports the experiments registry).
_SOURCES: list[Callable[[], None]] = []


def register_behaviour_source(source: Callable[[], None]) -> None:
    """A function registering behaviours (and their modules), called at the first lookup."""
    _SOURCES.append(source)


def _import_registered() -> None:
    """Call the pending sources once."""
    while _SOURCES:
        _SOURCES.pop(0)()


def _registered_prefix(stage: str) -> str | None:
    """The longest dotted prefix of ``stage`` with a registered behaviour, or None."""
    _import_registered()
    parts = stage.split(".")
    for end in range(len(parts), 0, -1):
        prefix = ".".join(parts[:end])
        if prefix in _BEHAVIOURS:
            return prefix
    return None


def find_behaviour(stage: str) -> SimBehaviour | None:
    """The behaviour for ``stage`` (longest registered dotted prefix), or None."""
    prefix = _registered_prefix(stage)
    return None if prefix is None else _BEHAVIOURS[prefix]


def seed_view(stage: str) -> _SeedView | None:
    """The seed view registered with ``stage``'s behaviour (None: seed from the request)."""
    prefix = _registered_prefix(stage)
    return None if prefix is None else _SEED_VIEWS.get(prefix)


def registered_stages() -> list[str]:
    _import_registered()
    return sorted(_BEHAVIOURS)


def declared_parameters() -> dict[str, float]:
    """Every declared parameter and its default: the ``PARAMETERS`` of each module that
    registered a behaviour and of every module in :data:`BEHAVIOUR_MODULES`. Raises
    ``ValueError`` when two modules declare one name with different defaults."""
    _import_registered()
    modules = {func.__module__ for func in _BEHAVIOURS.values()}
    modules |= {m.__name__ for m in BEHAVIOUR_MODULES}
    declared: dict[str, float] = {}
    owner: dict[str, str] = {}
    for module_name in sorted(modules):
        declaration = getattr(sys.modules.get(module_name), "PARAMETERS", None)
        if declaration is None:
            continue
        if not isinstance(declaration, Mapping):
            raise TypeError(f"{module_name}.PARAMETERS must be a dict of name -> default")
        for name, default in declaration.items():
            if name in declared and declared[name] != default:
                raise ValueError(
                    f"sim parameter {name!r} is declared with default {declared[name]!r} in"
                    f" {owner[name]} and {default!r} in {module_name}"
                )
            declared[name] = float(default)
            owner.setdefault(name, module_name)
    return declared


def check_parameter_names(names: Iterable[str]) -> None:
    """``ValueError`` naming every name no behaviour declares (and the declared ones)."""
    declared = declared_parameters()
    unknown = sorted(set(names) - set(declared))
    if unknown:
        raise ValueError(
            f"{', '.join(map(repr, unknown))}: no sim behaviour declares"
            f" {'this parameter' if len(unknown) == 1 else 'these parameters'};"
            f" declared: {sorted(declared)}"
        )
