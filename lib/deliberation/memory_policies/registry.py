"""The policy registry and the one function that builds a memory from a policy.

A policy is one small function registered by name. Three shapes cover every policy:

- ``@rank_policy``: returns the candidates in the policy's preference order; the budget (or the
  fixed item count) is then filled by walking that order (:func:`.budget.take_in_order`).
- ``@subset_policy``: chooses the kept set itself within a capacity (balance audit).
- ``@reference_policy``: a fixed set with no budget (all facts, empty, private-only, shared-only).
- ``@summary_policy``: the memory is text (B3), cut to the budget.

Whatever the policy's order, :func:`build_memory` returns the kept items in first-mention order,
so the order the decision maker reads is never a confound between policies.

Model-based policies read labels or a summary that the runner obtained from a model call
(``MemoryPool.relevance``, ``.balance``, ``.summary``); oracle policies read the true roles
(``MemoryPool.truth``). Each registration says which of these it needs.

The policy modules import this one to register; this one imports none of them (the package's
``__init__`` imports them, so every policy is registered once ``deliberation.memory_policies`` is imported).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from deliberation.discussion.transcript import MemoryCandidate
from deliberation.inference.tokens import count_tokens, truncate_tokens
from deliberation.memory_policies.budget import Capacity

# What a policy reads besides the candidates: "relevance", "balance", "summary" (pool fields the
# memory runs fill from model calls), "truth" (the benchmark's true roles), or the name of any
# other need a provider is registered for (its reading is kept in ``MemoryPool.provided``).
_Need = str
_Shape = Literal["rank", "subset", "reference", "summary"]


class _TrueFact(Protocol):
    """What an oracle may know about a fact: its role, option and polarity (CrossProfile's
    ``TaskFact`` qualifies)."""

    role: str
    option: str
    polarity: int


@dataclass(frozen=True)
class BalanceLabel:
    """A labeller's reading of one statement: the option it bears on (None: no option) and its
    direction for that option: +1 for, -1 against, 0 neither."""

    option: str | None
    direction: int

    def __post_init__(self) -> None:
        if self.direction not in (-1, 0, 1):
            raise ValueError(f"direction must be -1, 0 or 1, got {self.direction!r}")


@dataclass(frozen=True)
class MemoryPool:
    """Everything a policy may read about one discussion."""

    task_id: str
    seed: int
    candidates: tuple[MemoryCandidate, ...]
    options: tuple[str, ...] = ()
    relevance: Mapping[str, bool] | None = None
    balance: Mapping[str, BalanceLabel] | None = None
    summary: str | None = None
    truth: Mapping[str, _TrueFact] | None = field(default=None, repr=False)
    provided: Mapping[str, object] = field(default_factory=dict)  # other needs' readings

    def require(self, need: _Need, policy: str) -> object:
        value = getattr(self, need) if need in _POOL_NEEDS else self.provided.get(need)
        if value is None:
            raise ValueError(
                f"policy {policy} needs {need!r} in its memory pool (task {self.task_id})"
            )
        return value

    def with_need(self, need: _Need, value: object) -> MemoryPool:
        """This pool with ``need``'s reading (a field of its own, or kept in ``provided``)."""
        if need in _POOL_NEEDS:
            return dataclasses.replace(self, **{need: value})
        return dataclasses.replace(self, provided={**self.provided, need: value})


_POOL_NEEDS = frozenset({"relevance", "balance", "summary", "truth"})


@dataclass(frozen=True)
class Memory:
    """What the decision maker reads: kept items in first-mention order, or a summary text."""

    policy: str
    items: tuple[MemoryCandidate, ...] = ()
    summary: str | None = None
    capacity: Capacity | None = None
    summary_cut: bool = False

    @property
    def kept_tokens(self) -> int:
        if self.summary is not None:
            return count_tokens(self.summary)
        return sum(c.tokens for c in self.items)

    @property
    def fact_ids(self) -> tuple[str, ...]:
        return tuple(c.fact_id for c in self.items)


_Selection = Sequence[MemoryCandidate] | str
_PolicyFunction = Callable[[MemoryPool, Capacity | None], _Selection]


@dataclass(frozen=True)
class PolicySpec:
    name: str
    shape: _Shape
    select: _PolicyFunction
    needs: tuple[_Need, ...]
    description: str
    label: str  # a few words for figure legends ("rarest first"): what the code means

    @property
    def legend(self) -> str:
        """``"R1: rarest first"``: the code a table uses and what it means, for a figure."""
        return f"{self.name}: {self.label}" if self.label else self.name

    @property
    def budgeted(self) -> bool:
        """References ignore the budget; every other policy needs a capacity."""
        return self.shape != "reference"

    @property
    def item_based(self) -> bool:
        """Whether the memory is a set of statements (so a fixed item count applies)."""
        return self.shape in ("rank", "subset")


_POLICIES: dict[str, PolicySpec] = {}


def _register(
    name: str, shape: _Shape, needs: Sequence[_Need], func: Callable, select, label: str
) -> None:
    if name in _POLICIES:
        raise ValueError(f"memory policy {name!r} registered twice")
    doc = (func.__doc__ or "").strip().splitlines()
    _POLICIES[name] = PolicySpec(name, shape, select, tuple(needs), doc[0] if doc else "", label)


def rank_policy(name: str, *, label: str = "", needs: Sequence[_Need] = ()):
    """Register ``func(pool) -> candidates in preference order``."""

    def decorate(func: Callable[[MemoryPool], Sequence[MemoryCandidate]]):
        from deliberation.memory_policies.budget import take_in_order

        def select(pool: MemoryPool, capacity: Capacity | None) -> _Selection:
            return take_in_order(func(pool), _need_capacity(name, capacity))

        _register(name, "rank", needs, func, select, label)
        return func

    return decorate


def subset_policy(name: str, *, label: str = "", needs: Sequence[_Need] = ()):
    """Register ``func(pool, capacity) -> kept candidates`` (any order)."""

    def decorate(func: Callable[[MemoryPool, Capacity], Sequence[MemoryCandidate]]):
        def select(pool: MemoryPool, capacity: Capacity | None) -> _Selection:
            return func(pool, _need_capacity(name, capacity))

        _register(name, "subset", needs, func, select, label)
        return func

    return decorate


def reference_policy(name: str, *, label: str = ""):
    """Register ``func(pool) -> kept candidates`` with no budget."""

    def decorate(func: Callable[[MemoryPool], Sequence[MemoryCandidate]]):
        def select(pool: MemoryPool, capacity: Capacity | None) -> _Selection:
            if capacity is not None:
                raise ValueError(f"reference policy {name} takes no budget")
            return func(pool)

        _register(name, "reference", (), func, select, label)
        return func

    return decorate


def summary_policy(name: str, *, label: str = "", needs: Sequence[_Need] = ("summary",)):
    """Register ``func(pool) -> summary text``; :func:`build_memory` cuts it to the budget."""

    def decorate(func: Callable[[MemoryPool], str]):
        def select(pool: MemoryPool, capacity: Capacity | None) -> _Selection:
            capacity = _need_capacity(name, capacity)
            if capacity.unit != "tokens":
                raise ValueError(f"summary policy {name} needs a token budget, not an item count")
            return func(pool)

        _register(name, "summary", needs, func, select, label)
        return func

    return decorate


def _need_capacity(name: str, capacity: Capacity | None) -> Capacity:
    if capacity is None:
        raise ValueError(f"memory policy {name} needs a budget or an item count")
    return capacity


def policy_spec(name: str) -> PolicySpec:
    try:
        return _POLICIES[name]
    except KeyError:
        raise KeyError(
            f"unknown memory policy {name!r}; registered: {registered_policies()}"
        ) from None


def policy_legend(name: str) -> str:
    """A policy's legend entry (``"R1: rarest first"``); a name no policy registers (a
    measure such as "transcript") is returned as it is."""
    spec = _POLICIES.get(name)
    return spec.legend if spec is not None else name


def registered_policies() -> list[str]:
    return list(_POLICIES)


def build_memory(policy: str, pool: MemoryPool, capacity: Capacity | None = None) -> Memory:
    """Run ``policy`` on ``pool`` within ``capacity``; kept items come back in first-mention
    order. A summary longer than a token budget is cut with the token counter (``summary_cut``).
    Raises if a policy ever exceeds its capacity (a bug, never silently clipped)."""
    spec = policy_spec(name=policy)
    for need in spec.needs:
        pool.require(need, policy)
    selection = spec.select(pool, capacity)
    if isinstance(selection, str):
        assert capacity is not None
        text, cut = truncate_tokens(selection.strip(), capacity.limit)
        return Memory(policy=policy, summary=text, capacity=capacity, summary_cut=cut)
    known = {c.fact_id for c in pool.candidates}
    ids = [c.fact_id for c in selection]
    if len(set(ids)) != len(ids) or not set(ids) <= known:
        raise RuntimeError(f"policy {policy} returned duplicate or unknown items: {ids}")
    items = tuple(sorted(selection, key=lambda c: c.first_mention))
    if capacity is not None and capacity.used(items) > capacity.limit:
        raise RuntimeError(
            f"policy {policy} exceeded its capacity: {capacity.used(items)} > {capacity.limit}"
            f" {capacity.unit} (task {pool.task_id})"
        )
    return Memory(policy=policy, items=items, capacity=capacity)
