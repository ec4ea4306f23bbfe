"""Option order: counterbalanced listings (``option_order: rotate``), the papers' fixed order
(``template``), and a sim whose answers do not depend on the order options are listed in."""

from __future__ import annotations

from collections import Counter

import pandas as pd
import pytest
from helpers.natural_profiles import RecordingClient, sim_profile

from deliberation.benchmarks.crossprofile.memory import verified_bank
from deliberation.benchmarks.crossprofile.tasks import derive_task, key_position, presented_options
from deliberation.benchmarks.crossprofile.variants import ALL_VARIANTS
from deliberation.benchmarks.hiddenbench.tasks import build_task
from deliberation.experiments.memory import Grid, crossprofile_tasks, run_memory_experiment
from deliberation.experiments.natural.runs import run_natural_experiment
from deliberation.inference import make_client
from deliberation.profiles.profile import load_profile


@pytest.fixture(scope="module")
def main_bank():
    return [t for t in verified_bank() if not t.pilot]


def test_every_option_is_listed_in_every_position_3_3_2_times_within_a_template(main_bank):
    for template in main_bank:
        listings = [presented_options(template, v, seed=0) for v in ALL_VARIANTS]
        assert all(sorted(listing) == sorted(template.options) for listing in listings)
        for option in template.options:
            positions = Counter(listing.index(option) for listing in listings)
            assert sorted(positions.values()) == [2, 3, 3], (template.id, option, positions)


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_the_key_sits_in_each_position_in_a_third_of_the_templates_of_every_cell(main_bank, seed):
    for variant in ALL_VARIANTS:
        positions = Counter(
            presented_options(template, variant, seed).index(template.correct)
            for template in main_bank
        )
        assert positions == {0: 20, 1: 20, 2: 20}, (variant.id, seed, positions)
        assert all(
            presented_options(t, variant, seed).index(t.correct) == key_position(t, variant, seed)
            for t in main_bank
        )


def test_template_order_is_the_stored_order_in_every_variant(main_bank):
    template = main_bank[0]
    for variant in ALL_VARIANTS:
        task = derive_task(template, variant, option_order="template")
        assert task.options == tuple(template.options)
    with pytest.raises(ValueError, match="option_order"):
        presented_options(template, ALL_VARIANTS[0], option_order="shuffled")  # type: ignore[arg-type]


def test_option_order_changes_only_the_listing(main_bank):
    """Facts, their order and holders are the same whichever order the options are listed in."""
    template, variant = main_bank[3], ALL_VARIANTS[5]
    rotated = derive_task(template, variant, option_order="rotate")
    fixed = derive_task(template, variant, option_order="template")
    assert rotated.facts == fixed.facts and rotated.correct == fixed.correct
    assert sorted(rotated.options) == sorted(fixed.options)


def test_hiddenbench_rotation_puts_the_key_at_number_plus_seed_and_template_keeps_the_file():
    record = {
        "id": 4,
        "name": "n",
        "description": "Pick one.",
        "shared_information": ["Everyone knows this."],
        "hidden_information": ["Only A1 knows this.", "Only A2 knows this."],
        "possible_answers": ["North", "East", "South"],
        "correct_answer": "South",
    }
    for seed in range(3):
        rotated = build_task(record, seed=seed)
        assert rotated.options.index("South") == (4 + seed) % 3
        assert rotated.facts == build_task(record, seed=seed, option_order="template").facts
    assert build_task(record, option_order="template").options == ("North", "East", "South")


def _frame(option_order: str, tmp_path) -> pd.DataFrame:
    profile = load_profile("sim")
    tasks = crossprofile_tasks("main", limit=2, option_order=option_order)
    client = make_client(profile, cache_file=tmp_path / f"{option_order}.sqlite", progress=False)
    policies = ("R1", "B4", "Random", "B3", "R1-rel", "balance", "all", "empty")
    result = run_memory_experiment(
        "crossprofile", tasks, Grid(policies), profile, client, progress=False
    )
    return result.frame.drop(columns=["key"])  # the cache key hashes the prompt text


# What the listing changes by construction: the prompt (so the cache key) and where the chosen
# option sits in it. Everything else must be the same if the sim has no position preference.
ORDER_DEPENDENT = ["answer_position"]


@pytest.fixture(scope="module")
def sim_frames(tmp_path_factory):
    folder = tmp_path_factory.mktemp("order")
    return _frame("rotate", folder), _frame("template", folder)


def test_the_sim_answers_a_rotated_task_as_the_unrotated_one(sim_frames):
    """The sim has no position preference: every label, summary and decision of a run is the
    same with rotated and with stored option order (only the prompts, cache keys and the
    listed position of the answer differ)."""
    rotated, fixed = sim_frames
    tasks = {t.id: t for t in crossprofile_tasks("main", limit=2)}
    assert any(t.options != tuple(sorted(t.options)) for t in tasks.values())  # orders differ
    pd.testing.assert_frame_equal(
        rotated.drop(columns=ORDER_DEPENDENT), fixed.drop(columns=ORDER_DEPENDENT)
    )
    # The position column follows the listing: rotated positions are the rotated index.
    answered = rotated[rotated["answer"] != ""]
    pairs = zip(answered["task"], answered["answer"], strict=True)
    expected = [tasks[t].options.index(a) + 1 for t, a in pairs]
    assert answered["answer_position"].tolist() == expected
    assert (rotated["answer_position"] != fixed["answer_position"]).any()


def test_the_sim_votes_and_speaks_the_same_whatever_the_option_order(tmp_path):
    profile = sim_profile(tmp_path, "order", natural_disclosure=0.5)
    results = {}
    for order in ("rotate", "template"):
        tasks = crossprofile_tasks("main", 1, option_order=order)[:3]
        client = RecordingClient(profile, tmp_path / f"natural-{order}.sqlite")
        result = run_natural_experiment(
            "crossprofile", tasks, profile, client, policies=("R1", "empty"), progress=False
        )
        # request keys name what was sent, and the listing is part of it: not compared
        results[order] = (
            result.rows.drop(columns=["key", *ORDER_DEPENDENT]),
            result.disclosure.drop(columns="keys"),
        )
    for rotated, fixed in zip(results["rotate"], results["template"], strict=True):
        pd.testing.assert_frame_equal(rotated, fixed)


def test_the_sim_answers_hiddenbench_the_same_whatever_the_option_order(tmp_path):
    from deliberation.benchmarks import memory_benchmark

    benchmark = memory_benchmark("hiddenbench")
    try:
        benchmark.tasks(0, templates=None, limit=1)
    except Exception as exc:  # no data on this machine
        pytest.skip(f"HiddenBench data not available: {exc}")
    profile = load_profile("sim")
    frames = []
    for order in ("rotate", "template"):
        tasks = benchmark.tasks(0, templates=None, limit=4, option_order=order)
        client = make_client(profile, cache_file=tmp_path / f"hb-{order}.sqlite", progress=False)
        grid = Grid(("R1", "B4", "R1-rel", "balance", "empty"), budgets=(0.6,), tags=("keep",))
        result = run_memory_experiment("hiddenbench", tasks, grid, profile, client, progress=False)
        frames.append(result.frame.drop(columns=["key", *ORDER_DEPENDENT]))
    pd.testing.assert_frame_equal(*frames)


def test_the_sim_papers_tables_are_the_same_whatever_the_option_order(sim_frames):
    """What the sim paper publishes from these rows does not move with the listing: accuracy
    (with its interval, rows and chance) and the pre-specified contrasts are identical (the
    distinct calls are not: a rotated listing splits what one stored order sent once);
    only the answer-position table differs, because the same answers sit elsewhere."""
    from deliberation.experiments.memory.analyses.accuracy import accuracy_table, differences
    from deliberation.stats.position_bias import position_bias_table

    rotated, fixed = sim_frames
    by = ["policy", "variant"]
    pd.testing.assert_frame_equal(
        accuracy_table(rotated, by, n_resamples=200), accuracy_table(fixed, by, n_resamples=200)
    )
    pairs = [("R1", "B4"), ("R1", "Random"), ("R1-rel", "R1")]
    pd.testing.assert_frame_equal(
        differences(rotated, pairs, n_resamples=200), differences(fixed, pairs, n_resamples=200)
    )
    shares = [
        position_bias_table(f, n_resamples=50, min_clusters=1).iloc[0] for f in (rotated, fixed)
    ]
    assert shares[0]["decisions"] == shares[1]["decisions"]
    assert shares[0]["position 1 %"] != shares[1]["position 1 %"]
