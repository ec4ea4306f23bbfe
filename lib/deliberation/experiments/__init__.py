"""The experiments, one package each, and what the rest of the library learns about them.

- :mod:`.memory`: memory policies on CrossProfile and HiddenBench (``deliberation run
  crossprofile|hiddenbench``, notebooks 01-05); its benchmarks are registered in
  :mod:`.memory.benchmarks`, the model calls its policies need in :mod:`.memory.needs`.
- :mod:`.natural`: natural (free) discussions (``deliberation run natural``, notebook 06).
- :mod:`.dhd`: Diverse Hypothesis Deliberation (``deliberation run dhd``, notebooks 07-08).

Each package owns its options, tasks, runs, prompts, analyses and sim behaviour. Nothing
outside imports them to learn about them: this module names them by import path, the way
``inference/base.py`` names backends. :data:`OPTIONS` gives each section of a profile's
``experiments:`` its options model (the profile loader, ``deliberation.params``, validates each
section with it); :data:`SIM_BEHAVIOURS` names each package's sim behaviour modules to the
generic registry (``inference/sim_registry.py``), which imports them on first lookup, so
``inference/`` imports no experiment and a profile's ``sim.parameters`` are checked against
every experiment's declarations. A new experiment is one folder here and its lines below.
"""

import importlib

from pydantic import BaseModel

from deliberation.inference.sim_registry import register_behaviour_modules

# Profile section (``experiments.<name>``) -> "module:Class" of its options model. Each memory
# benchmark has its grid section (experiments/memory/benchmarks/).
OPTIONS: dict[str, str] = {
    "crossprofile": "deliberation.experiments.memory.options:MemoryGridOptions",
    "hiddenbench": "deliberation.experiments.memory.options:MemoryGridOptions",
    "natural": "deliberation.experiments.natural.options:NaturalOptions",
    "dhd": "deliberation.experiments.dhd.options:DHDOptions",
}

# Modules holding sim behaviours or the PARAMETERS they read (helpers first).
SIM_BEHAVIOURS: tuple[str, ...] = (
    "deliberation.experiments.memory.sim.mechanism",
    "deliberation.experiments.memory.sim.crossprofile",
    "deliberation.experiments.memory.sim.hiddenbench",
    "deliberation.experiments.natural.sim",
    "deliberation.experiments.dhd.sim",
)

register_behaviour_modules(*SIM_BEHAVIOURS)


def register_experiment_options(section: str, model: str) -> None:
    """Give profiles an ``experiments.<section>`` validated by ``model`` ("module:Class")."""
    if section in OPTIONS and OPTIONS[section] != model:
        raise ValueError(f"experiments.{section} is already registered to {OPTIONS[section]}")
    OPTIONS[section] = model


def experiment_options() -> dict[str, type[BaseModel]]:
    """Each registered section's options model, imported on first use."""
    models = {}
    for section, path in OPTIONS.items():
        module, _, name = path.partition(":")
        models[section] = getattr(importlib.import_module(module), name)
    return models
