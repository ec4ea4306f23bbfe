"""The experiments, one package each, and what the rest of the library learns about them.

- :mod:`.memory`: memory policies on CrossProfile and HiddenBench (``deliberation run
  crossprofile|hiddenbench``, notebooks 01-05); its benchmarks are registered in
  :mod:`.memory.benchmarks`, the model calls its policies need in :mod:`.memory.needs`.
- :mod:`.natural`: natural (free) discussions (``deliberation run natural``, notebook 06).
- :mod:`.dhd`: Diverse Hypothesis Deliberation (``deliberation run dhd``, notebooks 07-08).

Each package owns its tasks, runs, prompts, analyses and sim behaviour. ``inference/`` imports
none of them: this module names each package's sim behaviour modules to the generic registry
(``inference/sim_registry.py``), which imports them on first lookup. The profile loader imports
this module, so a profile's ``sim.parameters`` are checked against every experiment's
declarations. A new experiment is one folder here and its line below.
"""

from deliberation.inference.sim_registry import register_behaviour_modules

# Modules holding sim behaviours or the PARAMETERS they read (helpers first).
SIM_BEHAVIOURS: tuple[str, ...] = (
    "deliberation.experiments.memory.sim.mechanism",
    "deliberation.experiments.memory.sim.crossprofile",
    "deliberation.experiments.memory.sim.hiddenbench",
    "deliberation.experiments.natural.sim",
    "deliberation.experiments.dhd.sim",
)

register_behaviour_modules(*SIM_BEHAVIOURS)
