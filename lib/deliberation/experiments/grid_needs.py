"""What the paper's notebooks need of a profile's grid, checked before anything is sent.

An analysis that compares two policies needs rows of both; one that holds out a block needs two
blocks. A grid without them sends every call and then fails in a notebook cell, hours later on a
slow model. So each experiment declares these needs once, beside the analyses that have them and
from the analyses' own constants (``Experiment.grid_needs``: a function returning
:class:`GridNeed` records), and everything else derives from that one declaration:

- ``deliberation plan`` and ``make paper`` refuse a grid that misses a need of a notebook they
  would run, before anything is sent, naming the profile key and a value that works
  (:func:`unmet_needs`, :class:`GridNeedsError`);
- ``deliberation profile new`` writes the smallest grid that meets every need: each
  experiment's ``Experiment.starter`` section (one policy, one budget, one template...) with
  every need met (:func:`starter_grid`).

A test builds the whole paper on a fresh ``profile new`` profile against serve-sim, so a need an
analysis gains without declaring it fails there, not in a user's run.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from deliberation.exit_codes import BAD_INPUT, CommandError


@dataclass(frozen=True)
class GridNeed:
    """One option of an experiment's profile section that a notebook's analysis needs: a list
    holding each of ``includes`` (a list left out, None, runs every value: met), a count of at
    least ``at_least``, or exactly ``equals``. ``why`` says what the analysis does with it."""

    notebook: str  # file name in notebooks/, e.g. "03_crossprofile_h1_h3.ipynb"
    option: str  # a field of the experiment's section, e.g. "policies"
    why: str
    includes: tuple[Any, ...] = ()
    at_least: int | None = None
    equals: Any = None

    def met_by(self, value: Any) -> bool:
        if self.includes:
            return value is None or all(v in value for v in self.includes)
        if self.at_least is not None:
            return value is None or value >= self.at_least
        return value == self.equals

    def met(self, value: Any) -> Any:
        """``value`` changed as little as it takes to meet the need (a list keeps its order)."""
        if self.met_by(value):
            return value
        if self.includes:
            return (*value, *(v for v in self.includes if v not in value))
        if self.at_least is not None:
            return self.at_least
        return self.equals

    def wanted(self, value: Any) -> str:
        """What ``value`` lacks, in words."""
        if self.includes:
            return ", ".join(str(v) for v in self.includes if value is not None and v not in value)
        if self.at_least is not None:
            return f"at least {self.at_least}"
        return f"exactly {self.equals}"


@dataclass(frozen=True)
class UnmetNeed:
    section: str  # the experiment's section, e.g. "crossprofile"
    need: GridNeed
    value: Any  # the profile's value
    works: Any  # a value meeting every need of this option

    @property
    def key(self) -> str:
        return f"experiments.{self.section}.{self.need.option}"

    def line(self) -> str:
        stem = self.need.notebook.removesuffix(".ipynb")
        return f"{stem} needs {self.need.wanted(self.value)}: {self.need.why}"


class GridNeedsError(CommandError):
    """A profile whose grid a notebook cannot analyse: each key it must change, the value that
    works, and which notebook needs what of it."""

    exit_code = BAD_INPUT

    def __init__(self, profile: str, source: str, unmet: Sequence[UnmetNeed]) -> None:
        self.unmet = tuple(unmet)
        where = f" ({source})" if source else ""
        lines = [
            f"profile {profile}{where}: its grid cannot build these notebooks; nothing was sent:"
        ]
        for key in dict.fromkeys(u.key for u in unmet):
            mine = [u for u in unmet if u.key == key]
            lines.append(f"  {key}: {_yaml(mine[0].value)}; set it to {_yaml(mine[0].works)}")
            lines += [f"    {u.line()}" for u in mine]
        lines.append(
            "change these keys in the profile's experiments: section (or run fewer notebooks,"
            " make paper ONLY=...) and run the same command again"
        )
        super().__init__("\n".join(lines))


def _yaml(value: Any) -> str:
    if isinstance(value, tuple | list):
        return "[" + ", ".join(_yaml(v) for v in value) + "]"
    if value is None:
        return "null (every value)"
    return f"{value:g}" if isinstance(value, float) else str(value)


def grid_needs() -> dict[str, tuple[GridNeed, ...]]:
    """Every registered experiment's needs, by experiment (its profile section)."""
    from deliberation.experiments import experiments  # the registry imports the records

    found = {}
    for name, record in experiments().items():
        if record.grid_needs is not None:
            found[name] = tuple(record.grid_needs(**record.bound))
    return found


def unmet_needs(profile: Any, notebooks: Iterable[str] | None = None) -> list[UnmetNeed]:
    """The needs of ``notebooks`` (file names; None: all) that ``profile``'s grid misses."""
    chosen = None if notebooks is None else set(notebooks)
    unmet = []
    for section, needs in grid_needs().items():
        options = getattr(profile.experiments, section)
        for need in needs:
            if chosen is not None and need.notebook not in chosen:
                continue
            value = getattr(options, need.option)
            if not need.met_by(value):
                works = value
                for other in needs:  # every need of this option, so the value offered works
                    if other.option == need.option:
                        works = other.met(works)
                unmet.append(UnmetNeed(section, need, value, works))
    return unmet


def check_grid(profile: Any, notebooks: Iterable[str] | None = None) -> None:
    """Raise :class:`GridNeedsError` when ``profile``'s grid misses a need of ``notebooks``."""
    unmet = unmet_needs(profile, notebooks)
    if unmet:
        raise GridNeedsError(profile.name, getattr(profile, "source", ""), unmet)


@dataclass(frozen=True)
class StarterValue:
    value: Any
    needed_by: tuple[GridNeed, ...]  # the needs that set it (empty: the experiment's starter)


def starter_grid() -> dict[str, dict[str, StarterValue]]:
    """The smallest grid every notebook can analyse: each experiment's ``starter`` section with
    every need met, by experiment and option (options the starter leaves out keep the
    profile's defaults, unless a need sets them)."""
    from deliberation.experiments import experiments

    needs = grid_needs()
    grid: dict[str, dict[str, StarterValue]] = {}
    for name, record in experiments().items():
        section = {k: StarterValue(_tuple(v), ()) for k, v in record.starter.items()}
        for need in needs.get(name, ()):
            current = section.get(need.option)
            value = current.value if current else None
            if current is None:  # not in the starter: start from the option's default
                value = getattr(_default_options(name), need.option)
            if not need.met_by(value) or (current is None and need.includes):
                value = need.met(() if current is None and need.includes else value)
                before = current.needed_by if current else ()
                section[need.option] = StarterValue(value, (*before, need))
        if section:
            grid[name] = section
    return grid


def _tuple(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def _default_options(name: str) -> Any:
    from deliberation.experiments import experiment_options

    return experiment_options()[name]()
