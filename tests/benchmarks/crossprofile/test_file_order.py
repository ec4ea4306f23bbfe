"""Nothing a model sees carries a template file's order (issue 32 item 3): the first fact in a
file is on the correct option in most templates, so the order facts are listed in, and their
ids (``s1``, ``d2``: role and file position), must not reach a prompt, a memory or a transcript."""

from __future__ import annotations

import re

import pytest
from helpers.natural_profiles import RecordingClient

from deliberation.benchmarks.crossprofile.memory import verified_bank
from deliberation.benchmarks.crossprofile.tasks import derive_task
from deliberation.benchmarks.crossprofile.variants import ALL_VARIANTS
from deliberation.discussion.scripted import scripted_discussion
from deliberation.experiments.memory import Grid, crossprofile_tasks, run_memory_experiment
from deliberation.profiles.profile import load_profile


def reordered(template, rotation: int):
    """The same template with its facts listed in another order under other ids."""
    facts = list(template.facts)[::-1]
    facts = facts[rotation:] + facts[:rotation]
    renamed = tuple(f.model_copy(update={"id": f"x{k:02d}"}) for k, f in enumerate(facts))
    return template.model_copy(update={"facts": renamed})


def seen(task):
    """What a task shows: options, and every fact's text and holders in presentation order."""
    return task.options, [(f.text, f.holders) for f in task.facts]


@pytest.fixture(scope="module")
def templates():
    return [t for t in verified_bank() if not t.pilot][:6] + [
        t for t in verified_bank() if t.pilot
    ][:2]


@pytest.mark.parametrize("rotation", [1, 5])
def test_the_same_facts_in_another_file_order_give_the_same_tasks(templates, rotation):
    for template in templates:
        other = reordered(template, rotation)
        assert [f.text for f in other.facts] != [f.text for f in template.facts]
        for variant in ALL_VARIANTS:
            original, moved = derive_task(template, variant), derive_task(other, variant)
            assert seen(original) == seen(moved), (template.id, variant.id)
            turns = [
                [(s.agent, s.text) for s in turn.statements]
                for turn in scripted_discussion(original).turns
            ]
            assert turns == [
                [(s.agent, s.text) for s in turn.statements]
                for turn in scripted_discussion(moved).turns
            ]


def test_no_prompt_carries_a_fact_id(tmp_path):
    """Every request of a run (decisions, relevance and balance labels, summaries) holds none of
    the task's fact ids as a word."""
    profile = load_profile("sim")
    tasks = crossprofile_tasks("main", limit=1)
    client = RecordingClient(profile, tmp_path / "cache.sqlite")
    policies = ("R1", "B4", "B3", "R1-rel", "balance", "all")
    run_memory_experiment("crossprofile", tasks, Grid(policies), profile, client, progress=False)
    ids = {f.id for t in tasks for f in t.facts}
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, sorted(ids))) + r")\b")
    stages = {r.stage for r in client.requests}
    assert {"crossprofile.decision", "crossprofile.relevance", "crossprofile.balance"} <= stages
    for request in client.requests:
        for message in request.messages:
            assert not pattern.search(message.content), (request.stage, message.content)
