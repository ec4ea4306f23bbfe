"""The experiment grid of a memory run: policies x budgets (+ the fixed item count) x tag modes.

A *cell* is one memory a task gets: a policy with a token budget fraction ``r``, with the fixed
item count (``item_limit``), or with no budget (references). Each cell is read under every tag
mode, one decision each.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from deliberation.experiments.memory.decision import TAG_MODES
from deliberation.memory_policies import BUDGET_FRACTIONS, FIXED_ITEM_COUNT, policy_spec
from deliberation.profiles.profile import check_distinct


@dataclass(frozen=True)
class Cell:
    """One memory per task: ``budget`` (fraction r) or ``item_limit`` or neither (reference)."""

    policy: str
    budget: float | None = None
    item_limit: int | None = None


@dataclass(frozen=True)
class Grid:
    policies: tuple[str, ...]
    budgets: tuple[float, ...] = BUDGET_FRACTIONS
    item_limit: int | None = FIXED_ITEM_COUNT
    tags: tuple[str, ...] = TAG_MODES

    def __post_init__(self) -> None:
        check_distinct(self.policies, "policies")
        check_distinct(self.budgets, "budgets")
        check_distinct(self.tags, "tags")
        for policy in self.policies:
            policy_spec(policy)  # unknown names fail here, with the registered list
        for tag in self.tags:
            if tag not in TAG_MODES:
                raise ValueError(f"unknown tag mode {tag!r}; expected some of {TAG_MODES}")
        for r in self.budgets:
            if not 0 < r <= 1:
                raise ValueError(f"budget fraction must be in (0, 1], got {r}")
        if self.item_limit is not None and self.item_limit <= 0:
            raise ValueError(f"item_limit must be positive, got {self.item_limit}")

    def cells(self) -> list[Cell]:
        """Every cell, in policy order: budgets first, then the fixed item count."""
        cells = []
        for policy in self.policies:
            spec = policy_spec(policy)
            if not spec.budgeted:
                cells.append(Cell(policy))
                continue
            cells.extend(Cell(policy, budget=r) for r in self.budgets)
            if spec.item_based and self.item_limit is not None:
                cells.append(Cell(policy, item_limit=self.item_limit))
        return cells

    def needs(self) -> set[str]:
        return {need for p in self.policies for need in policy_spec(p).needs}


def parse_list(text: str | Sequence[str] | None) -> tuple[str, ...] | None:
    """``"R1,B4"`` or ``["R1", "B4"]`` (or ``["R1,B4"]``) -> ``("R1", "B4")``; None stays None."""
    if text is None:
        return None
    values = [text] if isinstance(text, str) else list(text)
    return tuple(part.strip() for value in values for part in str(value).split(",") if part.strip())


def parse_budgets(values: Sequence[str] | None) -> tuple[float, ...] | None:
    if values is None:
        return None
    try:
        return tuple(float(v) for v in values)
    except ValueError:
        raise ValueError(f"budgets must be numbers like 0.4,0.6: got {list(values)}") from None
