"""Answer extraction shared by the DHD graders: boxes, final-answer lines, letters, numbers."""

from __future__ import annotations

import pytest

from deliberation.benchmarks.problems.extract import (
    answer_span,
    final_answer,
    last_boxed,
    letters_in,
    parse_letters,
    parse_number,
    parse_range,
    parse_reply_number,
)


def test_last_boxed_keeps_nested_braces_and_takes_the_last_box():
    reply = r"First \boxed{1} then \boxed{\frac{a^{2}}{b_{1}}} done."
    assert last_boxed(reply) == r"\frac{a^{2}}{b_{1}}"


def test_last_boxed_skips_an_unclosed_trailing_box():
    assert last_boxed(r"\boxed{7} and then \boxed{\frac{1}{2}") == "7"


def test_fbox_and_boxed_without_braces_are_read():
    assert last_boxed(r"\fbox{12}") == "12"
    assert last_boxed(r"so $\boxed 5$") == "5"


def test_proposed_final_answer_line_wins_when_it_comes_after_a_box():
    reply = "Step: \\boxed{3}\nOn reflection...\nProposed final answer: 4"
    found = final_answer(reply)
    assert (found.text, found.source) == ("4", "final_line")


def test_a_box_after_the_final_answer_line_wins():
    reply = "Final answer: 4\nWait, recheck: \\boxed{5}"
    assert final_answer(reply).text == "5"


def test_final_answer_line_with_markdown_and_a_box_inside():
    assert final_answer("**Final Answer:** $\\boxed{12}$").text == "12"


def test_answer_phrase_is_used_when_nothing_is_marked():
    found = final_answer("After checking both cases, the answer is 42.")
    assert (found.text, found.source) == ("42", "answer_phrase")


def test_long_unmarked_prose_is_not_an_answer_but_a_short_reply_is():
    prose = (
        "I worked through this problem at length and I think it could be about 5 or maybe 6 really"
    )
    assert answer_span(prose) is None
    assert answer_span("  5 m/s ") == "5 m/s"
    assert answer_span("") is None


@pytest.mark.parametrize(
    ("reply", "letters"),
    [
        ("(B)", {"B"}),
        ("B.", {"B"}),
        ("Option B", {"B"}),
        ("Proposed final answer: B) 3.2 eV", {"B"}),
        ("The correct option is (C).", {"C"}),
        ("C is correct", {"C"}),
        ("**(D)**", {"D"}),
        (r"\boxed{\text{(A)}}", {"A"}),
        ("Final answer: A, C", {"A", "C"}),
        ("Final answer: (A) and (D)", {"A", "D"}),
        (r"\boxed{ABD}", {"A", "B", "D"}),
        ("Options B; D", {"B", "D"}),
        (r"\boxed{(A)(B)(D)}", {"A", "B", "D"}),
        ("I pick options A, B and D because they hold", {"A", "B", "D"}),
    ],
)
def test_letters_in_several_spellings(reply, letters):
    assert parse_letters(reply) == frozenset(letters)


def test_letters_outside_the_valid_range_or_plain_words_are_not_answers():
    assert parse_letters("E") is None
    assert parse_letters("A metal") is None
    assert parse_letters("Final answer: 42") is None
    assert letters_in("E", "ABCDE") == frozenset({"E"})


@pytest.mark.parametrize(
    ("span", "value"),
    [
        ("50.7 atm", 50.7),
        (r"1.5 \times 10^{-3} \mathrm{~mol}", 1.5e-3),
        ("3.52 × 10^-19 J", 3.52e-19),
        ("6.02e23", 6.02e23),
        ("\u22122", -2.0),  # unicode minus
        ("\u2212 1.642876", -1.642876),
        ("89,034.79", 89034.79),
        ("1,234,567", 1234567.0),
        (r"\$89{,}034.79", 89034.79),
        (r"q = 0", 0.0),
        (r"\Delta H \approx -92.2 \text{ kJ}", -92.2),
        (r"\frac{3}{4}", 0.75),
        (r"-\dfrac{1}{2}", -0.5),
        (r"10^{-5}", 1e-5),
        (r"40^{\circ}", 40.0),
        (r"45\%", 45.0),
        ("+65.49 kJ/mol", 65.49),
    ],
)
def test_parse_number_reads_numbers_with_units_and_notation(span, value):
    assert parse_number(span) == pytest.approx(value, rel=1e-12)


def test_parse_number_evaluates_closed_forms_instead_of_taking_the_leading_digit():
    assert parse_number(r"2\sqrt{3}") == pytest.approx(3.4641016151377544)
    assert parse_number(r"2^{10}") == pytest.approx(1024.0)


def test_parse_reply_number_needs_an_answer_span():
    assert parse_reply_number(r"so $\boxed{1.5 \times 10^{-3}}$ mol") == pytest.approx(1.5e-3)
    assert parse_reply_number("no number here at all, just words and more words and words") is None


REASONING = "Let me think. Option (A) fails; (C) as well since the answer is not obvious.\n\n"


@pytest.mark.parametrize(
    ("ending", "letters"),
    [
        ("The answer is **(B) 4 m/s**.", {"B"}),
        ("Therefore, the correct options are **A, B, and D**.", {"A", "B", "D"}),
        ("## Answer\nThe correct choice is **C**.", {"C"}),
        ("I'll go with B.", {"B"}),  # a short last line
        ("The answer is (A,B,D)", {"A", "B", "D"}),
        ("Final answer: [A, C]", {"A", "C"}),
        ("**C. Increases**", {"C"}),  # an emphasised option with its text
        ("Both A and C are correct.", {"A", "C"}),
        ("(C) is correct.", {"C"}),
        ("The correct answer is option **B**: 4 m/s.", {"B"}),
        ("The answer is 5 (option C)", {"C"}),
        ("So a and b are true for these variables; the answer is D.", {"D"}),
        ("<think>Maybe the answer is A.</think>\n\nAnswer: B", {"B"}),
        ("(A) The period doubles\n(B) The amplitude halves\n(C) The", None),  # truncated
    ],
)
def test_letters_after_reasoning_in_forms_models_use(ending, letters):
    expected = frozenset(letters) if letters else None
    assert parse_letters(REASONING + ending) == expected


@pytest.mark.parametrize(
    ("ending", "value"),
    [
        ("So v ≈ 4.47 m/s.\n\n**Answer:** 4.47 m/s", 4.47),
        ("The answer is: 18,900", 18900.0),
        ("x = 2.5 × 10^3 J", 2500.0),
        ("Answer: 1.2 × 10³ kg", 1200.0),
        ("**Final Answer**\n\\[\n\\boxed{12}\n\\]", 12.0),
        ("The final answer is $\\boxed{-\\dfrac{1}{2}}$. I hope it is correct.", -0.5),
        ("Thus E = 3.52e-19 J", 3.52e-19),
        ("\\boxed{4.47}\n\nNote: the answer is rounded to two decimals.", 4.47),
        ("Final answer: 115\\,440", 115440.0),
        ("Final answer: 2\u2009000\u2009000 m", 2e6),
    ],
)
def test_numbers_after_reasoning_in_forms_models_use(ending, value):
    assert parse_reply_number(REASONING + ending) == pytest.approx(value, rel=1e-12)


def test_a_reply_cut_off_mid_sentence_states_no_number():
    assert parse_reply_number(REASONING + "Substituting, v = 2.5 m/s and the energy") is None
    assert parse_reply_number(REASONING + "v = 2.5 m/s and then the") is None
    assert parse_reply_number(REASONING + "So v = 2.5 m/s.") == 2.5


def test_ranges_are_read_as_ranges_not_subtractions():
    assert parse_range("0.85\u20130.89") == (0.85, 0.89)
    assert parse_range("from 12 to 15 K") == (12.0, 15.0)
    assert parse_range("\u22121600 \u2013 \u22121500") == (-1600.0, -1500.0)
    assert parse_range("0.85-0.89") is None  # a hyphen is a minus sign
    assert parse_number("0.85\u20130.89") is None


def test_numbers_beyond_float_range_are_infinite_or_zero_not_errors():
    assert parse_number("1e400") == float("inf")
    assert parse_number("10^{400}") == float("inf")
    assert parse_number("3 \\times 10^{" + "9" * 5000 + "}") == float("inf")
    assert parse_number("10^{-400}") == 0.0
