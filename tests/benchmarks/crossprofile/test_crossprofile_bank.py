"""The shipped bank (templates/crossprofile/): it passes the verifier (bank v5 design included),
the cue audit finds no role-blind reader above both its bars, and it yields 480 + 80 tasks."""

from __future__ import annotations

import pytest

from deliberation.benchmarks.crossprofile.audit import DRAWS, audit, format_audit, readers
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

PARSED = [t for t in (read_template(p)[0] for p in template_files([bank_dir()])) if t is not None]


@pytest.fixture(scope="module")
def report():
    return verify_paths()  # the whole bank, composition included


def test_shipped_bank_passes_the_verifier(report):
    assert report.composition_checked
    assert report.ok, format_report(report, details=False)
    assert len(report.templates) == 70


@pytest.fixture(scope="module")
def bank_tasks(report):
    return derive_tasks(load_bank())  # load_bank verifies every template (not the composition)


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


QUICK = {r.name for r in readers() if r.family != "classifier"}


@pytest.fixture(scope="module")
def cue_audit():
    """Every main template that parses, whether or not it verifies (a cue is a cue): the
    fixed readers and the lookups here; the classifiers, retrained on every random-key draw,
    in the experiments lane."""
    return audit(PARSED, battery=[r for r in readers() if r.name in QUICK])


def test_no_structural_reader_beats_chance_on_the_shipped_bank(cue_audit):
    """Counts, lengths, numbers, overlap with the description, topicality, positions, first
    and last fact, and the lookups of joint structure: none above both its bars."""
    assert cue_audit.n_templates == 60
    assert cue_audit.ok, format_audit(cue_audit)


@pytest.mark.experiments
def test_no_classifier_beats_chance_on_the_shipped_bank():
    report = audit(PARSED, draws=DRAWS, battery=[r for r in readers() if r.name not in QUICK])
    assert report.ok, format_audit(report)


def test_first_and_last_fact_name_the_correct_option_in_a_third_of_main_tasks(bank_tasks):
    main = [t for t in bank_tasks if not t.pilot and t.variant == "SP-DS-IP"]
    assert sum(t.facts[0].option == t.correct for t in main) == 20
    assert sum(t.facts[-1].option == t.correct for t in main) == 20
