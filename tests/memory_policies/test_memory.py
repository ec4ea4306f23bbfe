"""Memory policies on the hand-made task of helpers/memory_task.py (kept sets worked out by hand)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from helpers.memory_task import CANDIDATES, OPTIONS, TOKENS, TRUTH, pool

from deliberation.benchmarks.crossprofile.scoring import net_evidence_lead
from deliberation.discussion.transcript import MemoryCandidate
from deliberation.memory_policies import (
    BalanceLabel,
    Capacity,
    budget_tokens,
    build_memory,
    policy_spec,
    registered_policies,
)
from deliberation.memory_policies.balance import audit_balance, true_balance_labels


def kept(policy: str, capacity: Capacity | None, **extra) -> list[str]:
    return list(build_memory(policy, pool(**extra), capacity).fact_ids)


def test_fixture_token_counts_and_budgets():
    assert {c.fact_id: c.tokens for c in CANDIDATES} == TOKENS
    assert [budget_tokens(CANDIDATES, r) for r in (0.4, 0.6, 0.8)] == [19, 29, 39]


def test_budget_is_exact_floor_of_the_decimal_fraction():
    # 0.29 * 100 is 28.999999999999996 in floating point; the budget must still be 29.
    items = [MemoryCandidate(f"x{k}", "word " * 10, ("A1",), k) for k in range(10)]
    assert budget_tokens(items, 0.29) == 29
    with pytest.raises(ValueError, match="fraction"):
        budget_tokens(items, 1.5)


@pytest.mark.parametrize(
    ("policy", "limit", "expected"),
    [
        # R1 order: c3 c4 c5 c7 c6 c1 c2 c8; at 19, c5 no longer fits but c7 (5) does.
        ("R1", 19, ["c3", "c4", "c7"]),
        ("R1", 29, ["c3", "c4", "c5", "c7"]),
        # B4 walks c1..c8: 5, 9, 17, 23; c5/c6 skip; c7 fits (28).
        ("B4", 29, ["c1", "c2", "c3", "c4", "c7"]),
        ("B4", 19, ["c1", "c2", "c3"]),
        # Oracle relevance: support/decoy rarest-first (c3 c5 c7 c6 c1 c2), then c4 c8.
        ("oracle-rel", 29, ["c3", "c5", "c6", "c7"]),
    ],
)
def test_rank_policies_keep_exactly_these_items(policy, limit, expected):
    assert kept(policy, Capacity.tokens(limit), truth=TRUTH) == expected


def test_r1_at_39_fills_with_c1_after_skipping():
    # c3 c4 c5 c7 c6 = 33 tokens, c1 (5) -> 38 fits, c2 (4) -> 42 does not, c8 no.
    assert kept("R1", Capacity.tokens(39)) == ["c1", "c3", "c4", "c5", "c6", "c7"]


def test_r1_rel_uses_the_model_labels_not_the_truth():
    labels = {"c4": True, "c8": True, "c1": False}  # a bad labeller: irrelevant ones first
    # relevant rarest-first: c4 (1 holder), c8 (4); then the rest: c3 c5 c7 c6 c1 c2.
    assert kept("R1-rel", Capacity.tokens(29), relevance=labels) == ["c3", "c4", "c5", "c8"]


def test_random_is_seeded_by_task_policy_and_seed_and_nested_across_budgets():
    small = kept("Random", Capacity.tokens(19))
    again = kept("Random", Capacity.tokens(19))
    assert small == again
    orders = {tuple(build_memory("Random", pool(), Capacity.items(8)).fact_ids) for _ in range(2)}
    assert len(orders) == 1
    from deliberation.memory_policies.registry import MemoryPool

    other_seeds = {
        tuple(
            c.fact_id
            for c in policy_spec("Random").select(
                MemoryPool("toy/SP-DS-IP", s, CANDIDATES, OPTIONS), Capacity.items(8)
            )
        )
        for s in range(6)
    }
    assert len(other_seeds) > 1


@pytest.mark.parametrize("policy", ["R1", "B4", "Random", "oracle-rel", "R1-rel", "balance"])
def test_fixed_count_control_keeps_exactly_seven(policy):
    extra = {
        "truth": TRUTH,
        "relevance": {c.fact_id: True for c in CANDIDATES},
        "balance": {
            c.fact_id: BalanceLabel(OPTIONS[k % 3], 1 if k % 2 else -1)
            for k, c in enumerate(CANDIDATES)
        },
    }
    memory = build_memory(policy, pool(**extra), Capacity.items(7))
    if policy == "balance":
        assert len(memory.items) <= 7  # a subset policy may keep fewer
    else:
        assert len(memory.items) == 7


def test_fixed_count_is_the_first_seven_of_the_order():
    assert kept("R1", Capacity.items(7)) == ["c1", "c2", "c3", "c4", "c5", "c6", "c7"]
    assert kept("B4", Capacity.items(7)) == ["c1", "c2", "c3", "c4", "c5", "c6", "c7"]
    # R1's order is c3 c4 c5 c7 c6 c1 c2 c8: c8 is the one left out; with 5 items c6 is too.
    assert kept("R1", Capacity.items(5)) == ["c3", "c4", "c5", "c6", "c7"]


@pytest.mark.parametrize("policy", ["R1", "B4", "Random", "oracle-rel", "oracle-balance"])
@pytest.mark.parametrize("limit", range(0, 50, 3))
def test_budget_is_never_exceeded_and_items_come_in_first_mention_order(policy, limit):
    memory = build_memory(policy, pool(truth=TRUTH), Capacity.tokens(limit))
    assert memory.kept_tokens <= limit
    assert [c.first_mention for c in memory.items] == sorted(c.first_mention for c in memory.items)


def test_references():
    assert kept("all", None) == [f"c{k}" for k in range(1, 9)]
    assert kept("empty", None) == []
    assert kept("private-only", None) == ["c3", "c4", "c5", "c7"]
    assert kept("shared-only", None) == ["c1", "c2", "c6", "c8"]
    with pytest.raises(ValueError, match="takes no budget"):
        build_memory("all", pool(), Capacity.tokens(10))


def test_summary_is_cut_to_the_budget_and_the_cut_is_recorded():
    text = "Alpha passed the audit and cut costs; Beta failed inspections; Gamma missed a deadline."
    short = build_memory("B3", pool(summary=text), Capacity.tokens(5))
    assert short.summary == "Alpha passed the audit and" and short.summary_cut
    whole = build_memory("B3", pool(summary=text), Capacity.tokens(29))
    assert whole.summary == text and not whole.summary_cut
    with pytest.raises(ValueError, match="item count"):
        build_memory("B3", pool(summary=text), Capacity.items(7))


def test_missing_model_input_is_a_clear_error():
    with pytest.raises(ValueError, match="R1-rel needs 'relevance'"):
        build_memory("R1-rel", pool(), Capacity.tokens(29))
    with pytest.raises(KeyError, match="unknown memory policy"):
        build_memory("nope", pool(), Capacity.tokens(29))
    with pytest.raises(ValueError, match="needs a budget"):
        build_memory("R1", pool(), None)


def test_every_registered_policy_documents_itself():
    for name in registered_policies():
        assert policy_spec(name).description, name


# ---------------------------------------------------------------------------------------------
# Balance audit
# ---------------------------------------------------------------------------------------------


def test_oracle_balance_by_hand():
    # Max margin: Alpha +2 (c1 c5), Beta -1 (c3), Gamma -1 (c7) = 25 tokens -> margin 3.
    assert kept("oracle-balance", Capacity.tokens(29), truth=TRUTH) == ["c1", "c3", "c5", "c7"]
    # At 19: margin 2 is the best; {c1, c5} (5 holders) beats {c1, c5, c7} (6 holders).
    assert kept("oracle-balance", Capacity.tokens(19), truth=TRUTH) == ["c1", "c5"]
    # At 11 Alpha cannot reach +2: c5 (+1) with c7 (Gamma -1) = 12 > 11; c5 + c3 = 15 > 11;
    # best margin 1 with fewest holders: c5 alone (1 holder, 7 tokens).
    assert kept("oracle-balance", Capacity.tokens(11), truth=TRUTH) == ["c5"]


def test_balance_reads_the_labels_it_is_given():
    # Labels that make Gamma the leader (+2), Alpha second (+1), Beta last (0): the audit keeps
    # that ranking, so it needs c1 for Alpha > Beta, whatever the truth says.
    labels = {
        "c6": BalanceLabel("Gamma", 1),
        "c8": BalanceLabel("Gamma", 1),
        "c1": BalanceLabel("Alpha", 1),
        "c4": BalanceLabel(None, 0),
    }
    assert kept("balance", Capacity.tokens(29), balance=labels) == ["c1", "c6", "c8"]
    # Too small to keep the ranking (c6 + c8 = 14 > 12): the largest margin wins, Gamma +1.
    assert kept("balance", Capacity.tokens(12), balance=labels) == ["c6"]


def _subsets(candidates):
    for size in range(len(candidates) + 1):
        yield from itertools.combinations(candidates, size)


def _random_task(rng: np.random.Generator):
    n = int(rng.integers(4, 10))
    options = ("O1", "O2", "O3")
    candidates, truth = [], {}
    for k in range(n):
        words = int(rng.integers(1, 9))
        holders = tuple(f"A{j}" for j in sorted(rng.choice(4, int(rng.integers(1, 5)), False)))
        fact_id = f"f{k}"
        candidates.append(MemoryCandidate(fact_id, " ".join(["w"] * words), holders, k))
        role = rng.choice(["support", "decoy", "irrelevant"])
        truth[fact_id] = type("T", (), {})()
        truth[fact_id].role = str(role)
        truth[fact_id].option = str(rng.choice(options))
        truth[fact_id].polarity = 0 if role == "irrelevant" else int(rng.choice([-1, 1]))
    return tuple(candidates), truth, options


def test_true_labels_keep_a_positive_lead_whenever_one_fits():
    """Brute force over random small tasks with one leader (as every CrossProfile task has):
    if any subset within the budget gives the leader a positive lead, the audit's choice does
    too, and it has the largest margin among subsets that keep the full ranking."""
    rng = np.random.default_rng(7)
    checked = 0
    for _ in range(150):
        candidates, truth, options = _random_task(rng)
        labels = true_balance_labels(truth)
        scores = {o: 0 for o in options}
        for c in candidates:
            if labels[c.fact_id].option:
                scores[labels[c.fact_id].option] += labels[c.fact_id].direction
        leaders = [o for o in options if scores[o] == max(scores.values())]
        if len(leaders) > 1:
            continue
        leader = leaders[0]
        total = sum(c.tokens for c in candidates)
        for limit in sorted({int(rng.integers(0, total + 1)) for _ in range(4)}):
            chosen = audit_balance(candidates, labels, options, Capacity.tokens(limit))
            assert sum(c.tokens for c in chosen) <= limit

            def lead(subset, truth=truth, leader=leader, options=options):
                facts = [truth[c.fact_id] for c in subset]
                return net_evidence_lead(facts, leader, options)

            fitting = [s for s in _subsets(candidates) if sum(c.tokens for c in s) <= limit]
            best = max(lead(s) for s in fitting)
            if best > 0:
                checked += 1
                assert lead(chosen) > 0
            strict_ok = [
                s
                for s in fitting
                if all(
                    _kept(s, truth, a) > _kept(s, truth, b)
                    for a in options
                    for b in options
                    if scores[a] > scores[b]
                )
            ]
            if strict_ok:
                assert lead(chosen) == max(lead(s) for s in strict_ok)
    assert checked > 50


def _kept(subset, truth, option):
    return sum(
        truth[c.fact_id].polarity
        for c in subset
        if truth[c.fact_id].option == option and truth[c.fact_id].role != "irrelevant"
    )
