"""DHD benchmark loaders and graders on the real public files in ../shared/data.

Counts are read from each folder's SOURCE.md (not typed in here); every item's gold, written the
way a model would, must grade 1.0; each grader is tried on real items for the hard cases the
issue names; malformed copies must fail naming the file and record.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from deliberation.benchmarks import problems
from deliberation.benchmarks.problems import (
    AnswerType,
    DatasetFormatError,
    DatasetNotFoundError,
    Grade,
    labbench,
    load,
    omnimath,
    render_answer,
    scibench,
    symbolic,
)
from deliberation.io import paths
from deliberation.io.paths import shared_data_dir

# ------------------------------------------------------------------ fixtures


def grade(item: problems.Item, reply: str) -> float | None:
    """The score of a reply (the full :class:`Grade` is tested where it matters)."""
    result = problems.grade(item, reply)
    assert isinstance(result, Grade)
    return result.score


@pytest.fixture(scope="module")
def shared() -> Path:
    root = shared_data_dir()
    if root is None:
        pytest.skip("../shared/data (public benchmark copies) is absent; loader tests need it")
    return root


@pytest.fixture(scope="module")
def items(shared) -> dict[str, list[problems.Item]]:
    return {name: load(name, shared / name) for name in problems.BENCHMARKS}


def by_id(items: list[problems.Item], item_id: str) -> problems.Item:
    matches = [it for it in items if it.id == item_id]
    assert len(matches) == 1, f"{item_id}: {len(matches)} matches"
    return matches[0]


def source_md_counts(folder: Path) -> dict[str, int]:
    """local file -> item count, read from the SOURCE.md files table."""
    counts = {}
    for line in (folder / "SOURCE.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 5 and cells[0].startswith("`") and re.search(r"[0-9a-f]{64}", cells[2]):
            number = re.match(r"([\d,]+)", cells[4])
            if number:
                counts[cells[0].strip("`")] = int(number.group(1).replace(",", ""))
    return counts


# ------------------------------------------------------------------ counts


@pytest.mark.parametrize("name", ["jeebench", "scibench", "labbench", "omnimath"])
def test_item_count_per_file_equals_source_md(shared, items, name):
    expected = source_md_counts(shared / name)
    loaded = Counter(it.source_file for it in items[name])
    assert loaded, name
    for file, count in loaded.items():
        assert expected[file] == count, file


def test_mascqa_reads_650_records_and_keeps_649_unique_questions(shared, items):
    import openpyxl

    expected = source_md_counts(shared / "mascqa")
    assert len(problems.mascqa.read_records(shared / "mascqa")) == expected["mascqa-eval.json"]
    sheet = openpyxl.load_workbook(
        shared / "mascqa" / "all_questions.xlsx", read_only=True
    ).worksheets[0]
    answer_rows = sum(
        1 for row in sheet.iter_rows(min_row=2, values_only=True) if row[0] is not None
    )
    assert answer_rows == expected["all_questions.xlsx"] == 650
    assert len(items["mascqa"]) == 649
    assert len({it.id for it in items["mascqa"]}) == 649


def test_dhd_benchmark_sizes(items):
    """The DHD reference used 515 / 580 / 741 / 649 problems; the rule subset has 2,821."""
    sizes = {name: len(found) for name, found in items.items()}
    assert sizes == {
        "jeebench": 515,
        "scibench": 580,
        "mascqa": 649,
        "labbench": 741,
        "omnimath": 2821,
    }


@pytest.mark.parametrize("name", list(problems.BENCHMARKS))
def test_ids_are_unique_and_records_point_back_to_their_file(items, name):
    found = items[name]
    assert len({it.id for it in found}) == len(found)
    assert all(it.benchmark == name and it.gold and it.question for it in found)
    for file in {it.source_file for it in found}:
        records = [it.record for it in found if it.source_file == file]
        if name == "mascqa":  # one repeated question is dropped, so one record number is skipped
            assert records == sorted(set(records)) and len(records) == 649 and records[-1] == 649
        else:
            assert records == list(range(len(records)))


def test_cited_dhd_ids_resolve(items):
    for item_id in [
        "scibench:quan:17.9",
        "scibench:fund:Question 23.23",
        "scibench:stat:5.9-1 (a)",
    ]:
        by_id(items["scibench"], item_id)


# ------------------------------------------------------------------ gold answers grade 1.0


@pytest.mark.parametrize("name", ["jeebench", "scibench", "mascqa", "labbench"])
def test_every_gold_rendered_as_a_model_would_grades_one(items, name):
    misses = [it.id for it in items[name] if grade(it, render_answer(it)) != 1.0]
    assert misses == []


def test_every_omnimath_gold_rendered_as_a_model_would_grades_one(items):
    """All 2,821 rule items; and math-verify itself confirms each gold (about 30 s on one core)."""
    misses = [it.id for it in items["omnimath"] if grade(it, render_answer(it)) != 1.0]
    assert misses == []
    unconfirmed = [it.id for it in items["omnimath"] if not symbolic.equivalent(it.gold, it.gold)]
    assert unconfirmed == []


def test_a_neighbouring_items_gold_is_not_accepted(items):
    """Guards against a grader that accepts anything: item i vs the gold of item i+1."""
    for name, found in items.items():
        sample = found[:: max(1, len(found) // 60)]
        for item, other in zip(sample, sample[1:], strict=False):
            if other.gold != item.gold and item.answer_type is not AnswerType.MCQ_MULTIPLE:
                if name == "labbench" or item.meta_value("marks_to_all"):
                    continue  # letters are per item; marks-to-all accepts any answer
                assert grade(item, render_answer(other)) == 0.0, (item.id, other.gold)


# ------------------------------------------------------------------ JEEBench


def test_jeebench_multiple_answers_get_partial_credit_only_for_strict_subsets(items):
    item = by_id(items["jeebench"], "jeebench:JEE Adv 2016 Paper 1:6")
    assert (item.gold, item.answer_type) == ("ABD", AnswerType.MCQ_MULTIPLE)
    assert grade(item, "Proposed final answer: (D), (A), (B)") == 1.0
    assert grade(item, r"\boxed{AB}") == 0.5
    assert grade(item, "Final answer: (B)") == 0.25
    assert grade(item, "Final answer: A, B, C") == 0.0  # C is wrong
    assert grade(item, "Final answer: A, B, C, D") == 0.0
    assert grade(item, "I cannot tell") == 0.0


def test_jeebench_single_mcq_needs_exactly_the_gold_letter(items):
    item = by_id(items["jeebench"], "jeebench:JEE Adv 2016 Paper 1:1")
    assert item.gold == "B"
    assert grade(item, "Option B") == 1.0
    assert grade(item, "Final answer: B, C") == 0.0
    assert grade(item, "(C)") == 0.0


def test_jeebench_numeric_within_0_01(items):
    item = by_id(items["jeebench"], "jeebench:JEE Adv 2018 Paper 1:31")
    assert (item.gold, item.answer_type) == ("4.47", AnswerType.NUMERIC)
    assert grade(item, r"\boxed{4.48}") == 1.0
    assert grade(item, r"\boxed{4.46}") == 1.0
    assert grade(item, r"\boxed{4.4702 \text{ m}}") == 1.0
    assert grade(item, r"\boxed{4.4802}") == 0.0
    assert grade(item, r"\boxed{4.49}") == 0.0


def test_jeebench_integer(items):
    item = by_id(items["jeebench"], "jeebench:JEE Adv 2016 Paper 1:14")
    assert (item.gold, item.answer_type) == ("9", AnswerType.INTEGER)
    assert grade(item, "The answer is 9.") == 1.0
    assert grade(item, r"\boxed{9.0}") == 1.0
    assert grade(item, r"\boxed{8}") == 0.0


# ------------------------------------------------------------------ SciBench


def test_scibench_scaled_unit_gold_is_number_times_power_of_ten(items):
    item = by_id(items["scibench"], "scibench:chemmc:1-18")
    assert (item.gold, scibench.unit_exponent(item.unit)) == ("3.52", -19)
    assert "10^" not in item.question.split("The unit of the answer is")[-1]
    assert grade(item, r"\boxed{3.52 \times 10^{-19}} J") == 1.0
    assert grade(item, r"\boxed{3.4 \times 10^{-19}}") == 1.0  # 3.4% off
    assert grade(item, r"\boxed{3.3e-19}") == 0.0  # 6.25% off
    assert grade(item, r"\boxed{3.52}") == 0.0  # the model was told the unit is J


def test_scibench_positive_power_in_a_plain_unit(items):
    item = by_id(items["scibench"], "scibench:fund:1.01")
    assert (item.gold, item.unit) == ("2", "$10^6$ m")
    assert item.question.endswith("The unit of the answer is m.")
    assert grade(item, "Final answer: 2,000,000 m") == 1.0
    assert grade(item, r"\boxed{2}") == 0.0


def test_scibench_five_percent_relative_to_the_larger_value_as_the_official_isclose(items):
    """math.isclose(a, 50.7, rel_tol=0.05): |a - 50.7| <= 0.05 * max(a, 50.7)."""
    item = by_id(items["scibench"], "scibench:atkins:e1.17(a)(a)")
    assert item.gold == "50.7"
    assert grade(item, r"\boxed{53.36}") == 1.0  # 5.2% above the gold but 4.99% of 53.36
    assert grade(item, r"\boxed{53.38}") == 0.0
    assert grade(item, r"\boxed{48.17}") == 1.0  # 4.99% below
    assert grade(item, r"\boxed{48.16}") == 0.0


def test_docs_list_the_scibench_golds_the_official_script_cannot_read(shared):
    """The official equiv() does float(answer_number): find the golds where that raises (the
    list is in docs/benchmarks.md, SciBench)."""
    unreadable = []
    for source in scibench.SOURCES:
        for record in json.loads((shared / "scibench" / f"{source}.json").read_text("utf-8")):
            try:
                float(record["answer_number"].strip())
            except ValueError:
                unreadable.append((source, record["problemid"].strip(), record["answer_number"]))
    assert len(unreadable) == 4 and {source for source, _, _ in unreadable} == {"diff"}
    docs = (paths.repo_root() / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    section = docs.split("## SciBench", 1)[1].split("\n## ", 1)[0]
    for _, problem_id, gold in unreadable:
        assert f"`{problem_id}`" in section and gold in section


def test_scibench_unicode_minus_in_gold_and_reply(items):
    item = by_id(items["scibench"], "scibench:diff:page144-21")
    assert item.gold == "\u22122"
    assert grade(item, r"\boxed{-2}") == 1.0
    assert grade(item, "\\boxed{\u22122}") == 1.0
    assert grade(item, r"\boxed{2}") == 0.0


def test_scibench_thousands_commas(items):
    item = by_id(items["scibench"], "scibench:diff:page 61-10")
    assert item.gold == "89,034.79"
    assert grade(item, r"\boxed{89034.79}") == 1.0
    assert grade(item, r"\boxed{\$89,034.79}") == 1.0
    assert grade(item, r"\boxed{89.03479}") == 0.0


def test_scibench_zero_gold_needs_zero(items):
    zero = [it for it in items["scibench"] if it.gold == "0"]
    assert zero
    assert grade(zero[0], r"\boxed{0}") == 1.0
    assert grade(zero[0], r"\boxed{0.01}") == 0.0


def test_scibench_repeated_problem_ids_are_made_unique(items):
    ids = [it.id for it in items["scibench"] if it.id.startswith("scibench:quan:2.13")]
    assert sorted(ids) == ["scibench:quan:2.13#25", "scibench:quan:2.13#8"]


# ------------------------------------------------------------------ MaScQA


@pytest.mark.parametrize(
    ("qid", "gold", "inside", "outside"),
    [
        ("G-XEC-2013-15", "0.85 to 0.89", ["0.85", "0.87", "0.89"], ["0.84", "0.9"]),
        ("G-META-14-33", "951 TO 953", ["951", "952.5"], ["950", "954"]),
        ("G-XEC-2016-11", "15.35 : 15.45", ["15.35", "15.4"], ["15.3", "15.5"]),
        ("G-META-15-39", "-1600 TO -1500", ["-1550", "\u22121500"], ["1550", "-1400"]),
        ("G-META-14-17", "350 T0 350", ["350", "350.0"], ["351", "349"]),
        ("G-META-20-22", "48O TO 494", ["480", "494"], ["479", "48"]),
        ("G-META-21-42", "0.90 TO 0.94 OR -0.94 TO -0.90", ["0.92", "-0.92"], ["0.95", "0"]),
        ("G-META-21-23", "840000", ["840,000", "840000"], ["420000", "840001"]),
    ],
)
def test_mascqa_numeric_ranges_in_every_spelling(items, qid, gold, inside, outside):
    item = by_id(items["mascqa"], f"mascqa:{qid}")
    assert (item.gold, item.answer_type) == (gold, AnswerType.NUMERIC_RANGE)
    for value in inside:
        assert grade(item, f"Proposed final answer: {value}") == 1.0, value
    for value in outside:
        assert grade(item, f"Proposed final answer: {value}") == 0.0, value


def test_mascqa_multiple_select_is_an_order_insensitive_exact_set(items):
    item = by_id(items["mascqa"], "mascqa:G-XEC-2021-8")
    assert (item.gold, item.answer_type) == ("B; D", AnswerType.MCQ_MULTIPLE)
    assert grade(item, "Final answer: (D), (B)") == 1.0
    assert grade(item, "Final answer: B") == 0.0
    assert grade(item, "Final answer: B, C, D") == 0.0


def test_mascqa_match_with_alternative_keys(items):
    item = by_id(items["mascqa"], "mascqa:G-META-18-36")
    assert (item.gold, item.meta_value("qtype")) == ("C OR D", "MATCH")
    assert grade(item, "(C)") == 1.0
    assert grade(item, "(D)") == 1.0
    assert grade(item, "(A)") == 0.0


def test_mascqa_marks_to_all_accepts_any_stated_answer(items):
    numeric = by_id(items["mascqa"], "mascqa:G-XEC-2013-21")
    letters = by_id(items["mascqa"], "mascqa:G-META-20-7")
    assert numeric.meta_value("marks_to_all") and letters.meta_value("marks_to_all")
    assert grade(numeric, r"\boxed{57.3}") == 1.0
    assert (
        grade(numeric, "I am not able to work this out from the information in the question") == 0.0
    )
    assert grade(letters, "Answer: (A)") == 1.0


def test_mascqa_numeric_option_question_is_graded_by_letter(items):
    item = by_id(items["mascqa"], "mascqa:G-XEC-2014-17")
    assert (item.gold, item.meta_value("qtype")) == ("D", "MCQS-NUM")
    assert grade(item, "Answer: D") == 1.0
    assert grade(item, "Answer: C") == 0.0


# ------------------------------------------------------------------ LAB-Bench


def test_labbench_options_are_ideal_distractors_and_refusal(shared, items):
    path = shared / "labbench" / "SeqQA" / "ORF-seq-AAid-v1-public.jsonl"
    record = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    item = by_id(items["labbench"], f"lab-bench:SeqQA:{record['id']}")
    assert sorted(item.options) == sorted(
        [record["ideal"], *record["distractors"], labbench.REFUSAL]
    )
    assert item.options[ord(item.gold) - ord("A")] == record["ideal"]
    assert item.options[ord(item.meta_value("refusal_letter")) - ord("A")] == labbench.REFUSAL
    assert grade(item, f"Proposed final answer: {record['ideal']}") == 1.0  # option text


def test_labbench_option_order_varies_between_items(items):
    gold_letters = Counter(it.gold for it in items["labbench"])
    refusal_letters = Counter(it.meta_value("refusal_letter") for it in items["labbench"])
    assert len(gold_letters) >= 4 and len(refusal_letters) >= 4
    assert max(gold_letters.values()) < 0.4 * len(items["labbench"])


def test_labbench_option_order_does_not_depend_on_python_hash_seed(shared, items):
    script = (
        "import sys; from deliberation.benchmarks.problems import load; "
        "print('|'.join(''.join(it.options) for it in load('labbench', sys.argv[1], 'CloningScenarios')))"
    )
    outputs = set()
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        run = subprocess.run(
            [sys.executable, "-c", script, str(shared / "labbench")],
            capture_output=True, text=True, env=env, check=True,
        )  # fmt: skip
        outputs.add(run.stdout.strip())
    here = "|".join(
        "".join(it.options) for it in items["labbench"] if it.subject == "CloningScenarios"
    )
    assert outputs == {here}


def test_labbench_duplicate_distractors_are_dropped(items):
    fixed = [it for it in items["labbench"] if it.meta_value("dropped_distractors")]
    assert len(fixed) == 6
    for item in fixed:
        assert len(set(item.options)) == len(item.options)
        assert grade(item, render_answer(item)) == 1.0


def test_labbench_counts_precision_and_coverage_as_its_harness(items):
    """Harness: sure = (answer != refusal letter); an unreadable reply is answered and wrong."""
    chosen = [it for it in items["labbench"] if it.subject == "ProtocolQA"][:6]
    wrong = next(
        c
        for c in chosen[2].letters
        if c not in (chosen[2].gold, chosen[2].meta_value("refusal_letter"))
    )
    replies = [
        f"Proposed final answer: {chosen[0].gold}",  # correct
        f"[ANSWER]{chosen[1].meta_value('refusal_letter')}[/ANSWER]",  # refusal option
        f"Proposed final answer: {wrong}",  # wrong
        "There is not enough information here, so I would rather not pick any of them at all.",
        f"\\boxed{{{chosen[4].gold}}}",  # correct
        f"Final answer: {labbench.REFUSAL}",  # the refusal option by its text
    ]
    assert [labbench.outcome(it, r) for it, r in zip(chosen, replies, strict=True)] == [
        "correct", "refused", "incorrect", "unreadable", "correct", "refused",
    ]  # fmt: skip
    scores = labbench.summarize(chosen, replies)
    assert (scores.n, scores.correct, scores.answered, scores.refused, scores.unreadable) == (
        6, 2, 4, 2, 1,
    )  # fmt: skip
    assert scores.accuracy == pytest.approx(2 / 6)
    assert scores.precision == pytest.approx(2 / 4)  # the unreadable reply counts as answered
    assert scores.coverage == pytest.approx(4 / 6)


def test_labbench_protocol_is_context_and_question_text_letters_options(items):
    item = next(it for it in items["labbench"] if it.subject == "ProtocolQA")
    assert item.context
    text = problems.question_text(item)
    assert text.startswith(item.context) and item.question in text
    assert f"{item.gold}. {item.options[ord(item.gold) - ord('A')]}" in text


# ------------------------------------------------------------------ Omni-MATH


@pytest.mark.parametrize(
    ("record", "equal", "different"),
    [
        (887, "0.04", "0.4"),
        (859, r"-2 + 2\sqrt{2}", r"2 - 2\sqrt{2}"),
        (550, r"\frac{17}{2} + \frac{7\sqrt{5}}{2}", r"\frac{17 - 7\sqrt{5}}{2}"),
        (1469, "11/1048576", r"\frac{11}{2^{19}}"),  # gold repaired from "\frac{11}{2^{20}"
    ],
)
def test_omnimath_latex_equal_in_value_but_different_in_form(items, record, equal, different):
    item = items["omnimath"][record]
    assert item.record == record
    assert grade(item, f"The final answer is $\\boxed{{{equal}}}$.") == 1.0
    assert grade(item, f"The final answer is $\\boxed{{{different}}}$.") == 0.0


def test_omnimath_unbalanced_gold_is_repaired_and_recorded(items):
    item = items["omnimath"][1469]
    assert item.gold == r"\frac{11}{2^{20}}"
    assert item.meta_value("answer_as_written") == r"\frac{11}{2^{20}"


def test_omnimath_grading_works_off_the_main_thread(items):
    sample = items["omnimath"][:40]
    expected = [grade(it, render_answer(it)) for it in sample]
    with ThreadPoolExecutor(max_workers=2) as pool:
        threaded = list(pool.map(lambda it: grade(it, render_answer(it)), sample))
    assert threading.current_thread() is threading.main_thread()
    assert threaded == expected == [1.0] * len(sample)


@pytest.fixture()
def omni_with_full_file(shared, tmp_path) -> Path:
    """A root with the real rule file plus a two-record 'full' file: one rule problem, one not."""
    root = tmp_path / "omnimath"
    root.mkdir()
    shutil.copy(shared / "omnimath" / "omni_math_rule.jsonl", root)
    first_rule = json.loads(
        (root / "omni_math_rule.jsonl").read_text(encoding="utf-8").splitlines()[0]
    )
    extra = {
        "problem": "Describe all functions f with f(x+y)=f(x)+f(y) and f continuous.",
        "answer": "f(x)=cx",
    }
    lines = [json.dumps(first_rule), json.dumps(extra)]
    (root / "Omni-MATH.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def test_omnimath_full_file_marks_problems_outside_the_rule_subset_for_a_judge(omni_with_full_file):
    full = load("omnimath", omni_with_full_file, subset="full")
    assert [it.answer_type for it in full] == [AnswerType.MATH_EXPRESSION, AnswerType.MATH_JUDGE]
    assert [it.id for it in full] == ["omnimath:full:0", "omnimath:full:1"]
    judged = full[1]
    assert grade(judged, r"\boxed{f(x)=cx}") == 1.0  # math-verify confirms: no judge needed
    assert grade(judged, "I could not finish this one in the time I had, sorry about that.") == 0.0
    with pytest.raises(omnimath.JudgeRequired, match="omnimath:full:1"):
        grade(judged, r"\boxed{\text{all additive continuous maps, i.e. linear ones}}")
    with pytest.raises(DatasetNotFoundError, match="omni2"):
        load("omnimath", omni_with_full_file, subset="omni2")


# ------------------------------------------------------------------ roots and errors


def test_load_defaults_to_the_external_data_dir(shared, monkeypatch):
    monkeypatch.setenv("DELIBERATION_DATA_DIR", str(shared))
    assert len(load("jeebench")) == 515
    assert len(load("lab-bench", subset="CloningScenarios")) == 33


def test_missing_data_folder_says_to_run_make_data(tmp_path):
    with pytest.raises(DatasetNotFoundError, match="make data"):
        load("scibench", tmp_path / "nowhere")
    (tmp_path / "scibench").mkdir()
    with pytest.raises(DatasetNotFoundError, match="make data"):
        load("scibench", tmp_path / "scibench")


def test_scibench_also_loads_from_the_upstream_folder_layout(shared, tmp_path):
    nested = tmp_path / "scibench" / "dataset" / "original"
    nested.mkdir(parents=True)
    for name in scibench.SOURCES:
        shutil.copy(shared / "scibench" / f"{name}.json", nested)
    found = load("scibench", tmp_path / "scibench")
    assert len(found) == 580 and found[0].source_file == "dataset/original/atkins.json"


def test_unknown_benchmark_or_subset_is_named(shared):
    with pytest.raises(KeyError, match="gsm8k"):
        load("gsm8k", shared)
    with pytest.raises(ValueError, match="physics"):
        load("scibench", shared / "scibench", subset="physics")


def test_subsets_filter_by_subject_source_topic_and_subset(items, shared):
    assert {it.subject for it in load("jeebench", shared / "jeebench", subset="phy")} == {"phy"}
    assert len(load("scibench", shared / "scibench", subset=["quan", "stat"])) == 33 + 72
    assert len(load("mascqa", shared / "mascqa", subset="Magnetism")) == 15
    assert len(load("labbench", shared / "labbench", subset="ProtocolQA")) == 108


def _copy(shared: Path, name: str, tmp_path: Path) -> Path:
    target = tmp_path / name
    shutil.copytree(shared / name, target)
    for path in target.rglob("*"):
        path.chmod(0o644 if path.is_file() else 0o755)
    target.chmod(0o755)
    return target


def test_malformed_jeebench_record_names_file_and_record(shared, tmp_path):
    root = _copy(shared, "jeebench", tmp_path)
    records = json.loads((root / "dataset.json").read_text(encoding="utf-8"))
    del records[7]["gold"]
    (root / "dataset.json").write_text(json.dumps(records), encoding="utf-8")
    with pytest.raises(
        DatasetFormatError, match=r"dataset\.json, record 7: missing field\(s\) \['gold'\]"
    ):
        load("jeebench", root)


def test_malformed_scibench_answer_names_file_and_record(shared, tmp_path):
    root = _copy(shared, "scibench", tmp_path)
    records = json.loads((root / "quan.json").read_text(encoding="utf-8"))
    records[3]["answer_number"] = "about six"
    (root / "quan.json").write_text(json.dumps(records), encoding="utf-8")
    with pytest.raises(DatasetFormatError, match=r"quan\.json, record 3: field 'answer_number'"):
        load("scibench", root)


def test_malformed_mascqa_answer_cell_names_workbook_and_row(shared, tmp_path):
    import openpyxl

    root = _copy(shared, "mascqa", tmp_path)
    workbook = openpyxl.load_workbook(root / "all_questions.xlsx")
    sheet = workbook.worksheets[0]
    row = next(r for r in range(2, sheet.max_row + 1) if sheet.cell(row=r, column=2).value == "NUM")
    sheet.cell(row=row, column=3).value = "somewhere near 5"
    workbook.save(root / "all_questions.xlsx")
    with pytest.raises(
        DatasetFormatError, match=rf"all_questions\.xlsx, row {row}: .*not a number range"
    ):
        load("mascqa", root)


def test_malformed_labbench_line_names_file_and_record(shared, tmp_path):
    root = _copy(shared, "labbench", tmp_path)
    path = root / "SeqQA" / "RE-seq-numfrags-v1-public.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[11])
    record["distractors"] = "one, two"
    lines[11] = json.dumps(record)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(
        DatasetFormatError,
        match=r"RE-seq-numfrags-v1-public\.jsonl, record 11: field 'distractors'",
    ):
        load("labbench", root)


def test_malformed_omnimath_line_names_file_and_record(shared, tmp_path):
    root = tmp_path / "omnimath"
    root.mkdir()
    lines = (
        (shared / "omnimath" / "omni_math_rule.jsonl").read_text(encoding="utf-8").splitlines()[:30]
    )
    lines[20] = lines[20][:-5]
    (root / "omni_math_rule.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(
        DatasetFormatError, match=r"omni_math_rule\.jsonl, record 20: invalid JSON on line 21"
    ):
        load("omnimath", root)


def _blank_question(root: Path, name: str, value: object) -> str:
    """Set one real record's question to ``value``; returns the 'file, record N' it must name."""
    if name == "jeebench":
        path = root / "dataset.json"
        records = json.loads(path.read_text(encoding="utf-8"))
        records[7]["question"] = value
        path.write_text(json.dumps(records), encoding="utf-8")
        return r"dataset\.json, record 7: field 'question'"
    if name == "scibench":
        path = root / "quan.json"
        records = json.loads(path.read_text(encoding="utf-8"))
        records[3]["problem_text"] = value
        path.write_text(json.dumps(records), encoding="utf-8")
        return r"quan\.json, record 3: field 'problem_text'"
    if name == "mascqa":
        path = root / "mascqa-eval.json"
        data = json.loads(path.read_text(encoding="utf-8"))
        first_topic = next(iter(data))
        data[first_topic]["questions"][2] = value
        path.write_text(json.dumps(data), encoding="utf-8")
        return (
            rf"mascqa-eval\.json, record 2: field '{re.escape(first_topic)}\.questions \(G-[^)]+\)'"
        )
    if name == "labbench":
        path = root / "SeqQA" / "RE-seq-numfrags-v1-public.jsonl"
        lines = path.read_text(encoding="utf-8").splitlines()
        record = json.loads(lines[4])
        record["question"] = value
        lines[4] = json.dumps(record)
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return r"RE-seq-numfrags-v1-public\.jsonl, record 4: field 'question'"
    path = root / "omni_math_rule.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[9])
    record["problem"] = value
    lines[9] = json.dumps(record)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return r"omni_math_rule\.jsonl, record 9: field 'problem'"


@pytest.mark.parametrize("value", [None, "", "   \n"])
@pytest.mark.parametrize("name", list(problems.BENCHMARKS))
def test_an_empty_or_null_question_is_an_error_naming_file_and_record(
    shared, tmp_path, name, value
):
    root = _copy(shared, name, tmp_path)
    where = _blank_question(root, name, value)
    with pytest.raises(DatasetFormatError, match=where + r": (expected text, got null|empty)"):
        load(name, root)
