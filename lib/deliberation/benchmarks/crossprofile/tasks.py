"""Task derivation: one task per (template, ownership variant), with every fact's holders.

A task is what a run needs: the decision (description, criteria, options in presentation
order, the key) and the 12 facts with the agents that hold them.

In full: ``docs/experiments.md``, section "CrossProfile tasks: fact order and option order".
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

import numpy as np

from deliberation.benchmarks.crossprofile.schema import (
    DOMAINS,
    MAIN_PER_DOMAIN,
    Template,
    main_slot,
)
from deliberation.benchmarks.crossprofile.variants import (
    AGENTS,
    ALL_VARIANTS,
    GROUPS,
    OwnershipVariant,
    group_rng,
    private_holders,
)
from deliberation.io.atomic import atomic_path
from deliberation.seeds import stable_seed

DEFAULT_SEED = 0
OptionOrder = Literal["rotate", "template"]
_OPTION_ORDERS: tuple[str, ...] = get_args(OptionOrder)


@dataclass(frozen=True)
class TaskFact:
    """One fact of a task with its holders. Evidence facts (support, decoy) have a criterion
    and polarity (tone 0); irrelevant facts an attribute and tone (polarity 0)."""

    id: str
    role: str
    option: str
    text: str
    holders: tuple[str, ...]
    criterion: str | None = None
    attribute: str | None = None
    polarity: int = 0
    tone: int = 0

    @property
    def shared(self) -> bool:
        return len(self.holders) > 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "role": self.role,
            "option": self.option,
            "criterion": self.criterion,
            "attribute": self.attribute,
            "polarity": self.polarity,
            "tone": self.tone,
            "holders": list(self.holders),
            "text": self.text,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TaskFact:
        return cls(**{**data, "holders": tuple(data["holders"])})


@dataclass(frozen=True)
class Task:
    """One CrossProfile task: a template under one ownership variant."""

    id: str
    template: str
    variant: str
    domain: str
    pilot: bool
    seed: int
    title: str
    description: str
    criteria: tuple[str, ...]
    options: tuple[str, ...]
    correct: str
    facts: tuple[TaskFact, ...]

    @property
    def agents(self) -> tuple[str, ...]:
        return AGENTS

    def held_by(self, agent: str) -> tuple[TaskFact, ...]:
        """The facts ``agent`` holds, in the task's (seeded) presentation order."""
        return tuple(f for f in self.facts if agent in f.holders)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "template": self.template,
            "variant": self.variant,
            "domain": self.domain,
            "pilot": self.pilot,
            "seed": self.seed,
            "title": self.title,
            "description": self.description,
            "criteria": list(self.criteria),
            "options": list(self.options),
            "correct": self.correct,
            "facts": [f.to_dict() for f in self.facts],
        }

    def to_json(self) -> str:
        """One compact JSON line (stable key order, UTF-8 text kept as is)."""
        return json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Task:
        return cls(
            **{
                **data,
                "criteria": tuple(data["criteria"]),
                "options": tuple(data["options"]),
                "facts": tuple(TaskFact.from_dict(f) for f in data["facts"]),
            }
        )


def _canonical_order(template: Template) -> list[int]:
    """Indices into ``template.facts`` sorted by a hash of each fact's text (ties by text):
    the order every draw starts from, so nothing derived depends on the file's order."""
    facts = template.facts
    return sorted(
        range(len(facts)),
        key=lambda i: (stable_seed("crossprofile-fact", facts[i].text), facts[i].text),
    )


def assign_holders(
    template: Template, variant: OwnershipVariant, seed: int = DEFAULT_SEED
) -> dict[str, tuple[str, ...]]:
    """Holders of every fact (by fact id) under ``variant``: all agents for a shared group,
    one agent per fact for a private group (deterministic in template id, group and seed)."""
    holders: dict[str, tuple[str, ...]] = {}
    ordered = [template.facts[i] for i in _canonical_order(template)]
    for group in GROUPS:
        facts = [f for f in ordered if f.role == group]
        if variant.ownership(group) == "shared":
            holders.update({f.id: AGENTS for f in facts})
        else:
            drawn = private_holders(len(facts), group_rng(template.id, group, seed))
            holders.update({f.id: (h,) for f, h in zip(facts, drawn, strict=True)})
    return holders


_N_MAIN_SLOTS = MAIN_PER_DOMAIN * len(DOMAINS)


def _fact_order_rng(*parts: object) -> np.random.Generator:
    """The generator for fact order, seeded from ``parts`` (the one place its seed is derived)."""
    return np.random.default_rng(stable_seed("crossprofile-fact-order", *parts))


def _on_correct(template: Template, seed: int, end: str) -> bool:
    """Whether the task's ``end`` ("opens" or "closes") fact is about the correct option."""
    slot = main_slot(template.id, template.domain)
    if slot is None:
        return bool(_fact_order_rng(template.id, seed, end).random() < 1 / 3)
    # the opening permutation keeps its v2 seed parts, so first facts are unchanged
    parts = ("main-slots", seed) if end == "opens" else ("main-slots", seed, end)
    numbers = _fact_order_rng(*parts).permutation(_N_MAIN_SLOTS)
    return int(numbers[slot]) % 3 == 0


def _opens_with_correct(template: Template, seed: int = DEFAULT_SEED) -> bool:
    """Whether the task's first fact is about the correct option (see the module docstring:
    exactly a third of the main templates for every seed)."""
    return _on_correct(template, seed, "opens")


def _closes_with_correct(template: Template, seed: int = DEFAULT_SEED) -> bool:
    """Whether the task's last fact is about the correct option (a third of the main
    templates for every seed, drawn independently of the first)."""
    return _on_correct(template, seed, "closes")


def presentation_order(template: Template, seed: int = DEFAULT_SEED) -> tuple[int, ...]:
    """Indices into ``template.facts`` in the order a task presents them, the same for every
    ownership variant: a first and a last fact on the correct option or not
    (:func:`_opens_with_correct`, :func:`_closes_with_correct`), each drawn uniformly among
    those facts, and the other facts uniformly shuffled between them."""
    rng = _fact_order_rng(template.id, seed)
    indices = _canonical_order(template)

    def pick(on_correct: bool, taken: tuple[int, ...]) -> int:
        free = [i for i in indices if i not in taken]
        allowed = [i for i in free if (template.facts[i].option == template.correct) == on_correct]
        allowed = allowed or free  # a template without such facts (never in a verified bank)
        return allowed[int(rng.integers(len(allowed)))]

    first = pick(_opens_with_correct(template, seed), ())
    last = pick(_closes_with_correct(template, seed), (first,))
    middle = [i for i in indices if i not in (first, last)]
    return (first, *(middle[int(i)] for i in rng.permutation(len(middle))), last)


def key_position(template: Template, variant: OwnershipVariant, seed: int = DEFAULT_SEED) -> int:
    """Where the rotated listing puts the key (0 = first): (template number + variant index +
    seed) mod number of options (module docstring)."""
    slot = main_slot(template.id, template.domain)
    number = slot if slot is not None else stable_seed("crossprofile-option-order", template.id)
    return (number + ALL_VARIANTS.index(variant) + seed) % len(template.options)


def presented_options(
    template: Template,
    variant: OwnershipVariant,
    seed: int = DEFAULT_SEED,
    option_order: OptionOrder = "rotate",
) -> tuple[str, ...]:
    """The options as the task lists them: the template's order rotated so the key sits at
    :func:`key_position` (``rotate``), or the template's order (``template``)."""
    if option_order not in _OPTION_ORDERS:
        raise ValueError(f"option_order must be one of {_OPTION_ORDERS}; got {option_order!r}")
    options = tuple(template.options)
    if option_order == "template":
        return options
    offset = options.index(template.correct) - key_position(template, variant, seed)
    return tuple(options[(j + offset) % len(options)] for j in range(len(options)))


def derive_task(
    template: Template,
    variant: OwnershipVariant,
    seed: int = DEFAULT_SEED,
    option_order: OptionOrder = "rotate",
) -> Task:
    """The task for one template under one ownership variant, facts in presentation order,
    options in the ``option_order`` listing (:func:`presented_options`)."""
    holders = assign_holders(template, variant, seed)
    ordered = [template.facts[i] for i in presentation_order(template, seed)]
    facts = tuple(
        TaskFact(
            id=f.id,
            role=f.role,
            option=f.option,
            text=f.text,
            holders=holders[f.id],
            criterion=getattr(f, "criterion", None),
            attribute=getattr(f, "attribute", None),
            polarity=getattr(f, "polarity", 0),
            tone=getattr(f, "tone", 0),
        )
        for f in ordered
    )
    return Task(
        id=f"{template.id}/{variant.id}",
        template=template.id,
        variant=variant.id,
        domain=template.domain,
        pilot=template.pilot,
        seed=seed,
        title=template.title,
        description=template.description,
        criteria=tuple(template.criteria),
        options=presented_options(template, variant, seed, option_order),
        correct=template.correct,
        facts=facts,
    )


def derive_tasks(
    templates: Iterable[Template],
    seed: int = DEFAULT_SEED,
    variants: Sequence[OwnershipVariant] = ALL_VARIANTS,
    option_order: OptionOrder = "rotate",
) -> list[Task]:
    """Every template under every variant, in template order then variant order."""
    return [derive_task(t, v, seed, option_order) for t in templates for v in variants]


def write_tasks_jsonl(tasks: Iterable[Task], path: Path) -> Path:
    """Write one JSON object per line, atomically (temp file in the same folder, then rename)."""
    path = Path(path)
    with atomic_path(path) as tmp, tmp.open("w", encoding="utf-8", newline="\n") as out:
        for task in tasks:
            out.write(task.to_json() + "\n")
    return path


def read_tasks_jsonl(path: Path) -> list[Task]:
    """Read tasks written by :func:`write_tasks_jsonl`; a bad line names the file and line."""
    tasks = []
    with Path(path).open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                tasks.append(Task.from_dict(json.loads(line)))
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise ValueError(f"{path}: line {number}: not a CrossProfile task: {exc}") from exc
    return tasks
