"""The reply forms of issue 25, each read as a careful human applying the benchmark's rule would,
as a class (neighbouring spellings too), on real items from ``../shared/data``."""

from __future__ import annotations

import pytest

from deliberation.benchmarks import problems
from deliberation.benchmarks.problems import labbench
from deliberation.io.paths import shared_data_dir

REASONING = (
    "Let me work through this carefully.\n\n"
    "Substituting the given values, the intermediate quantity is 2.5 and the ratio is 3/4, so "
    "option (A) cannot hold on its own. I considered (C) as well, since the answer is not "
    "obvious from the first step. Checking units: 12 J / 4 s = 3 W, which is consistent.\n\n"
)


@pytest.fixture(scope="module")
def items() -> dict[str, dict[str, problems.Item]]:
    root = shared_data_dir()
    if root is None:
        pytest.skip("../shared/data (public benchmark copies) is absent; grader tests need it")
    return {
        name: {it.id: it for it in problems.load(name, root / name)} for name in problems.BENCHMARKS
    }


def score(found: problems.Item, reply: str) -> float | None:
    return problems.grade(found, REASONING + reply).score


ABD = ("jeebench", "jeebench:JEE Adv 2016 Paper 1:6")
AD = ("jeebench", "jeebench:JEE Adv 2016 Paper 1:9")
B = ("jeebench", "jeebench:JEE Adv 2016 Paper 1:1")
MASCQA_BD = ("mascqa", "mascqa:G-XEC-2021-8")


def get(items, key) -> problems.Item:
    return items[key[0]][key[1]]


# ------------------------------------------------------------------ letter sets


@pytest.mark.parametrize(
    "written",
    [
        "A B D",
        "A & B & D",
        "a, b, d",
        "a b d",
        "(a) (b) (d)",
        "a, b and d",
        "A + B + D",
        "\\boxed{A \\& B \\& D}",
        "\\boxed{a, b, d}",
    ],
)
def test_letter_sets_with_spaces_ampersands_or_lower_case(items, written):
    jee, mascqa = get(items, ABD), get(items, MASCQA_BD)
    assert jee.gold == "ABD" and mascqa.gold == "B; D"
    for ending in ("Final answer: {x}", "**Answer:** {x}", "The correct options are {x}."):
        reply = written if written.startswith("\\boxed") else ending.format(x=written)
        assert score(jee, reply) == 1.0, reply
        assert score(mascqa, reply) == 0.0, reply  # {A, B, D} is not MaScQA's {B, D}
    assert score(mascqa, "Final answer: b & d") == 1.0
    assert score(mascqa, "Final answer: B D") == 1.0


def test_a_letter_set_missing_or_adding_a_letter_gets_jeebenchs_partial_or_no_credit(items):
    jee = get(items, ABD)
    assert score(jee, "Final answer: a b") == 0.5
    assert score(jee, "Final answer: A & D") == 0.5
    assert score(jee, "Final answer: a, b, c, d") == 0.0
    assert score(get(items, AD), "Answer: A & D") == 1.0


# ------------------------------------------------------------------ remarks and exclusions


@pytest.mark.parametrize(
    "ending",
    [
        "Answer: ABD (all except C)",
        "Final answer: A, B, D (all except C)",
        "Final answer: A, B, D (C fails the limiting case)",
        "**Answer:** A B D (not C)",
        "\\boxed{ABD} (all options except (C))",
        "Answer: all except C",
        "Final answer: all options but (C)",
        "Answer: ABD, i.e. all except C",
        "The correct options are everything other than C.",
        "Answer: ABD \u2014 all except C",
        "Answer: ABD; C is wrong",
        "Answer: A, B and D (C is false)",
        "All options except C are correct.",
        "Hence every statement except (C) is true.",
        "Proposed final answer: a, b, d since each follows from the energy balance.",
    ],
)
def test_a_remark_naming_an_excluded_option_does_not_replace_the_answer(items, ending):
    assert score(get(items, ABD), ending) == 1.0


def test_remarks_on_single_choice_items(items):
    single = get(items, B)
    assert single.gold == "B"
    assert score(single, "Final answer: B (A is wrong)") == 1.0
    assert score(single, "Answer: (B) (not A, which ignores friction)") == 1.0
    assert score(single, "Answer: (C) (not B)") == 0.0
    assert score(single, "The answer is 5 (option B)") == 1.0  # a remark that is the answer


# ------------------------------------------------------------------ verdicts


@pytest.mark.parametrize(
    ("ending", "expected"),
    [
        ("So option (B) is correct.", 1.0),
        ("Therefore, option (B) is correct because the momentum is conserved.\n\nThis also "
         "matches the limiting case.", 1.0),
        ("Options (A) and (C) are incorrect, so option (B) is correct, as the field reverses.", 1.0),
        ("Hence statement (B) is true.", 1.0),
        ("Option (B) is therefore correct.", 1.0),
        ("Thus only (b) is correct, given the boundary conditions.", 1.0),
        ("So, (B) is correct, since the other options violate energy conservation.", 1.0),
        ("This means option (B) is correct.", 1.0),
        ("**Conclusion:** Option (B) is correct.", 1.0),
        ("Proposed final answer: b since the field reverses.", 1.0),
        ("Answer: (A) looks tempting but fails the limit case; therefore (B)", 1.0),
        ("So option (C) is correct.", 0.0),
        ("So option (A) is incorrect.", 0.0),
        ("Hence (C) is correct.\n\nWait, the sign flips in step 2. Final answer: (B)", 1.0),
    ],
)  # fmt: skip
def test_a_verdict_after_the_reasoning_is_the_answer(items, ending, expected):
    assert score(get(items, B), ending) == expected


def test_a_rejected_option_is_not_read_as_chosen(items):
    single = get(items, B)
    assert problems.grade(single, REASONING + "So B is incorrect.").score == 0.0
    assert problems.grade(single, REASONING + "So B is incorrect.").answer is None
    multi = get(items, ABD)
    assert score(multi, "Therefore, statements (A), (B) and (D) are true.") == 1.0
    assert score(multi, "Hence, the correct statements are (A), (B), (D).") == 1.0


# ------------------------------------------------------------------ powers


@pytest.mark.parametrize(
    "written",
    [
        "3.52 * 10**-19 J",
        "3.52*10**(-19)",
        "3.52 * 10 ** -19 J",
        "3.52 × 10^(-19) J",
        "3.52 x 10^-19 J",
        "3.52 \\times 10^{-19} \\mathrm{J}",
        "3.52e-19 J",
        "3.52X10^-19 J",
        "3.52·10^-19 J",
        "3.52E\u221219 J",
    ],
)
def test_python_and_plain_text_powers_of_ten(items, written):
    found = items["scibench"]["scibench:chemmc:1-18"]  # 3.52 x 10^-19 J
    assert score(found, f"Final answer: {written}") == 1.0
    assert score(found, f"Final answer: {written.replace('19', '18')}") == 0.0


def test_python_powers_in_omnimath(items):
    found = items["omnimath"]["omnimath:rule:536"]
    assert found.gold == "2^{2^{7}}"
    assert score(found, "Final answer: 2**128") == 1.0
    assert score(found, "Final answer: 2^128") == 1.0
    assert score(found, "Final answer: 2**127") == 0.0


# ------------------------------------------------------------------ spacing inside a number


@pytest.mark.parametrize(
    "written",
    [
        "29\\,92",
        "2\\,992",
        "2\\;992",
        "2\\:992",
        "2\\ 992",
        "2~992",
        "2{,}992",
        "2\u2009992",
        "29\u202f92",
        "$2\\,992$",
    ],
)
def test_a_space_inside_a_number_is_not_a_sum(items, written):
    found = items["jeebench"]["jeebench:JEE Adv 2018 Paper 1:26"]
    assert found.gold == "2992"
    for reply in (f"Final answer: {written}", f"\\boxed{{{written}}}"):
        assert score(found, reply) == 1.0, reply
    assert score(found, "Final answer: 29\\,93") == 0.0


def test_spacing_inside_decimals_and_a_decimal_comma(items):
    calculus = items["scibench"]["scibench:calculus:16.7.47"]  # 3920.70763168
    assert score(calculus, "Final answer: 3\\,920.707\\,631\\,68") == 1.0
    atkins = items["scibench"]["scibench:atkins:e2.18(a)"]  # -4564.7 kJ/mol
    assert score(atkins, "Final answer: \\boxed{-4564{,}7} kJ/mol") == 1.0
    assert score(atkins, "Final answer: \\boxed{-4\\,564{,}7} kJ/mol") == 1.0
    omni = items["omnimath"]["omnimath:rule:6"]
    assert omni.gold == "3750"
    for written in ("37\\,50", "3\\,750", "3{,}750", "3\u2009750"):
        assert score(omni, f"\\boxed{{{written}}}") == 1.0, written
    assert score(omni, "\\boxed{37\\,51}") == 0.0


# ------------------------------------------------------------------ LAB-Bench beyond D


def beyond_d(items) -> list[problems.Item]:
    found = [it for it in items["labbench"].values() if it.gold in "EFG"]
    assert {it.gold for it in found} == {"E", "F", "G"}
    return [next(it for it in found if it.gold == letter) for letter in "EFG"]


@pytest.mark.parametrize(
    "ending",
    [
        "Answer: {x}",
        "[ANSWER]{x}[/ANSWER]",
        "The answer is ({x}).",
        "**Answer:** {l}",
        "The correct option is **{x}** ({t}).",
        "Final answer: {x}. {t}",
        "So option ({x}) is correct, because the digest leaves that fragment intact.",
        "\\boxed{{{x}}}",
    ],
)
def test_labbench_letters_beyond_d(items, ending):
    for found in beyond_d(items):
        gold = found.gold
        text = found.options[found.letters.index(gold)][:80]
        reply = REASONING + ending.format(x=gold, l=gold.lower(), t=text)
        assert labbench.outcome(found, reply) == "correct", (found.id, reply)
        other = next(c for c in "ABCD" if c != found.meta_value("refusal_letter"))
        wrong = REASONING + ending.format(x=other, l=other.lower(), t="the other fragment")
        assert labbench.outcome(found, wrong) == "incorrect", (found.id, wrong)


# ------------------------------------------------------------------ neighbouring forms


@pytest.mark.parametrize(
    ("ending", "expected"),
    [
        ("Answer: abd", 1.0),  # a lower-case run of distinct letters in order
        ("(A), (B) and (D) are the correct answers.", 1.0),
        ("Selected options: a, b, d", 1.0),
        ("Answer: bad", 0.0),  # a word, not letters
        (
            "Suppose (A), (B) and (D) are the correct answers; then the energy is not conserved.",
            0.0,
        ),
    ],
)
def test_neighbouring_letter_forms(items, ending, expected):
    assert score(get(items, ABD), ending) == expected


def test_neighbouring_single_choice_claims(items):
    single = get(items, B)
    assert score(single, "Thus, B is the answer.") == 1.0
    assert score(single, "(B) is the correct answer.") == 1.0
    assert score(single, "Chosen option: (b)") == 1.0
    assert score(single, "If option (B) is correct, the period doubles.") == 0.0


def test_neighbouring_number_forms(items):
    found = items["jeebench"]["jeebench:JEE Adv 2018 Paper 1:26"]  # 2992
    for written in ("\\num{2992}", "\\SI{2992}{J}", "2.992 ⋅ 10^3", "2.992 \\cdot 10^{3}"):
        assert score(found, f"Final answer: {written}") == 1.0, written


# ------------------------------------------------------------------ one-by-one analyses

ONE_BY_ONE = [
    "**(A)** Since r is proportional to n^2/Z, the relative change is 2/n, independent of Z, so "
    "this is correct.\n\n**(B)** The relative change in radii varies as 1/n: true.\n\n**(C)** The "
    "energy change goes as 2/n^3, not 1/n^3, so this statement is false.\n\n**(D)** The angular "
    "momentum changes by a relative 1/n. This is correct.",
    "Option A: Correct\nOption B: Correct\nOption C: Incorrect\nOption D: Correct",
    "(A) holds, so (A) is correct.\n(B) also holds: (B) is correct.\n(C) fails, hence (C) is "
    "incorrect.\n(D) holds. Hence (D) is correct.",
]


@pytest.mark.parametrize("analysis", ONE_BY_ONE)
def test_a_multi_select_analysis_option_by_option_is_read_whole(items, analysis):
    multi = get(items, ABD)
    assert score(multi, analysis) == 1.0
    assert score(multi, analysis + "\n\nFinal answer: A, B") == 0.5  # a stated answer wins
    flipped = (
        analysis.replace("(C) is incorrect", "(C) is correct")
        .replace("Option C: Incorrect", "Option C: Correct")
        .replace("this statement is false", "this statement is true")
    )
    assert flipped != analysis
    assert score(multi, flipped) == 0.0  # all four chosen, and C is wrong
    assert score(get(items, B), analysis) == 0.0  # single choice: the last verdict, not collected


def test_options_restated_without_verdicts_are_not_an_answer(items):
    multi = get(items, ABD)
    restated = "(A) The radius changes.\n(B) The energy changes.\n(C) The period\n"
    assert problems.grade(multi, REASONING + restated).score == 0.0
