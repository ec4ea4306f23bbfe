"""The :class:`Experiment` record: everything the rest of the library learns about an experiment.

An experiment package exports one record (or, like the memory experiment, one per benchmark) and
the registry (:mod:`deliberation.experiments`) names it in one line. From the records come the
profile's ``experiments.<name>`` sections (``Experiment.options``), the sim behaviour modules
(``Experiment.sim_behaviours``, or behaviours per stage: ``Experiment.sim_stages``),
``deliberation run <name>`` (:mod:`.run_command`: one generic skeleton, the experiment adds only
its flags and its printed summary), the manifest's experiment entries (``Experiment.notebooks``)
and with them ``deliberation plan`` and ``make paper``, and what its notebooks need of a grid
(``Experiment.grid_needs``, ``Experiment.starter``: :mod:`.grid_needs`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic import BaseModel

    from deliberation.inference.sim_registry import StageBehaviour


@dataclass(frozen=True)
class NotebookCall:
    """The model calls one notebook sends: ``function(profile=..., client=..., **kwargs)``, the
    call the notebook makes (``deliberation plan`` and ``make paper`` make it too)."""

    function: Callable[..., Any]
    kwargs: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Experiment:
    """One experiment, as the CLI, the profile loader, the sim, the plan and the manifest see it.

    ``run`` is called as ``run(profile, client, progress=..., **options)`` with the options its
    ``arguments(parser, name)`` added to ``deliberation run <name>`` and returns the
    experiment's result; ``report(result, profile, args)`` writes the rows, prints the summary
    and returns a ``FAILED: ...`` line when rows (or pools) failed, else None, so the generic
    command exits with ``CALLS_FAILED``.
    """

    name: str  # `deliberation run <name>`, the profile section `experiments.<name>`
    summary: str  # one line for `deliberation run --help`
    description: str  # the paragraph of `deliberation run <name> --help`
    options: type[BaseModel]  # the options model validating `experiments.<name>`
    runner: Callable[..., Any]  # run(profile, client, *, progress, **options) -> result
    arguments: Callable[..., None]  # (parser, name): add the experiment's flags to its parser
    report: Callable[..., str | None]  # (result, profile, args) -> FAILED line | None
    out_help: str = "rows.csv to write (default build/runs/<profile>/<experiment>_rows.csv)"
    outputs: Callable[..., None] | None = None  # (parser): output flags beside --out
    # quick_try(profile, name, options) -> (options, line | None), called when `--limit` is
    # given: narrows the grid flags not given and says so in the first line.
    quick_try: Callable[..., tuple[dict[str, Any], str | None]] | None = None
    stages: tuple[str, ...] = ()  # stage prefixes its requests carry (part of each cache key)
    sim_behaviours: tuple[ModuleType, ...] = ()  # modules registering its behaviours/PARAMETERS
    sim_stages: Mapping[str, StageBehaviour] = field(default_factory=dict)  # stage -> behaviour
    notebooks: Mapping[str, NotebookCall] = field(default_factory=dict)  # notebook -> its calls
    smoke: Mapping[str, Any] = field(default_factory=dict)  # its options in the smoke profile
    # Its smallest try (`deliberation profile new` writes it with every grid need met).
    starter: Mapping[str, Any] = field(default_factory=dict)
    # grid_needs(**bound) -> the GridNeed records of its notebooks' analyses
    # (deliberation.experiments.grid_needs: what `make plan` checks before anything is sent).
    grid_needs: Callable[..., Any] | None = None
    bound: Mapping[str, Any] = field(default_factory=dict)  # keyword arguments runner always gets

    def run(self, profile: Any, client: Any, **options: Any) -> Any:
        """The experiment's model calls and rows: ``runner(profile, client, **options)``."""
        return self.runner(profile, client, **self.bound, **options)
