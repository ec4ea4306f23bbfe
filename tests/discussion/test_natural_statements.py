"""Statements of a hand-written free transcript: sentences, near-duplicate groups, rarity, and
the disclosure label of each fact (worked out by hand below)."""

from __future__ import annotations

import pytest

from deliberation.discussion.disclosure import PARTIAL_COVERAGE, coverage, disclosure
from deliberation.discussion.statements import (
    content_tokens,
    group_statements,
    jaccard,
    normalize,
    sentences,
    spoken_sentences,
    statement_candidates,
)
from deliberation.memory_policies import Capacity, MemoryPool, build_memory

AGENTS = ("A1", "A2", "A3", "A4")
# Facts of the task (F3 is held by two agents, the others by one).
F1 = "Harbor Freight passed all 12 safety inspections in 2024."
F2 = "Bayline Movers lost 3 shipments during the spring audit."
F3 = "Coastway Logistics cut delivery times by 20 percent last year."
F4 = "Bayline Movers sponsors the city chess club."
MESSAGES = [
    # A1 states F1 verbatim (other case and spacing), then recommends.
    ("A1", "harbor  freight passed all 12 safety inspections in 2024! I recommend Harbor Freight."),
    # A2 paraphrases F2: keeps "bayline movers lost 3 shipments" (5 of the 8 content tokens).
    ("A2", "I heard Bayline Movers lost 3 shipments. I recommend Harbor Freight."),
    # A3 states F3 verbatim; F4 is only hinted at ("Bayline" and "chess": 2 of 6 tokens).
    ("A3", "Coastway Logistics cut delivery times by 20 percent last year. Bayline likes chess."),
    # A4 repeats F3 with a trivial change (near-duplicate of A3's sentence) and agrees.
    ("A4", "Coastway Logistics cut delivery times by 20 percent last year too. I recommend Harbor Freight."),
]  # fmt: skip


def test_normalize_and_content_tokens():
    assert normalize("  Harbor-Freight's  REPORT, 2024!") == "harbor freight s report 2024"
    assert content_tokens("The audit of the site is done") == frozenset({"audit", "site", "done"})
    assert jaccard(frozenset({"a", "b"}), frozenset({"b", "c"})) == pytest.approx(1 / 3)
    assert jaccard(frozenset(), frozenset({"a"})) == 0.0


def test_sentences_split_messages_and_lines():
    assert sentences(MESSAGES[0][1]) == [
        "harbor  freight passed all 12 safety inspections in 2024!".replace("  ", " "),
        "I recommend Harbor Freight.",
    ]
    assert sentences("Dr. Lee agreed. Costs rose\nNext line") == [
        "Dr. Lee agreed.",
        "Costs rose",
        "Next line",
    ]
    assert sentences("   \n...") == []


def test_statement_groups_and_rarity():
    groups = group_statements(spoken_sentences(MESSAGES))
    texts = [g.text for g in groups]
    assert texts == [
        "harbor freight passed all 12 safety inspections in 2024!",
        "I recommend Harbor Freight.",
        "I heard Bayline Movers lost 3 shipments.",
        "Coastway Logistics cut delivery times by 20 percent last year.",
        "Bayline likes chess.",
    ]
    holders = [g.holders(AGENTS) for g in groups]
    # The recommendation is said by A1, A2, A4 (identical text); F3 by A3 and A4 (A4's sentence
    # adds "too": content tokens 10 vs 9, Jaccard 9/10 >= 0.6, so it joins A3's group).
    assert holders == [("A1",), ("A1", "A2", "A4"), ("A2",), ("A3", "A4"), ("A3",)]
    assert [len(g.members) for g in groups] == [1, 3, 1, 2, 1]

    candidates = statement_candidates(MESSAGES, AGENTS)
    assert [c.fact_id for c in candidates] == ["g1", "g2", "g3", "g4", "g5"]
    assert [c.n_holders for c in candidates] == [1, 3, 1, 2, 1]
    assert [c.first_mention for c in candidates] == [0, 1, 2, 3, 4]
    # Rarest first (R1) keeps the single-holder statements first, in first-mention order.
    pool = MemoryPool(task_id="t", seed=0, candidates=candidates, options=("X",))
    memory = build_memory("R1", pool, Capacity.items(3))
    assert memory.fact_ids == ("g1", "g3", "g5")


def test_a_stricter_threshold_splits_the_near_duplicate():
    groups = group_statements(spoken_sentences(MESSAGES), threshold=0.95)
    assert len(groups) == 6
    with pytest.raises(ValueError, match="threshold"):
        group_statements([], threshold=0)


def test_groups_compare_to_the_first_sentence_only():
    # b is close to a (4/6), c is close to b (4/6) but not to a (3/7): c opens its own group.
    spoken = spoken_sentences(
        [
            ("A1", "alpha beta gamma delta epsilon."),
            ("A2", "alpha beta gamma delta zeta."),
            ("A3", "beta gamma delta zeta eta."),
        ]
    )
    groups = group_statements(spoken)
    assert [len(g.members) for g in groups] == [2, 1]


def test_disclosure_labels_of_each_fact():
    f1 = disclosure(F1, MESSAGES)
    assert (f1.label, f1.stated_by, f1.overlap) == ("full", ("A1",), 1.0)

    f2 = disclosure(F2, MESSAGES)
    # content tokens of F2: bayline movers lost 3 shipments during spring audit (8); the
    # paraphrase keeps 5 of them.
    assert content_tokens(F2) == frozenset(
        {"bayline", "movers", "lost", "3", "shipments", "during", "spring", "audit"}
    )
    assert f2.label == "partial"
    assert f2.overlap == pytest.approx(5 / 8)
    assert f2.stated_by == ("A2",)

    f3 = disclosure(F3, MESSAGES)  # stated verbatim by two agents (A4 adds a word after it)
    assert (f3.label, f3.stated_by) == ("full", ("A3", "A4"))

    f4 = disclosure(F4, MESSAGES)
    assert f4.label == "none"
    assert f4.overlap == pytest.approx(coverage(F4, "Bayline likes chess."))
    assert f4.overlap < PARTIAL_COVERAGE
    assert f4.stated_by == ()


def test_full_needs_word_boundaries_and_partial_needs_one_sentence():
    # "ab cd" inside "xab cd" is not a full statement.
    assert disclosure("ab cd", [("A1", "xab cd")]).label != "full"
    # Tokens spread over two sentences do not add up to a partial statement.
    fact = "Delta ferries failed four brake tests twice."  # 7 content tokens
    spread = [("A1", "Delta ferries failed. Four brake tests.")]  # 3/7 and 3/7
    assert disclosure(fact, spread).label == "none"
    assert disclosure(fact, []).label == "none"
