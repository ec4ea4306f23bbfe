"""The shipped bank (templates/crossprofile/): it passes the verifier (bank v3 design included),
the cue audit finds no role-blind reader far above chance, and it yields 480 + 80 tasks."""

from __future__ import annotations

import pytest

from deliberation.benchmarks.crossprofile.audit import audit, format_audit
from deliberation.benchmarks.crossprofile.loader import bank_dir, read_template, template_files
from deliberation.benchmarks.crossprofile.tasks import derive_tasks, write_tasks_jsonl
from deliberation.benchmarks.crossprofile.variants import AGENTS, ALL_VARIANTS
from deliberation.benchmarks.crossprofile.verifier import (
    correct_positions,
    format_report,
    length_by_role,
    load_bank,
    verify_paths,
)


@pytest.fixture(scope="module")
def report():
    return verify_paths()  # the whole bank, composition included


def test_shipped_bank_passes_the_verifier(report):
    assert report.composition_checked
    assert report.ok, format_report(report, details=False)
    assert len(report.templates) == 70


@pytest.fixture(scope="module")
def bank_tasks(report):
    if not report.ok:
        pytest.skip("the bank fails verification (see test_shipped_bank_passes_the_verifier)")
    return derive_tasks(load_bank())


def test_bank_yields_480_main_and_80_pilot_tasks_with_unique_ids(bank_tasks):
    assert sum(not t.pilot for t in bank_tasks) == 480
    assert sum(t.pilot for t in bank_tasks) == 80
    assert len({t.id for t in bank_tasks}) == 560


def test_every_shared_fact_has_four_holders_and_every_private_fact_one(bank_tasks):
    variants = {v.id: v for v in ALL_VARIANTS}
    for task in bank_tasks:
        for fact in task.facts:
            if variants[task.variant].ownership(fact.role) == "shared":
                assert fact.holders == AGENTS, (task.id, fact.id)
            else:
                assert len(fact.holders) == 1, (task.id, fact.id)


def test_bank_export_is_byte_identical_across_runs(bank_tasks, tmp_path):
    first = write_tasks_jsonl(bank_tasks, tmp_path / "a.jsonl").read_bytes()
    second = write_tasks_jsonl(derive_tasks(load_bank()), tmp_path / "b.jsonl").read_bytes()
    assert first == second


def test_correct_option_position_is_roughly_balanced(report):
    """The format asks for roughly a third of main templates at each position."""
    main = correct_positions(report)["main"]
    assert main.sum() == 60
    assert main.min() >= 14, correct_positions(report).to_string()


def test_roles_have_similar_mean_length(report):
    """Budgets are in tokens: a systematically longer role would bias every memory policy."""
    means = length_by_role(report).set_index("role")["tokens_mean"]
    assert means.max() - means.min() <= 2.0, means.to_string()


@pytest.fixture(scope="module")
def cue_audit():
    """Every main template that parses, whether or not it verifies: a cue is a cue."""
    templates = [read_template(p)[0] for p in template_files([bank_dir()])]
    return audit([t for t in templates if t is not None])


def test_no_structural_reader_beats_chance_on_the_shipped_bank(cue_audit):
    """Counts, lengths, numbers, overlap with the description, positions, first and last
    fact, and a classifier on all the counts: each at most 10 points above 1/3."""
    assert cue_audit.n_templates == 60
    table = cue_audit.table
    structural = table[~table["heuristic"].str.contains("word 1-2-grams")]
    assert structural["passes"].all(), format_audit(cue_audit)


def test_no_text_classifier_beats_chance_on_the_shipped_bank(cue_audit):
    assert cue_audit.ok, format_audit(cue_audit)


def test_first_and_last_fact_name_the_correct_option_in_a_third_of_main_tasks(bank_tasks):
    main = [t for t in bank_tasks if not t.pilot and t.variant == "SP-DS-IP"]
    assert sum(t.facts[0].option == t.correct for t in main) == 20
    assert sum(t.facts[-1].option == t.correct for t in main) == 20
