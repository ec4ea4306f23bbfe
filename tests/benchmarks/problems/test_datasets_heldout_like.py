"""The held-out-like corpus (``fixtures/dhd_replies/heldout_like.jsonl``, built by its
``build.py`` from real items): model-like replies, each with the score its author meant."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deliberation.benchmarks import problems
from deliberation.io.paths import shared_data_dir

CORPUS = Path(__file__).parents[2] / "fixtures" / "dhd_replies" / "heldout_like.jsonl"


@pytest.fixture(scope="module")
def graded() -> list[tuple[dict, problems.Grade]]:
    root = shared_data_dir()
    if root is None:
        pytest.skip("../shared/data (public benchmark copies) is absent; grader tests need it")
    items = {it.id: it for name in problems.BENCHMARKS for it in problems.load(name, root / name)}
    rows = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines()]
    return [(row, problems.grade(items[row["item"]], row["reply"])) for row in rows]


@pytest.mark.experiments  # grades 1,530 replies: the slow lane
def test_no_grading_failure_on_any_non_pathological_reply(graded):
    failed = [(row["item"], row["form"], g.failure) for row, g in graded if g.failed]
    assert all(row["pathological"] for row, g in graded if g.failed), failed
    assert any(not row["pathological"] for row, _ in graded)


@pytest.mark.experiments  # grades 1,530 replies: the slow lane
def test_every_clear_cut_reply_is_graded_as_its_author_meant(graded):
    clear = [(row, g) for row, g in graded if not row["pathological"]]
    misses = [
        (row["item"], row["form"], row["expected"], g.score, row["reply"][-120:])
        for row, g in clear
        if g.score != pytest.approx(row["expected"])
    ]
    assert len(clear) > 1000
    assert misses == []


@pytest.mark.experiments  # grades 1,530 replies: the slow lane
def test_the_corpus_covers_every_benchmark_and_the_issue_25_forms(graded):
    benchmarks = {row["item"].split(":")[0] for row, _ in graded}
    assert benchmarks == {"jeebench", "scibench", "mascqa", "lab-bench", "omnimath"}
    forms = {row["form"] for row, _ in graded}
    for needed in ("spaces", "ampersand", "lower", "all_except", "verdict", "python_power",
                   "latex_thin_inside", "option_with_text", "interval"):  # fmt: skip
        assert any(needed in form for form in forms), needed
    assert {row["expected"] for row, _ in graded if not row["pathological"]} >= {0.0, 1.0}


def test_the_fixture_is_what_its_builder_makes():
    """The corpus is reproducible from the data and the seeded builder (nothing edited by hand)."""
    import importlib.util

    root = shared_data_dir()
    if root is None:
        pytest.skip("../shared/data (public benchmark copies) is absent")
    spec = importlib.util.spec_from_file_location("build_corpus", CORPUS.with_name("build.py"))
    builder = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(builder)
    rows = [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines()]
    assert builder.build(root) == rows
