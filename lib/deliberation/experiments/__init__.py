"""The experiments, one package each, and the one registry the rest of the library reads.

- :mod:`.memory`: memory policies on every registered memory benchmark (``deliberation run
  crossprofile|hiddenbench``, notebooks 02-05); one :class:`~.record.Experiment` per benchmark.
- :mod:`.natural`: natural (free) discussions (``deliberation run natural``, notebook 06).
- :mod:`.dhd`: Diverse Hypothesis Deliberation (``deliberation run dhd``, notebooks 07-08).

Each package owns its options, tasks, runs, prompts, analyses and sim behaviour, and exports an
:class:`~.record.Experiment` record holding them. From the records come each profile section's
options model (:func:`experiment_options`, which the profile loader
``deliberation.profiles.profile`` validates with), the sim behaviours (given to
``inference/sim_registry.py`` at its first lookup), ``deliberation run <name>``
(:mod:`.run_command`), and the notebooks' experiment calls (``paper/manifest.py``). A new
experiment is one folder and one line: :data:`REGISTRY` or :func:`register_experiment`.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from typing import TYPE_CHECKING

from deliberation.experiments.record import Experiment, NotebookCall
from deliberation.inference.sim_registry import (
    register_behaviour_modules,
    register_behaviour_source,
    register_stage_behaviours,
)

if TYPE_CHECKING:
    from pydantic import BaseModel

# The one place experiments are named by import path ("module:attribute" of a record, or of a
# function returning several: memory has one per registered memory benchmark), imported on first
# use. Not for speed: the profile loader validates every experiment's section, so it imports this
# registry, and every experiment imports the profile loader; a path here is what breaks that
# cycle. Everything inside a record is the object itself. One line per experiment package.
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
]


def register_experiment(record: Experiment) -> None:
    """Register an experiment's record. Its sim behaviours are known from then on."""
    if record in REGISTRY:
        raise ValueError(f"experiment {record.name!r} registered twice")
    REGISTRY.append(record)
    experiments()  # checks the names, registers its sim behaviours


def _records(entry: str | Experiment) -> Iterable[Experiment]:
    if isinstance(entry, str):
        module, _, attribute = entry.partition(":")
        found = getattr(importlib.import_module(module), attribute)
    else:
        found = entry
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
            register_stage_behaviours(record.sim_stages)
    return found


def experiment(name: str) -> Experiment:
    """The registered experiment ``name``; an unknown name is an error listing the known ones."""
    registered = experiments()
    if name not in registered:
        raise ValueError(f"unknown experiment {name!r}; known: {', '.join(registered)}")
    return registered[name]


def experiment_options() -> dict[str, type[BaseModel]]:
    """Each registered experiment's options model (its profile section)."""
    return {name: record.options for name, record in experiments().items()}


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


# Read at the sim's first lookup: reading the records now would import the experiments, which
# import the profile loader, which imports this module.
register_behaviour_source(experiments)
