"""HiddenBench loader: atomic facts on the real tasks 4-8, holders, seeded order."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from deliberation.benchmarks.hiddenbench.tasks import (
    build_task,
    load_hiddenbench,
    split_atomic,
    split_sentences,
)
from deliberation.benchmarks.problems.items import DatasetFormatError
from deliberation.discussion import memory_candidates, scripted_discussion
from deliberation.io import paths


@pytest.fixture(scope="module")
def data_file():
    shared = paths.shared_data_dir()
    path = None if shared is None else shared / "hiddenbench" / "benchmark_all_clean.json"
    if path is None or not path.is_file():
        pytest.skip("../shared/data/hiddenbench is absent (run `make data`)")
    return path


@pytest.fixture(scope="module")
def tasks(data_file):
    return {t.number: t for t in load_hiddenbench(data_file, seed=0)}


@pytest.fixture(scope="module")
def records(data_file):
    return {r["id"]: r for r in json.loads(data_file.read_text())}


def test_counts_match_source_md(tasks):
    assert len(tasks) == 65
    assert Counter(len(t.agents) for t in tasks.values()) == {4: 58, 3: 7}
    assert Counter(len(t.options) for t in tasks.values()) == {3: 59, 4: 6}


def test_task4_prose_split_into_sentences_keeps_mr_x_whole(tasks, records):
    texts = {f.text for f in tasks[4].facts}
    assert "The guilty person is a man." in texts
    assert "His father is indirectly responsible for the accident." in texts
    assert (
        "The father had just drunk several glasses of spirits during a dinner with his friends."
        in texts
    )
    assert any(t.startswith("In the first car, Mr. X—who is 53") for t in texts)
    # 3 shared paragraphs of 2 sentences, 3 hidden paragraphs of 3 sentences.
    assert len(tasks[4].facts) == 6 + 9
    assert not any(t in ("Mr.", "In the first car, Mr.") for t in texts)


def test_task5_bullets_become_facts_under_their_heading(tasks):
    texts = {f.text for f in tasks[5].facts}
    assert "Roberts' information: Is a vegetarian" in texts
    # "Jones' information" has no colon in the file but is followed by bullets: a heading.
    assert "Jones' information: Already lives in the area" in texts
    assert (
        "Stevens' CV highlights: Has the rank of full professor of Information Technology." in texts
    )
    drinking = next(f for f in tasks[5].facts if "drinking heavily" in f.text)
    assert drinking.holders == ("A3", "A4")  # the same bullet in two agents' entries


def test_task6_line_without_dash_is_an_item(tasks):
    by_text = {f.text: f for f in tasks[6].facts}
    assert by_text["Candidate C: has excellent attention skills"].holders == ("A3",)
    assert by_text["Candidate A: can anticipate dangerous situations"].holders == ("A1", "A2", "A3")
    per_option = Counter(f.text.split(":")[0] for f in tasks[6].facts)
    assert per_option == {
        "Candidate A": 10,
        "Candidate B": 10,
        "Candidate C": 10,
        "Candidate D": 10,
    }


def test_task7_checklist_items_repeated_across_agents_are_one_fact(tasks):
    by_text = {f.text: f for f in tasks[7].facts}
    assert by_text["Franklin Enterprises: (a) N"].holders == ("A2", "A3", "A4")
    assert by_text["Starlight Incorporated: (b) Y"].holders == ("A1",)
    assert by_text["Franklin Enterprises: (d) Y"].holders == ("A1", "A2", "A3", "A4")
    assert len(tasks[7].facts) == len(by_text) == 30


def test_task8_split_keeps_the_odd_period_comma(tasks):
    texts = [f.text for f in tasks[8].facts]
    assert len(texts) == 8 + 9
    assert any(
        t.startswith("It takes more than 15 minutes") and t.endswith("opposite direction.")
        for t in texts
    )


def test_shared_facts_are_held_by_everyone_hidden_by_their_agent(tasks, records):
    task = tasks[1]
    assert len(task.facts) == 6 + 4  # two shared entries hold two sentences each
    for fact in task.facts:
        if fact.source == "shared":
            assert fact.holders == task.agents
        else:
            agent = int(fact.id[1 : fact.id.index(".")])
            assert fact.holders == (f"A{agent}",)


def test_options_and_facts_shuffled_with_the_seed(data_file, records):
    again = {t.number: t for t in load_hiddenbench(data_file, seed=0)}
    other = {t.number: t for t in load_hiddenbench(data_file, seed=1)}
    assert again[9].options == load_hiddenbench(data_file, seed=0)[8].options
    last = sum(t.options.index(t.correct) == len(t.options) - 1 for t in again.values())
    assert last < 39  # the file puts the key last in 39 of 65 tasks
    assert any(other[n].options != again[n].options for n in again)
    assert any([f.id for f in other[n].facts] != [f.id for f in again[n].facts] for n in again)
    for number, task in again.items():
        assert sorted(task.options) == sorted(records[number]["possible_answers"])
        assert task.correct == records[number]["correct_answer"]


def test_scripted_discussion_serves_hiddenbench(tasks):
    task = tasks[5]
    candidates = memory_candidates(scripted_discussion(task, seed=0))
    assert len(candidates) == len(task.facts) == 62
    assert sum(c.n_holders == 4 for c in candidates) == 4 + 4 + 4 + 5 + 5 + 5  # shared bullets


def test_generated_prose_split_rules():
    assert split_sentences("Dr. Lee saw it. It was 6 p.m. at St. Mary's.") == [
        "Dr. Lee saw it.",
        "It was 6 p.m. at St. Mary's.",
    ]
    assert split_atomic("One fact only.") == ["One fact only."]
    assert split_atomic("Header:\n- a\n- b") == ["Header: a", "Header: b"]


def test_bad_record_names_the_file_and_field(tmp_path):
    with pytest.raises(DatasetFormatError, match=r"x\.json, record 3: .*'possible_answers'"):
        build_task(
            {
                "id": 3,
                "name": "n",
                "description": "d",
                "shared_information": [],
                "hidden_information": ["h"],
                "correct_answer": "a",
            },
            path=tmp_path / "x.json",
        )
    with pytest.raises(DatasetFormatError, match="not in possible_answers"):
        build_task(
            {
                "id": 3,
                "name": "n",
                "description": "d",
                "shared_information": [],
                "hidden_information": ["h"],
                "possible_answers": ["b"],
                "correct_answer": "a",
            },
        )
