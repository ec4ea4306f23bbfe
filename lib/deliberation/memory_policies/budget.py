"""The memory budget: what an item costs and how much fits.

An item costs the token count of its statement text (``deliberation.inference.tokens``, the project's one
counter); holder tags are not counted, so a tag mode never changes which items are kept. The
token budget is ``floor(r x tokens of all unique statement texts)``. The fixed-item-count
control counts items instead of tokens (the first 7 of a policy's order).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from deliberation.discussion.transcript import MemoryCandidate

BUDGET_FRACTIONS: tuple[float, ...] = (0.4, 0.6, 0.8)
PRIMARY_FRACTION = 0.6
FIXED_ITEM_COUNT = 7


def budget_tokens(candidates: Iterable[MemoryCandidate], fraction: float) -> int:
    """``floor(fraction x total statement tokens)``, computed exactly (0.6 x 5 is 3, not
    2.9999...): the fraction is read as the decimal it is written as."""
    if not 0 <= fraction <= 1:
        raise ValueError(f"budget fraction must be in [0, 1], got {fraction!r}")
    total = sum(c.tokens for c in candidates)
    return math.floor(Fraction(str(fraction)) * total)


@dataclass(frozen=True)
class Capacity:
    """How much a memory may hold: ``limit`` tokens of statement text, or ``limit`` items."""

    limit: int
    unit: Literal["tokens", "items"] = "tokens"

    def __post_init__(self) -> None:
        if self.unit not in ("tokens", "items"):
            raise ValueError(f"capacity unit must be 'tokens' or 'items', got {self.unit!r}")
        if self.limit < 0:
            raise ValueError(f"capacity limit must be >= 0, got {self.limit}")

    @classmethod
    def tokens(cls, limit: int) -> Capacity:
        return cls(limit, "tokens")

    @classmethod
    def items(cls, limit: int = FIXED_ITEM_COUNT) -> Capacity:
        return cls(limit, "items")

    @classmethod
    def fraction(cls, candidates: Sequence[MemoryCandidate], r: float) -> Capacity:
        return cls(budget_tokens(candidates, r), "tokens")

    def cost(self, candidate: MemoryCandidate) -> int:
        return candidate.tokens if self.unit == "tokens" else 1

    def used(self, items: Iterable[MemoryCandidate]) -> int:
        return sum(self.cost(c) for c in items)


def take_in_order(
    order: Iterable[MemoryCandidate], capacity: Capacity
) -> tuple[MemoryCandidate, ...]:
    """Walk ``order``; keep each item that still fits, skip one that does not and try the next
    (so a long statement never blocks shorter ones behind it)."""
    kept: list[MemoryCandidate] = []
    used = 0
    for candidate in order:
        cost = capacity.cost(candidate)
        if used + cost <= capacity.limit:
            kept.append(candidate)
            used += cost
    return tuple(kept)
