"""DHD graders on replies written the way chat models write them, on real items of each benchmark.

One test per extraction class and per number form of issue 11, each on real items from
``../shared/data``; every reply carries realistic reasoning (distracting numbers, option letters
discussed along the way) before the answer. Also: inputs that used to crash or hang a grader.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import sys

import pytest

from deliberation.benchmarks import problems
from deliberation.benchmarks.problems import Grade, labbench, symbolic
from deliberation.io.paths import shared_data_dir


@pytest.fixture(scope="module")
def items() -> dict[str, dict[str, problems.Item]]:
    root = shared_data_dir()
    if root is None:
        pytest.skip("../shared/data (public benchmark copies) is absent; grader tests need it")
    return {
        name: {it.id: it for it in problems.load(name, root / name)} for name in problems.BENCHMARKS
    }


def item(items, benchmark: str, item_id: str) -> problems.Item:
    return items[benchmark][item_id]


def omni(items, record: int) -> problems.Item:
    return items["omnimath"][f"omnimath:rule:{record}"]


def score(found: problems.Item, reply: str) -> float | None:
    return problems.grade(found, reply).score


# Reasoning the way a model writes it: numbers, letters and "answer" words before the answer.
REASONING = (
    "Let me work through this carefully.\n\n"
    "First, recall the relevant relation. Substituting the given values, the intermediate "
    "quantity is 2.5 and the ratio is 3/4, so option (A) cannot hold on its own. I considered "
    "(C) as well, since the answer is not obvious from the first step.\n\n"
    "**Step 2.** Checking units: 12 J / 4 s = 3 W, which is consistent.\n\n"
)


# ------------------------------------------------------------------ answer markers


MCQ = ("jeebench", "jeebench:JEE Adv 2016 Paper 1:1")  # gold B
MULTI = ("jeebench", "jeebench:JEE Adv 2016 Paper 1:6")  # gold ABD
MASCQA_MCQ = ("mascqa", "mascqa:G-XEC-2014-17")  # MCQS-NUM, gold D
MASCQA_MULTI = ("mascqa", "mascqa:G-XEC-2021-8")  # gold "B; D"


@pytest.mark.parametrize(
    "ending",
    [
        "Answer: {x}",
        "**Answer:** {x}",
        "**Answer: {x}**",
        "### Final Answer\n\n{x}",
        "**Final Answer**\n\nThe correct option is **({x})**.",
        "Final answer:\n\n({x})",
        "So, the correct answer is ({x}).",
        "[ANSWER]{x}[/ANSWER]",
        "Therefore the answer is $\\boxed{{{x}}}$.",
        "Correct option: {x}",
    ],
)
def test_answer_markers_after_reasoning_on_single_choice_items(items, ending):
    for benchmark, item_id, letter in (*MCQ, "B"), (*MASCQA_MCQ, "D"):
        found = item(items, benchmark, item_id)
        assert found.gold == letter
        assert score(found, REASONING + ending.format(x=letter)) == 1.0, (item_id, ending)
        wrong = "C" if letter != "C" else "A"
        assert score(found, REASONING + ending.format(x=wrong)) == 0.0, (item_id, ending)


def test_labbench_harness_answer_tag_and_markers(items):
    found = next(iter(it for it in items["labbench"].values() if it.subject == "SeqQA"))
    wrong = next(
        c for c in found.letters if c not in (found.gold, found.meta_value("refusal_letter"))
    )
    for ending in (
        "[ANSWER]{x}[/ANSWER]",
        "Answer: {x}",
        "### Final Answer\n{x}",
        "<answer>{x}</answer>",
    ):
        assert labbench.outcome(found, REASONING + ending.format(x=found.gold)) == "correct"
        assert labbench.outcome(found, REASONING + ending.format(x=wrong)) == "incorrect"
    assert problems.grade(found, f"[ANSWER]{found.gold}[/ANSWER]") == Grade(1.0, found.gold)


def test_lower_case_letters(items):
    found = item(items, *MCQ)
    for reply in ("(b)", "Answer: (b)", "The correct option is (b).", "Final answer: b", "b) 4 m"):
        assert score(found, REASONING + reply) == 1.0, reply
    assert score(found, REASONING + "Answer: (c)") == 0.0
    multi = item(items, *MULTI)
    assert score(multi, REASONING + "Final answer: (a), (b) and (d)") == 1.0


@pytest.mark.parametrize(
    "ending",
    [
        "Final answer: A, B, and D",
        "The correct options are A, B, and D.",
        "Answer: (A), (B) and (D) since each of them follows from the energy balance.",
        "$\\boxed{A}, \\boxed{B}, \\boxed{D}$",
        "\\boxed{A}, \\boxed{B} and \\boxed{D}",
        "**Answer:** ABD",
        "Final answer: (A)(B)(D)",
        "Hence options A, B and D are correct.",
    ],
)
def test_letter_lists(items, ending):
    for benchmark, item_id in (MULTI, MASCQA_MULTI):
        found = item(items, benchmark, item_id)
        reply = REASONING + ending
        expected = 1.0 if benchmark == "jeebench" else 0.0  # MaScQA's gold is {B, D}
        assert score(found, reply) == expected, (item_id, ending)
    mascqa = item(items, *MASCQA_MULTI)
    assert score(mascqa, REASONING + "Final answer: B, and D") == 1.0
    assert score(mascqa, REASONING + "\\boxed{B}, \\boxed{D}") == 1.0


def test_jeebench_partial_credit_from_a_list_with_an_explanation(items):
    found = item(items, *MULTI)
    assert score(found, REASONING + "Answer: (A) and (B) since both hold.") == 0.5
    assert score(found, REASONING + "Answer: (A), (B) and (C) since all hold.") == 0.0


@pytest.mark.parametrize(
    ("reply", "letter"),
    [
        ("\\boxed{A}\n\nWait, I made a sign error in step 2. Redoing it, the answer is C.", "C"),
        ("Final answer: A\n\nHmm, let me re-check. Actually the correct answer is (C).", "C"),
        ("**Answer:** A\n\nWait — the field reverses, so the answer should be C.", "C"),
        ("Final answer: A is wrong, so B", "B"),
        ("Answer: (A) looks tempting but fails the limit case; therefore (C)", "C"),
        ("\\boxed{C}\n\nNote that the answer is rounded to two significant figures.", "C"),
        ("\\boxed{C}\n\nIf the answer is A, the energy would not be conserved.", "C"),
    ],
)
def test_a_later_correction_beats_an_earlier_box_or_answer_line(items, reply, letter):
    found = item(items, "jeebench", "jeebench:JEE Adv 2016 Paper 1:20")  # gold C
    assert found.gold == "C"
    assert score(found, REASONING + reply) == (1.0 if letter == "C" else 0.0)
    assert problems.grade(found, REASONING + reply).answer is not None


def test_a_truncated_reply_that_only_restates_the_options_gets_no_credit(items):
    found = item(items, *MCQ)
    restated = (
        "Let's look at each option in turn.\n\n(A) The first statement concerns the period.\n"
        "(B) The second one concerns the amplitude, which depends on\n(C) The third"
    )
    assert problems.grade(found, restated) == Grade(0.0, None)
    assert score(found, "(A) 2 m/s (B) 4 m/s (C) 8 m/s") == 0.0
    lab = next(iter(items["labbench"].values()))
    listing = problems.question_text(lab).split("\n\n")[-1]  # "A. ...\nB. ..." as shown to it
    assert labbench.outcome(lab, listing[:400]) == "unreadable"


def test_a_reply_with_no_answer_says_so_in_the_grade(items):
    found = item(items, *MCQ)
    assert problems.grade(found, "") == Grade(0.0, None)
    assert problems.grade(found, REASONING) == Grade(0.0, None)


# ------------------------------------------------------------------ number forms


NUMERIC_CASES = [
    # (benchmark, item id or omni record, gold as the benchmark writes it, reply number forms)
    ("jeebench", "jeebench:JEE Adv 2022 Paper 1:6", "18900", ["18 900", "18\u2009900", "18\u202f900", "18\\,900", "18{,}900", "18,900"]),
    ("mascqa", "mascqa:G-META-21-23", "840000", ["840 000", "840\u2009000", "840\\,000", "8.4 × 10⁵"]),
    ("scibench", "scibench:fund:1.01", "2", ["2 000 000 m", "2\u2009000\u2009000 m", "2 × 10⁶ m"]),
    ("omnimath", 0, "115440", ["115 440", "115\\,440", "115\u2009440", "115{,}440", "1.1544 × 10⁵", "1.1544 \\times 10^{5}"]),
]  # fmt: skip


@pytest.mark.parametrize(("benchmark", "key", "gold", "forms"), NUMERIC_CASES)
def test_digit_groups_and_superscripts_on_every_path(items, benchmark, key, gold, forms):
    found = omni(items, key) if benchmark == "omnimath" else item(items, benchmark, key)
    assert found.gold == gold
    for form in forms:
        for reply in (f"{REASONING}Final answer: {form}", f"{REASONING}$\\boxed{{{form}}}$"):
            assert score(found, reply) == 1.0, reply
    assert score(found, f"{REASONING}Final answer: 918") == 0.0


def test_omnimath_does_not_accept_a_near_miss_or_a_partial_list(items):
    assert score(omni(items, 0), REASONING + "\\boxed{115441}") == 0.0
    listed = omni(items, 1094)
    assert listed.gold == "6,-\\frac{10}{3}"
    assert score(listed, REASONING + "\\boxed{6, -\\frac{10}{3}}") == 1.0
    assert score(listed, REASONING + "\\boxed{6}") == 0.0


def test_omnimath_gold_in_scientific_notation_equals_the_plain_number(items):
    found = next(it for it in items["omnimath"].values() if it.gold == "4.8 \\times 10^{8}")
    for form in ("480000000", "480 000 000", "4.8 × 10⁸", "4.8e8", "4.8 \\times 10^{8}"):
        assert score(found, f"{REASONING}Final answer: {form}") == 1.0, form
    assert score(found, f"{REASONING}Final answer: 4.8 × 10⁹") == 0.0


def test_unicode_superscript_powers_of_ten_in_scibench(items):
    found = item(items, "scibench", "scibench:chemmc:1-18")  # 3.52 x 10^-19 J
    for reply in ("3.52 × 10⁻¹⁹ J", "\\boxed{3.52 \\times 10^{-19}\\ \\text{J}}", "3.52×10⁻¹⁹"):
        assert score(found, f"{REASONING}Final answer: {reply}") == 1.0, reply
    assert score(found, f"{REASONING}Final answer: 3.52 × 10⁻¹⁸ J") == 0.0


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("0.86\u20130.88", 1.0),  # en dash, inside 0.85 to 0.89
        ("0.85 \u2013 0.89", 1.0),
        ("about 0.86 to 0.88", 1.0),
        ("0.84\u20130.88", 0.0),  # starts below the gold range
        ("0.86\u20130.95", 0.0),
        ("0.87", 1.0),
    ],
)
def test_mascqa_en_dash_ranges(items, reply, expected):
    found = item(items, "mascqa", "mascqa:G-XEC-2013-15")
    assert found.gold == "0.85 to 0.89"
    assert score(found, f"{REASONING}Final answer: {reply}") == expected


def test_a_range_is_not_read_as_a_subtraction_where_the_gold_is_one_number(items):
    found = item(items, "scibench", "scibench:atkins:e1.17(a)(a)")  # 50.7
    assert score(found, f"{REASONING}Final answer: 50\u201351 atm") == 0.0  # not 50 - 51 = -1
    assert score(found, f"{REASONING}Final answer: 50.7 atm") == 1.0


# ------------------------------------------------------------------ never crash, never hang


@pytest.mark.parametrize(
    "reply",
    [
        "\\boxed{1e400}",
        "\\boxed{10^{400}}",
        "\\boxed{10^{-400}}",
        "\\boxed{3 \\times 10^{" + "9" * 5000 + "}}",
        "\\boxed{1e" + "7" * 5000 + "}",
        "\\boxed{" + "9" * 5000 + "}",
        "Final answer: 2.5 × 10⁹⁹⁹⁹⁹",
    ],
)
@pytest.mark.parametrize(
    "key",
    [
        ("jeebench", "jeebench:JEE Adv 2018 Paper 1:31"),
        ("scibench", "scibench:chemmc:1-18"),
        ("mascqa", "mascqa:G-XEC-2013-15"),
    ],
)
def test_unrepresentable_numbers_are_not_equal_and_do_not_crash(items, key, reply):
    assert problems.grade(item(items, *key), REASONING + reply).score == 0.0


def test_a_long_unclosed_box_is_graded(items):
    reply = "\\boxed{" * 20_000 + "4.47"  # 140 KB, never closed
    assert problems.grade(
        item(items, "jeebench", "jeebench:JEE Adv 2018 Paper 1:31"), reply
    ) == Grade(0.0, None)


@pytest.mark.parametrize("tower", ["9^{9^{9}}", "2^{2^{40}}"])
def test_a_runaway_symbolic_check_is_a_grading_failure_with_its_reason(items, tower):
    found = omni(items, 887)
    result = problems.grade(found, f"{REASONING}$\\boxed{{{tower}}}$")
    assert result.failed and result.score is None
    assert "math-verify" in result.failure and "limit" in result.failure
    assert problems.grade(found, "\\boxed{0.04}") == Grade(1.0, "0.04")


@pytest.mark.parametrize(
    ("benchmark", "reply"),
    [
        ("omnimath", "So the final answer is $\\boxed{9^{9^{9}}}$."),
        ("omnimath", "Final answer: (x+1)^{1000}"),
        ("omnimath", "\\boxed{\\sum_{k=1}^{100000} \\frac{1}{k}}"),
        ("jeebench", "Final answer: 9^{9^{9}}"),
        ("scibench", "Final answer: \\frac{1}{(10^{7})!} J"),
    ],
)
def test_a_pathological_answer_is_refused_before_any_timed_call(
    items, monkeypatch, benchmark, reply
):
    """The same failure on every machine: the expression decides, the worker is never asked."""
    keys = {"omnimath": None, "jeebench": INTEGER, "scibench": ("scibench", "scibench:chemmc:1-18")}
    found = omni(items, 887) if benchmark == "omnimath" else item(items, *keys[benchmark])

    def no_call(*args):
        raise AssertionError("math-verify was called")

    monkeypatch.setattr(symbolic, "_call", no_call)
    result = problems.grade(found, REASONING + reply)
    assert result.failed and "cost limit" in result.failure, result


INTEGER = ("jeebench", "jeebench:JEE Adv 2018 Paper 1:31")
INTERVAL = 1690  # Omni-MATH rule record with an interval gold


@pytest.mark.parametrize(
    "reply",
    [
        "\\boxed{\\left(-\\frac{13}{96}, \\frac{13}{40}\\right)}",
        "\\boxed{x \\in \\left(-\\tfrac{13}{96}, \\tfrac{13}{40}\\right)}",
        "\\boxed{[0, \\frac{1}{2}]}",
        "\\boxed{r \\in [0, \\tfrac{1}{2}]}",
        "\\boxed{(0, \\frac{1}{2})}",
    ],
)
def test_interval_answers_grade_the_same_on_a_machine_twenty_times_slower(
    items, monkeypatch, reply
):
    """Issue 25: these took 0.51 s of CPU against a 0.5 s limit here; the limit is now a safety
    net so far above realistic costs that a worker whose CPU clock runs 20 times faster (a machine
    20 times slower) gives the same grades, from a fresh worker (no warm cache)."""
    found = omni(items, INTERVAL)
    assert found.gold == "(-\\frac{13}{96}, \\frac{13}{40})"
    expected = 1.0 if "13" in reply else 0.0
    assert problems.grade(found, REASONING + reply).score == expected
    real = symbolic._Worker.cpu_seconds
    monkeypatch.setattr(symbolic._Worker, "cpu_seconds", lambda self: 20 * (real(self) or 0.0))
    os.kill(symbolic.worker_pid(), signal.SIGKILL)  # the next call starts a fresh worker
    fresh = dataclasses.replace(found, gold="(-\\frac{13}{96},\\frac{13}{40})")  # not cached
    assert problems.grade(fresh, REASONING + reply) == problems.grade(found, REASONING + reply)
    assert problems.grade(fresh, REASONING + reply).score == expected


def test_the_symbolic_worker_is_reused_between_comparisons(items):
    found = omni(items, 887)
    assert score(found, "\\boxed{\\dfrac{1}{25}}") == 1.0  # not the gold's text: math-verify
    first = symbolic.worker_pid()
    assert first is not None and first != os.getpid()
    assert score(found, "\\boxed{0.04}") == 1.0 and score(found, "\\boxed{0.4}") == 0.0
    assert symbolic.worker_pid() == first


def test_a_worker_that_died_is_replaced(items):
    found = omni(items, 887)
    assert score(found, "\\boxed{0.04}") == 1.0
    os.kill(symbolic.worker_pid(), signal.SIGKILL)
    assert score(found, "\\boxed{0.04}") == 1.0  # a fresh worker, nothing lost
    assert score(found, "\\boxed{0.4}") == 0.0


def test_a_script_without_a_main_guard_can_grade(tmp_path):
    """The worker must not re-run the caller's script (forkserver would import __main__)."""
    script = tmp_path / "grade_once.py"
    marker = tmp_path / "runs.txt"
    script.write_text(
        "from deliberation.benchmarks.problems import symbolic\n"
        f"open({str(marker)!r}, 'a').write('run\\n')\n"
        "print(symbolic.equivalent('\\\\frac{1}{25}', '0.04'))\n",
        encoding="utf-8",
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    run = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "True"
    assert marker.read_text(encoding="utf-8") == "run\n"  # the script ran once, not in the worker


def test_labbench_an_option_written_out_beats_reading_its_text_as_letters(items):
    real = next(iter(items["labbench"].values()))
    options = ("GAC", "TTA", "CAG", labbench.REFUSAL)  # a sequence made of option letters
    found = dataclasses.replace(
        real, options=options, gold="A", meta=(("refusal_letter", "D"), ("task", "probe"))
    )
    assert labbench.read_choice(found, "Answer: GAC") == ("correct", "GAC")
    assert labbench.read_choice(found, "Answer: CAG") == ("incorrect", "CAG")
    assert labbench.read_choice(found, "Answer: (C)") == ("incorrect", "(C)")
