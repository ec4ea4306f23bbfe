"""The one token counter: words and single punctuation marks, deterministic."""

from deliberation.inference.tokens import (
    count_tokens,
    tokenize,
    truncate_tokens,
)


def test_words_and_punctuation_are_separate_tokens():
    assert tokenize("Ana's score: 4.5%") == ["Ana", "'", "s", "score", ":", "4", ".", "5", "%"]
    assert count_tokens("") == 0 and count_tokens("  \n ") == 0
    assert count_tokens("a b c.") == 4


def test_truncation_keeps_original_spacing_and_says_whether_it_cut():
    assert truncate_tokens("one  two, three", 3) == ("one  two,", True)
    assert truncate_tokens("one two", 2) == ("one two", False)
    assert truncate_tokens("one two", 0) == ("", True)
