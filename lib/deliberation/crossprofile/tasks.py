"""Task derivation: one task per (template, ownership variant), with every fact's holders.

A task is what a run needs: the decision (description, criteria, options in presentation
order, the key) and the 12 facts with the agents that hold them.

Facts are presented in a seeded order, never in the template's role order (support, decoy,
irrelevant), which would put the correct option first in most tasks. The order is a
permutation drawn from (template id, task seed) only, not from the ownership variant: the 8
variants of a template read the same sequence and differ only in who holds what (a paired
design, like the holders). With every option named by four of the twelve facts, the first
fact names the correct option with probability 1/3.

Options are presented in the template's order; the bank balances the position of the
correct option across templates (the cue audit checks it). Ids are
``<template id>/<variant id>``, e.g. ``hiring-01/SP-DS-IP``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from deliberation.atomic import atomic_path
from deliberation.crossprofile.schema import Template
from deliberation.crossprofile.variants import (
    AGENTS,
    ALL_VARIANTS,
    GROUPS,
    OwnershipVariant,
    derive_seed,
    group_rng,
    private_holders,
)

DEFAULT_SEED = 0


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


def assign_holders(
    template: Template, variant: OwnershipVariant, seed: int = DEFAULT_SEED
) -> dict[str, tuple[str, ...]]:
    """Holders of every fact (by fact id) under ``variant``: all agents for a shared group,
    one agent per fact for a private group (deterministic in template id, group and seed)."""
    holders: dict[str, tuple[str, ...]] = {}
    for group in GROUPS:
        facts = template.facts_with_role(group)
        if variant.ownership(group) == "shared":
            holders.update({f.id: AGENTS for f in facts})
        else:
            drawn = private_holders(len(facts), group_rng(template.id, group, seed))
            holders.update({f.id: (h,) for f, h in zip(facts, drawn, strict=True)})
    return holders


def fact_order_seed(template_id: str, seed: int) -> int:
    """The seed of a template's fact presentation order (the one place it is derived)."""
    return derive_seed("crossprofile-fact-order", template_id, seed)


def presentation_order(template: Template, seed: int = DEFAULT_SEED) -> tuple[int, ...]:
    """Indices into ``template.facts`` in the order a task presents them: a uniformly random
    permutation seeded by (template id, seed), the same for every ownership variant."""
    rng = np.random.default_rng(fact_order_seed(template.id, seed))
    return tuple(int(i) for i in rng.permutation(len(template.facts)))


def derive_task(template: Template, variant: OwnershipVariant, seed: int = DEFAULT_SEED) -> Task:
    """The task for one template under one ownership variant, facts in presentation order."""
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
        options=tuple(template.options),
        correct=template.correct,
        facts=facts,
    )


def derive_tasks(
    templates: Iterable[Template],
    seed: int = DEFAULT_SEED,
    variants: Sequence[OwnershipVariant] = ALL_VARIANTS,
) -> list[Task]:
    """Every template under every variant, in template order then variant order."""
    return [derive_task(t, v, seed) for t in templates for v in variants]


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
