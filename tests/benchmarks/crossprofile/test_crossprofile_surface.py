"""The surface statistics the audit reads: each definition on texts whose answer is known."""

from __future__ import annotations

import pytest

from deliberation.benchmarks.crossprofile.surface import STATISTICS
from deliberation.inference.tokens import count_tokens

FACTS = [
    "Ashgrove Academy cannot offer places; it isn't near Kingsmere Road.",  # 10 words
    "Perhaps about 40 pupils may join.",  # 6 words
]


def option_statistics(texts: list[str], option: str) -> dict[str, float]:
    return {s.name: s(texts, option) for s in STATISTICS}


def test_lengths_in_three_units_and_five_aggregates():
    stats = option_statistics(FACTS, "Ashgrove Academy")
    chars = [len(x) for x in FACTS]
    tokens = [count_tokens(x) for x in FACTS]
    assert stats["fact characters (max)"] == max(chars)
    assert stats["fact characters (min)"] == min(chars)
    assert stats["fact characters (spread)"] == max(chars) - min(chars)
    assert stats["fact words (mean)"] == 8.0 and stats["fact words (total)"] == 16
    assert stats["fact tokens (total)"] == sum(tokens)
    assert stats["name characters"] == len("Ashgrove Academy")
    assert stats["name tokens"] == count_tokens("Ashgrove Academy")


def test_counts_of_punctuation_digits_negations_hedges_and_capitals():
    stats = option_statistics(FACTS, "Ashgrove Academy")
    assert stats["punctuation (total)"] == 4  # ; and ' and . in the first, . in the second
    assert stats["digits (total)"] == 2 and stats["digits (mean)"] == 1.0
    assert stats["negations (total)"] == 2  # cannot, isn't
    assert stats["hedges (total)"] == 3  # perhaps, about, may
    # Academy, Kingsmere, Road (the first word of each fact does not count)
    assert stats["capitalised words (total)"] == 3


def test_an_option_no_fact_names_scores_zero_and_every_statistic_is_named_once():
    names = [s.name for s in STATISTICS]
    assert len(names) == len(set(names)) == 3 * 5 + 5 * 2 + 2
    stats = option_statistics([], "Pennfield High")
    assert all(v == 0 for k, v in stats.items() if not k.startswith("name "))


@pytest.mark.parametrize("word", ["no", "Not", "never,", "without", "don't", "nobody."])
def test_negation_words_are_found_with_case_and_punctuation(word):
    assert option_statistics([f"It is {word} there"], "X")["negations (total)"] == 1
