"""The cost screen that decides, from a LaTeX answer alone, whether math-verify may compare it."""

from __future__ import annotations

import pytest

from deliberation.benchmarks import problems
from deliberation.benchmarks.problems.expression_cost import LIMITS, cost, too_costly
from deliberation.io.paths import shared_data_dir


@pytest.mark.parametrize(
    ("latex", "reason"),
    [
        ("9^{9^{9}}", "digits"),
        ("2^{2^{40}}", "digits"),
        ("10^{10^{10}}", "digits"),
        ("3^{3^{3^{3}}}", "digits"),
        ("e^{e^{e^{10}}}", "digits"),
        ("1000000!", "digits"),
        ("(10^{6})!", "digits"),
        ("\\Gamma(10^{7})", "digits"),
        ("\\binom{10^{7}}{5}", "digits"),
        ("(x+1)^{1000}", "sum of symbols to the power"),
        ("\\left(a - b\\right)^{500}", "sum of symbols to the power"),
        ("(2+\\sqrt{3})^{5000}", "a sum to the power"),
        ("\\sum_{k=1}^{100000} \\frac{1}{k}", "terms"),
        ("\\prod_{n=2}^{10^{6}} (1 - \\frac{1}{n^2})", "terms"),
        ("\\frac{1}{" * 15 + "2" + "}" * 15, "nesting"),
        ("\\frac\\frac\\frac" * 300, "nesting"),
    ],
)
def test_pathological_answers_are_refused_with_what_makes_them_costly(latex, reason):
    found = too_costly(latex)
    assert found is not None and reason in found


@pytest.mark.parametrize(
    "latex",
    [
        "[0, \\frac{1}{2}]",
        "r \\in [0, \\tfrac{1}{2}]",
        "(0, \\frac{1}{2})",
        "\\left(-\\frac{13}{96}, \\frac{13}{40}\\right)",
        "2^{2023}",
        "2^{2^{7}}",
        "2^{2^{2^{2^{2}}}}",  # 2^65536: about 20,000 digits, cheap
        "(-1)^{2023}",
        "(2+\\sqrt{3})^{2023} + (2-\\sqrt{3})^{2023}",
        "(x+1)^{2}",
        "x^{9900}\\left(\\frac{1+x^{100}}{2}\\right)^{2}",
        "x^{x^{x}}",
        "\\binom{4048}{2024}",
        "2011!",
        "\\sum_{k=1}^{2023} \\frac{1}{k}",
        "\\sum_{k=1}^{n} k^{2}",
        "\\frac{2\\left(\\sin\\frac{\\pi}{3\\cdot 2^{99}}\\right)}{\\sin \\frac{\\pi}{2^{99}}}",
        "1.5 \\times 10^{-19}",
        "\\{1, 2, 3\\}",
        "x = \\sqrt [3]{\\frac {4}{3}}",
    ],
)
def test_realistic_answers_are_admitted(latex):
    assert too_costly(latex) is None


def test_a_reply_as_costly_as_its_gold_is_admitted():
    gold = "\\frac{1}{2014!^{2014}}"  # Omni-MATH rule record 1386: 13 million digits
    reply = "\\frac{1}{(2014!)^{2014}}"
    assert too_costly(reply) is not None
    assert too_costly(reply, cost(gold)) is None
    assert too_costly("9^{9^{9}}", cost(gold)) is not None  # still far past the gold's cost


def test_the_estimate_is_an_upper_bound_in_digits():
    assert cost("10^{300}").digits == pytest.approx(300)
    assert cost("2^{2^{20}}").digits == pytest.approx(2**20 * 0.30103, rel=1e-4)
    assert cost("\\frac{1}{10^{50}}").digits == pytest.approx(50)
    assert cost("x^{10^{9}}").digits < 10  # a power of a symbol builds no number
    assert cost("(x+y)^{100}").symbolic_sum_power == pytest.approx(100)
    assert cost("\\sum_{k=3}^{1002} k").terms == pytest.approx(999)


def test_every_omnimath_gold_but_the_one_with_13_million_digits_is_within_the_limits():
    root = shared_data_dir()
    if root is None:
        pytest.skip("../shared/data (public benchmark copies) is absent")
    items = problems.load("omnimath", root / "omnimath")
    refused = {it.record: too_costly(it.gold) for it in items if too_costly(it.gold)}
    assert list(refused) == [1386], refused
    assert max(cost(it.gold).depth for it in items) <= LIMITS.depth // 2
