"""Balance audit: keep the evidence balance, not the rarest or most relevant claims.

In full: ``docs/experiments.md``, section "The balance audit policy
(memory_policies/balance.py)".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from deliberation.discussion.transcript import MemoryCandidate
from deliberation.memory_policies.budget import Capacity
from deliberation.memory_policies.registry import BalanceLabel, MemoryPool, subset_policy

# A partial subset: (cost, total holders, chosen item index, the partial it extends or None).
_Partial = tuple


def _add(front: list[_Partial], entry: _Partial) -> None:
    """Insert ``entry`` into a Pareto front over (cost, holders), in place."""
    cost, holders = entry[0], entry[1]
    for other in front:
        if other[0] <= cost and other[1] <= holders:
            return
    front[:] = [o for o in front if not (cost <= o[0] and holders <= o[1])]
    front.append(entry)


def _items(partial: _Partial) -> list[int]:
    chosen = []
    while partial is not None and partial[2] >= 0:
        chosen.append(partial[2])
        partial = partial[3]
    return chosen[::-1]


def _option_scores(
    labels: Mapping[str, BalanceLabel], options: Sequence[str], ids: Sequence[str] | None = None
) -> dict[str, int]:
    """Sum of directions per option over ``ids`` (default: every labelled statement)."""
    scores = {o: 0 for o in options}
    for fact_id in labels if ids is None else ids:
        label = labels.get(fact_id)
        if label is not None and label.option in scores:
            scores[label.option] += label.direction
    return scores


def audit_balance(
    candidates: Sequence[MemoryCandidate],
    labels: Mapping[str, BalanceLabel],
    options: Sequence[str],
    capacity: Capacity,
) -> tuple[MemoryCandidate, ...]:
    """The kept subset (see the module docstring for the objective)."""
    options = sorted(
        set(options) or {lab.option for lab in labels.values() if lab.option is not None}
    )  # by name: the listing order of the options must not choose the leader
    index = {o: k for k, o in enumerate(options)}
    scored = sorted(
        (
            c
            for c in candidates
            if (lab := labels.get(c.fact_id)) is not None
            and lab.direction != 0
            and lab.option in index
        ),
        key=lambda c: (c.n_holders, c.first_mention),
    )
    if not options or not scored:
        return ()
    full = _option_scores(labels, options, [c.fact_id for c in candidates])
    best = max(full.values())
    leader = next(k for k, o in enumerate(options) if full[o] == best)
    strict = [(index[a], index[b]) for a in options for b in options if full[a] > full[b]]

    # DP over items: kept score vector -> Pareto front of partial subsets within capacity.
    states: dict[tuple[int, ...], list[_Partial]] = {tuple([0] * len(options)): [(0, 0, -1, None)]}
    limit = capacity.limit
    for position, candidate in enumerate(scored):
        label = labels[candidate.fact_id]
        step, direction = index[label.option], label.direction
        cost, holders = capacity.cost(candidate), candidate.n_holders
        updates = []
        for vector, front in states.items():
            moved = (*vector[:step], vector[step] + direction, *vector[step + 1 :])
            for partial in front:
                if partial[0] + cost <= limit:
                    updates.append(
                        (moved, (partial[0] + cost, partial[1] + holders, position, partial))
                    )
        for vector, partial in updates:
            front = states.get(vector)
            if front is None:
                states[vector] = [partial]
            else:
                _add(front, partial)

    def value(vector: tuple[int, ...]) -> tuple[bool, int]:
        keeps = all(vector[a] > vector[b] for a, b in strict)
        others = [v for k, v in enumerate(vector) if k != leader]
        margin = vector[leader] - max(others) if others else vector[leader]
        return keeps, margin

    top = max(value(v) for v in states)
    winner = min(
        (p for v, front in states.items() if value(v) == top for p in front),
        key=lambda p: (p[1], p[0], sorted(scored[i].first_mention for i in _items(p))),
    )
    return tuple(scored[i] for i in _items(winner))


@subset_policy("balance", label="evidence balance (model-labelled)", needs=("balance",))
def balance_audit(pool: MemoryPool, capacity: Capacity) -> tuple[MemoryCandidate, ...]:
    """Balance audit on a model's labels (option and direction of every statement).

    Cost in calls: one labelling call per task (all statements in one prompt; shared by every
    budget, item count and tag mode), plus the decision call. A statement the labeller did not
    label is treated as "neither" and never kept."""
    assert pool.balance is not None
    return audit_balance(pool.candidates, pool.balance, pool.options, capacity)


def true_balance_labels(truth: Mapping[str, object]) -> dict[str, BalanceLabel]:
    """Labels from the true roles: evidence facts bear on their option with their polarity;
    irrelevant facts bear on nothing."""
    labels = {}
    for fact_id, fact in truth.items():
        evidence = getattr(fact, "role", None) in ("support", "decoy")
        labels[fact_id] = BalanceLabel(
            option=fact.option if evidence else None,  # type: ignore[attr-defined]
            direction=int(fact.polarity) if evidence else 0,  # type: ignore[attr-defined]
        )
    return labels


@subset_policy("oracle-balance", label="evidence balance (true roles)", needs=("truth",))
def oracle_balance_audit(pool: MemoryPool, capacity: Capacity) -> tuple[MemoryCandidate, ...]:
    """Balance audit on the true labels (no model call besides the decision)."""
    assert pool.truth is not None
    return audit_balance(pool.candidates, true_balance_labels(pool.truth), pool.options, capacity)
