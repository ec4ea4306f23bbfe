"""The sim's paper-1 behaviours answer from the prompt text through named parameters."""

from __future__ import annotations

import json

import pytest

from deliberation.benchmarks.crossprofile import load_bank
from deliberation.benchmarks.crossprofile.scoring import score_options
from deliberation.benchmarks.hiddenbench.sim import read_statement
from deliberation.experiments.memory import prompts
from deliberation.inference.base import ChatRequest
from deliberation.inference.sim import SimBackend

ALL = "[A1,A2,A3,A4]"


@pytest.fixture(scope="module")
def template():
    return load_bank()[0]


def ask(stage: str, prompt: str, seed: int = 0, **parameters) -> str:
    request = ChatRequest.from_prompt(prompt, stage=stage, seed=seed, max_tokens=4096)
    response = SimBackend(parameters=parameters).answer(request)
    assert response.ok, response.error
    return response.text


def decision(template, lines, tagged=True):
    return prompts.decision_prompt(
        template.description, template.criteria, template.options, lines, tagged=tagged
    )


def test_all_facts_without_noise_pick_the_best_scored_option(template):
    lines = [f"[A1] {f.text}" for f in template.facts]
    scores = score_options(template.facts, template.options)
    best = max(scores, key=scores.get)
    assert ask("crossprofile.decision", decision(template, lines), choice_noise=0) == best


def test_social_proof_weight_follows_holder_tags(template):
    # Decoys tagged with all four agents, support with one: a large social weight makes the
    # option two decoys favour win; at weight 0 the evidence wins.
    decoys = [f for f in template.facts if f.role == "decoy"]
    x_option = max({f.option for f in decoys}, key=lambda o: sum(f.option == o for f in decoys))
    lines = [
        f"{ALL if f.role == 'decoy' else '[A2]'} {f.text}"
        for f in template.facts
        if f.role != "irrelevant"
    ]
    prompt = decision(template, lines)
    assert ask("crossprofile.decision", prompt, choice_noise=0, social_weight=0) == template.correct
    assert ask("crossprofile.decision", prompt, choice_noise=0, social_weight=2) == x_option


def test_unreadable_lines_add_nothing_and_ties_are_random(template):
    prompt = decision(template, ["[A1] The weather was pleasant that week."])
    picks = {ask("crossprofile.decision", prompt, seed=s, choice_noise=0) for s in range(30)}
    assert picks == set(template.options)


def test_invalid_rate_gives_answers_naming_no_single_option(template):
    from deliberation.inference.answer_parsing import parse_choice

    text = ask("crossprofile.decision", decision(template, []), invalid_rate=1.0)
    assert parse_choice(text, template.options) is None


def statements_prompt(template, kind):
    build = prompts.relevance_prompt if kind == "relevance" else prompts.balance_prompt
    return build(
        template.description, template.criteria, template.options, [f.text for f in template.facts]
    )


def test_relevance_labeller_recall_and_false_positives(template):
    evidence = {k for k, f in enumerate(template.facts, 1) if f.role != "irrelevant"}
    perfect = json.loads(ask("crossprofile.relevance", statements_prompt(template, "relevance")))
    assert set(perfect["relevant"]) == evidence
    everything = json.loads(
        ask(
            "crossprofile.relevance",
            statements_prompt(template, "relevance"),
            relevance_false_positive=1.0,
        )
    )
    assert set(everything["relevant"]) == set(range(1, 13))
    blind = json.loads(
        ask("crossprofile.relevance", statements_prompt(template, "relevance"), relevance_recall=0)
    )
    assert blind["relevant"] == []


def test_balance_labeller_gives_true_labels_at_full_recall(template):
    labels = json.loads(ask("crossprofile.balance", statements_prompt(template, "balance")))
    for entry, fact in zip(labels["labels"], template.facts, strict=True):
        if fact.role == "irrelevant":
            assert (entry["option"], entry["direction"]) == ("none", "neither")
        else:
            word = "for" if fact.polarity > 0 else "against"
            assert (entry["option"], entry["direction"]) == (fact.option, word)


def test_summarizer_keeps_widely_held_statements_first_within_the_limit(template):
    facts = template.facts
    turns = [("A1", f.text) for f in facts[:6]] + [("A2", f.text) for f in facts[3:6]]
    prompt = prompts.summary_prompt(
        template.description, template.criteria, template.options, turns, word_limit=60
    )
    summary = ask("crossprofile.summary", prompt).splitlines()
    from deliberation.inference.tokens import count_tokens

    assert sum(count_tokens(line) for line in summary) <= 60
    shared = {f.text for f in facts[3:6]}
    assert summary[0] in shared  # held by two speakers: first
    long = ask("crossprofile.summary", prompt, summary_overrun=1.0)
    assert count_tokens(long) > count_tokens("\n".join(summary))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("A mudslide just occurred, covering the driveway to North Hill.", ("North Hill", -1)),
        ("The road to West City has been cleared and is safe.", ("West City", 1)),
        ("The river level is still below the bridge to West City.", ("West City", 0)),
        ("Reads mystery novels and biographies about North Hill.", ("North Hill", 0)),
        ("Both West City and East Town are open.", None),
        ("The dam upstream will release water in a minute.", None),
    ],
)
def test_hiddenbench_reading(text, expected):
    reading = read_statement(text, ["West City", "East Town", "North Hill"])
    assert (None if reading is None else (reading.option, reading.polarity)) == expected


def test_hiddenbench_checklist_marks():
    options = ["Franklin Enterprises", "Cape Industries"]
    assert read_statement("Cape Industries: (d) Y", options).polarity == 1
    assert read_statement("Cape Industries: (b) N", options).polarity == -1


def test_sections_are_read_after_the_description():
    # A description that itself lists options under "Options:" (as HiddenBench task 62 does).
    description = "Pick one.\nOptions:\n- Option A: the west\n- Option B: the east"
    prompt = prompts.balance_prompt(
        description, (), ["West City", "East Town"], ["The road to West City is blocked."]
    )
    labels = json.loads(ask("hiddenbench.balance", prompt))["labels"]
    assert labels == [{"statement": 1, "option": "West City", "direction": "against"}]


def test_world_knowledge_ignores_the_answer_key_and_roles(tmp_path):
    """Rewriting every template's key and relabelling roles leaves the sim's knowledge as is."""
    import yaml

    from deliberation.benchmarks.crossprofile.loader import bank_dir
    from deliberation.benchmarks.crossprofile.sim import world_knowledge

    for path in sorted(bank_dir().glob("*.yaml"))[:5]:
        data = yaml.safe_load(path.read_text())
        data["correct"] = (
            data["options"][-1] if data["correct"] != data["options"][-1] else data["options"][0]
        )
        for fact in data["facts"]:
            if fact["role"] in ("support", "decoy"):
                fact["role"] = "decoy" if fact["role"] == "support" else "support"
        (tmp_path / path.name).write_text(yaml.safe_dump(data, allow_unicode=True))
    altered = world_knowledge(tmp_path)
    original = world_knowledge()
    assert altered and all(original[text] == reading for text, reading in altered.items())


def test_signal_to_noise_of_a_line_grows_with_its_holders_against_fixed_noise():
    from deliberation.experiments.memory.sim.mechanism import signal_to_noise

    planted = {"evidence_weight": 1.0, "social_weight": 0.2, "choice_noise": 0.5}
    assert signal_to_noise(planted, 1) == pytest.approx(2.0)
    assert signal_to_noise(planted, 4) == pytest.approx(3.2)  # (1 + 0.2 x 3) / 0.5
    assert signal_to_noise({}, 4) == pytest.approx(1.0)  # defaults: no social weight, noise 1
    assert signal_to_noise({**planted, "choice_noise": 0.0}, 1) == float("inf")
