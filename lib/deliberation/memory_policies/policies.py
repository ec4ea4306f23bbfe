"""Every memory policy of paper 1, one small function each (registered by name).

Rank policies return a preference order; the budget is filled by walking it. Rarity means
fewer holders; ties are broken by first mention throughout.

Adding a policy is one decorated function here (or in its own module, imported by the package's
``__init__``, which registers every policy module).
"""

from __future__ import annotations

import numpy as np

from deliberation.discussion.transcript import MemoryCandidate
from deliberation.memory_policies.registry import (
    MemoryPool,
    rank_policy,
    reference_policy,
    summary_policy,
)
from deliberation.seeds import stable_seed

_RELEVANT_ROLES = frozenset({"support", "decoy"})


def _rarity_key(candidate: MemoryCandidate) -> tuple[int, int]:
    """Fewest holders first, then first mention."""
    return (candidate.n_holders, candidate.first_mention)


def _rarest_first(candidates: tuple[MemoryCandidate, ...]) -> list[MemoryCandidate]:
    return sorted(candidates, key=_rarity_key)


@rank_policy("R1", label="rarest first")
def rarest(pool: MemoryPool) -> list[MemoryCandidate]:
    """R1: rarest first (fewest holders; ties by first mention)."""
    return _rarest_first(pool.candidates)


@rank_policy("B4", label="first mention")
def first_mention(pool: MemoryPool) -> list[MemoryCandidate]:
    """B4: first-mention order."""
    return list(pool.candidates)


@rank_policy("Random", label="random order")
def random_order(pool: MemoryPool) -> list[MemoryCandidate]:
    """Random: a permutation seeded by task, policy and seed (the same at every budget)."""
    rng = np.random.default_rng(stable_seed("memory-order", pool.task_id, "Random", pool.seed))
    return [pool.candidates[i] for i in rng.permutation(len(pool.candidates))]


def _relevant_then_rest(pool: MemoryPool, relevant: set[str]) -> list[MemoryCandidate]:
    """Relevant statements rarest-first, then the others rarest-first."""
    return sorted(pool.candidates, key=lambda c: (c.fact_id not in relevant, *_rarity_key(c)))


@rank_policy("R1-rel", label="relevant first (model-labelled)", needs=("relevance",))
def relevance_first(pool: MemoryPool) -> list[MemoryCandidate]:
    """R1-rel: statements a model labelled relevant to the criteria rarest-first, then the rest
    (a statement the labeller did not label counts as not relevant). Costs one labelling call
    per task."""
    assert pool.relevance is not None
    return _relevant_then_rest(pool, {k for k, v in pool.relevance.items() if v})


@rank_policy("oracle-rel", label="relevant first (true roles)", needs=("truth",))
def oracle_relevance(pool: MemoryPool) -> list[MemoryCandidate]:
    """Oracle relevance: as R1-rel with the true roles (support and decoys are relevant)."""
    assert pool.truth is not None
    return _relevant_then_rest(
        pool, {k for k, fact in pool.truth.items() if fact.role in _RELEVANT_ROLES}
    )


@summary_policy("B3", label="model summary")
def summary(pool: MemoryPool) -> str:
    """B3: a model's evidence-preserving summary, read as text and cut to the budget."""
    assert pool.summary is not None
    return pool.summary


@reference_policy("all", label="every fact")
def all_facts(pool: MemoryPool) -> list[MemoryCandidate]:
    """Reference: every statement (no budget)."""
    return list(pool.candidates)


@reference_policy("empty", label="no memory")
def empty(pool: MemoryPool) -> list[MemoryCandidate]:
    """Reference: no memory at all."""
    return []


@reference_policy("private-only", label="facts one agent held")
def private_only(pool: MemoryPool) -> list[MemoryCandidate]:
    """Reference: the statements exactly one agent stated (no budget)."""
    return [c for c in pool.candidates if c.n_holders == 1]


@reference_policy("shared-only", label="facts several agents held")
def shared_only(pool: MemoryPool) -> list[MemoryCandidate]:
    """Reference: the statements more than one agent stated (no budget)."""
    return [c for c in pool.candidates if c.n_holders > 1]
