"""parse_choice measured on real replies: the hand-labelled corpus of SmolLM2-135M's free-text
answers (tests/fixtures/choice_replies/), and the collector that re-collects it."""

from __future__ import annotations

from pathlib import Path

import pytest

from deliberation.inference.base import ChatResponse
from deliberation.profiles.profile import load_profile
from deliberation.results import choice_corpus as corpus

FIXTURE = Path(__file__).parents[1] / "fixtures" / "choice_replies" / "replies.jsonl"
# Replies written the way larger chat models write (hedges, markdown, "Final answer:", negations,
# self-corrections, quoted and nested option names), labelled by reading (README).
WRITTEN = FIXTURE.with_name("written.jsonl")
# A little under the recall measured when the corpus was labelled (0.960, README), so a parser
# change that loses real choices fails here.
RECALL_FLOOR = 0.94


@pytest.fixture(scope="module")
def records():
    return corpus.read_corpus(FIXTURE)


def test_the_corpus_holds_enough_real_decisions_and_votes(records):
    stages = [r["stage"] for r in records]
    assert len(records) >= 300
    assert stages.count("decision") >= 200 and stages.count("vote") >= 50
    assert all("label" in r for r in records), "every reply is labelled by hand"
    for r in records:
        assert r["label"] is None or r["label"] in r["options"], r["source"]
    assert len({r["key"] for r in records}) == len(records)


def test_parse_choice_is_precise_on_real_replies(records):
    score, wrong = corpus.measure(records)
    false_parses = [(r["source"], got) for r, got in wrong if got is not None]
    assert score.precision >= 0.98, false_parses
    assert score.recall >= RECALL_FLOOR, score


def test_parse_choice_reads_written_replies_as_a_careful_reader_does():
    records = corpus.read_corpus(WRITTEN)
    assert len(records) >= 150 and all("label" in r for r in records)
    score, wrong = corpus.measure(records)
    false_parses = [(r["source"], r["reply"], got) for r, got in wrong if got is not None]
    assert not false_parses  # no rejected, retracted or merely mentioned option is a choice
    assert score.recall >= 0.95, [(r["source"], r["reply"]) for r, _ in wrong]
    kinds = {r["source"].split("/")[2] for r in records}
    assert {"negation", "correction", "markdown", "hedge", "case", "quotes", "json"} <= kinds


def test_measure_counts_precision_over_parses_and_recall_over_labelled_choices():
    options = ["Alpha", "Beta"]
    records = [
        {
            "source": "1",
            "reply": "Alpha",
            "options": options,
            "letters_shown": False,
            "label": "Alpha",
        },
        {"source": "2", "reply": "x", "options": options, "letters_shown": False, "label": "Beta"},
        {"source": "3", "reply": "y", "options": options, "letters_shown": False, "label": None},
        {"source": "4", "reply": "z", "options": options, "letters_shown": False, "label": None},
    ]
    readings = {"1": "Alpha", "2": None, "3": "Beta", "4": None}
    score, wrong = corpus.measure(records, parse=lambda r: readings[r["source"]])
    assert (score.parsed, score.correct, score.labelled_choices) == (2, 1, 2)
    assert score.precision == 0.5 and score.recall == 0.5
    assert [r["source"] for r, _ in wrong] == ["2", "3"]


def test_measure_refuses_a_corpus_with_unlabelled_replies():
    record = {"source": "s", "reply": "Alpha", "options": ["Alpha"], "letters_shown": False}
    with pytest.raises(ValueError, match="not labelled"):
        corpus.measure([record])


def test_recollecting_keeps_labels_only_of_unchanged_replies():
    old = [
        {"key": "k1", "reply": "Alpha", "label": "Alpha"},
        {"key": "k2", "reply": "Beta", "label": "Beta", "note": "x"},
    ]
    new = [
        {"key": "k1", "reply": "Alpha"},
        {"key": "k2", "reply": "Gamma"},
        {"key": "k3", "reply": "B"},
    ]
    merged = corpus.merge_labels(new, old)
    assert merged[0]["label"] == "Alpha"
    assert "label" not in merged[1] and "label" not in merged[2]


@pytest.mark.parametrize(
    ("prompt", "shown"),
    [
        ("Options:\n- Alpha\n- Beta", False),
        ("Options:\nA. Alpha\nB. Beta", True),
        ("Options:\n(A) Alpha\n(B) Beta", True),
        ("Options:\n- A) Alpha\n- B) Beta", True),
        ("Options:\nA. Alpha\n- Beta", False),
    ],
)
def test_prompt_shows_letters_only_when_every_option_has_its_letter(prompt, shown):
    assert corpus.prompt_shows_letters(prompt, ["Alpha", "Beta"]) is shown


class _Client:
    """Answers every prompt with its first option's name, except one that fails."""

    def __init__(self):
        self.requests = []

    def key(self, request):
        return str(hash(request.messages))

    def generate(self, requests, desc=""):
        self.requests += requests
        out = []
        for request in requests:
            text = request.messages[-1].content
            first = text.split("Options:\n- ")[1].split("\n")[0]
            failed = "West City" in text
            out.append(ChatResponse(text="", error="down") if failed else ChatResponse(text=first))
        return out


def test_collect_sends_the_projects_prompts_and_records_each_reply_unlabelled():
    items = corpus.corpus_prompts(crossprofile_templates=2, hiddenbench_tasks=1, vote_tasks=2)
    stages = {(i.stage, i.request_stage) for i in items}
    assert ("decision", "crossprofile.decision") in stages
    assert ("decision", "hiddenbench.decision") in stages
    assert ("vote", "natural.crossprofile.vote.initial") in stages
    assert ("vote", "natural.hiddenbench.vote.final") in stages
    assert len({i.prompt for i in items}) == len(items)
    assert not any(i.letters_shown for i in items)  # the project's prompts list names only
    client = _Client()
    records = corpus.collect(load_profile("smollm2-135m-llamacpp-free"), items, client)
    hiddenbench_task_1 = sum("West City" in i.prompt for i in items)
    assert len(records) == len(items) - hiddenbench_task_1  # failed calls are not replies
    assert all("label" not in r for r in records)
    assert {r["stage"] for r in records} == {"decision", "vote"}
    assert all(r["reply"] == r["options"][0] or r["stage"] == "vote" for r in records)


def test_the_collecting_profile_sends_free_text():
    profile = load_profile("smollm2-135m-llamacpp-free")
    assert profile.options.structured_output == "none"
    assert profile.options.base_url.endswith(f":{profile.server.port}/v1")
