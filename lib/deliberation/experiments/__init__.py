"""The experiments, one package each, and the one registry the rest of the library reads.

- :mod:`.memory`: memory policies on every registered memory benchmark (``deliberation run
  crossprofile|hiddenbench``, notebooks 02-05); one :class:`~.record.Experiment` per benchmark.
- :mod:`.natural`: natural (free) discussions (``deliberation run natural``, notebook 06).
- :mod:`.dhd`: Diverse Hypothesis Deliberation (``deliberation run dhd``, notebooks 07-08).

Each package owns its options, tasks, runs, prompts, analyses and sim behaviour, and exports an
:class:`~.record.Experiment` record naming them. :data:`REGISTRY` names each record by import
path (the way ``inference/base.py`` names backends), so ``inference/`` imports no experiment.
From the records come each profile section's options model (:func:`experiment_options`, which
the profile loader ``deliberation.profiles.profile`` validates with), the sim behaviour modules (given to
``inference/sim_registry.py``, which imports them on first lookup), ``deliberation run <name>``
(:mod:`.run_command`), and the notebooks' experiment calls (``paper/manifest.py``). A new
experiment is one folder and one line: :data:`REGISTRY` or :func:`register_experiment`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from deliberation.experiments.record import Experiment, NotebookCall, load_object
from deliberation.inference.sim_registry import (
    register_behaviour_modules,
    register_behaviour_paths,
    register_behaviour_source,
)

if TYPE_CHECKING:
    from pydantic import BaseModel

# "module:attribute" of an Experiment, or of a function returning several (memory: one per
# registered memory benchmark). One line per experiment package.
REGISTRY: list[str | Experiment] = [
    "deliberation.experiments.memory.experiment:memory_experiments",
    "deliberation.experiments.natural.experiment:natural_experiment",
    "deliberation.experiments.dhd.experiment:EXPERIMENT",
]

__all__ = [
    "REGISTRY",
    "Experiment",
    "NotebookCall",
    "experiment",
    "experiment_options",
    "experiment_smoke_sizes",
    "experiments",
    "notebook_calls",
    "register_experiment",
    "sim_behaviour_modules",
]


def register_experiment(entry: str | Experiment) -> None:
    """Register an experiment: its record, or ``"module:attribute"`` naming it (or a function
    returning records). Its sim behaviours are known from then on."""
    if entry in REGISTRY:
        raise ValueError(f"experiment {entry!r} registered twice")
    REGISTRY.append(entry)
    experiments()  # checks the names, registers its sim behaviours


def _records(entry: str | Experiment) -> Iterable[Experiment]:
    found = load_object(entry) if isinstance(entry, str) else entry
    if callable(found) and not isinstance(found, Experiment):
        found = found()
    records = (found,) if isinstance(found, Experiment) else tuple(found)
    for record in records:
        if not isinstance(record, Experiment):
            raise TypeError(f"{entry!r} names {record!r}, not an Experiment record")
    return records


def experiments() -> dict[str, Experiment]:
    """Every registered experiment by name, in registration order (names are unique)."""
    found: dict[str, Experiment] = {}
    for entry in REGISTRY:
        for record in _records(entry):
            if record.name in found:
                raise ValueError(f"experiment {record.name!r} registered twice")
            found[record.name] = record
            register_behaviour_modules(*record.sim_behaviours)
            register_behaviour_paths(record.sim_stages)
    return found


def experiment(name: str) -> Experiment:
    """The registered experiment ``name``; an unknown name is an error listing the known ones."""
    registered = experiments()
    if name not in registered:
        raise ValueError(f"unknown experiment {name!r}; known: {', '.join(registered)}")
    return registered[name]


def experiment_options() -> dict[str, type[BaseModel]]:
    """Each registered experiment's options model (its profile section), imported on first use."""
    return {name: load_object(record.options) for name, record in experiments().items()}


def experiment_smoke_sizes() -> dict[str, dict[str, object]]:
    """Each experiment's options at smoke size (a profile with ``smoke: true`` starts from them)."""
    return {name: dict(r.smoke) for name, r in experiments().items() if r.smoke}


def notebook_calls() -> dict[str, NotebookCall]:
    """notebook file name -> the experiment call that sends its model calls, from every record."""
    calls: dict[str, NotebookCall] = {}
    for record in experiments().values():
        for notebook, call in record.notebooks.items():
            if notebook in calls and calls[notebook] != call:
                raise ValueError(f"notebook {notebook} is claimed by two experiments")
            calls[notebook] = call
    return calls


def sim_behaviour_modules() -> list[str]:
    """Every registered experiment's sim behaviour modules (helpers first, no repeats)."""
    modules: list[str] = []
    for record in experiments().values():
        modules += [m for m in record.sim_behaviours if m not in modules]
    return modules


# Read at the sim's first lookup: reading the records now would import the experiments, which
# import the profile loader, which imports this module.
register_behaviour_source(sim_behaviour_modules)
