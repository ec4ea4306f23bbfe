"""The sim backend: deterministic per request, seeded draws, named parameters, clear errors."""

from __future__ import annotations

import numpy as np

from deliberation.experiments.smoke import arithmetic_items, arithmetic_requests, parse_answer
from deliberation.inference.base import ChatRequest, StructuredOutput
from deliberation.inference.sim import SimBackend, find_behaviour, registered_stages
from deliberation.profiles.profile import load_profile


def test_same_request_same_answer_across_instances():
    request = ChatRequest.from_prompt("What is 2 + 2?", stage="smoke.arithmetic", seed=5)
    assert SimBackend().answer(request) == SimBackend().answer(request)


def test_sample_index_gives_independent_draws():
    base = ChatRequest.from_prompt(
        "pick", stage="echo", seed=1, structured=StructuredOutput(choices=tuple("ABCDEFGH"))
    )
    picks = {
        SimBackend().answer(ChatRequest(**{**base.__dict__, "sample": k})).text for k in range(40)
    }
    assert len(picks) > 3  # 40 draws over 8 choices all equal would be a broken seed path


def test_sim_seed_and_parameters_change_the_revision():
    a, b = SimBackend(seed=0), SimBackend(seed=1)
    c = SimBackend(seed=0, parameters={"smoke_accuracy": 0.5})
    assert len({a.identity.revision, b.identity.revision, c.identity.revision}) == 3


def test_unknown_stage_is_an_error_response_not_an_exception():
    response = SimBackend().answer(ChatRequest.from_prompt("hi", stage="no.such.stage"))
    assert not response.ok and "no.such.stage" in response.error


def test_dotted_stage_falls_back_to_its_longest_registered_prefix():
    assert find_behaviour("smoke.arithmetic.variant") is find_behaviour("smoke.arithmetic")
    assert "echo" in registered_stages()


def test_max_tokens_truncates_by_the_project_token_counter_and_reports_length():
    response = SimBackend().answer(
        ChatRequest.from_prompt("don't stop, please", stage="echo", max_tokens=5)
    )
    # "echo: don't stop, please" -> echo : don ' t | stop , please
    assert response.finish_reason == "length" and response.text == "echo: don't"
    assert response.completion_tokens == 5
    whole = SimBackend().answer(ChatRequest.from_prompt("hi", stage="echo", max_tokens=5))
    assert whole.finish_reason == "stop" and whole.text == "echo: hi"


def test_planted_accuracy_is_recovered():
    """Parameter recovery: the smoke accuracy parameter shows up in the measured accuracy."""
    items = arithmetic_items(3000, seed=11)
    requests = arithmetic_requests(load_profile("sim"), items)
    for planted in (0.6, 0.95):
        responses = SimBackend(parameters={"smoke_accuracy": planted}).generate(requests)
        correct = np.mean(
            [parse_answer(x.text) == t for x, t in zip(responses, items["truth"], strict=True)]
        )
        assert abs(correct - planted) < 0.03


def test_behaviours_and_their_registry_import_without_the_sim_backend():
    """Behaviour modules import the registry, never the backend, and the registry imports
    neither (imports inside functions count); the registry learns an experiment's behaviours
    only once the experiments are imported."""
    import subprocess
    import sys

    from helpers.import_graph import import_graph, module_names

    graph = import_graph(module_names())
    backend, registry = "deliberation.inference.sim", "deliberation.inference.sim_registry"
    behaviours = {name for name, targets in graph.items() if registry in targets} - {backend}
    assert behaviours and not {name for name in behaviours if backend in graph[name]}
    reached, todo = set(), [registry]
    while todo:
        for target in graph[todo.pop()] - reached:
            reached.add(target)
            todo.append(target)
    assert backend not in reached and not reached & behaviours
    code = (
        "from deliberation.inference.sim_registry import registered_stages; "
        "before = registered_stages(); import deliberation.experiments; "
        "after = registered_stages(); "
        "print('crossprofile.decision' in before, 'crossprofile.decision' in after,"
        " 'dhd.judge' in after)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True", "True"]
