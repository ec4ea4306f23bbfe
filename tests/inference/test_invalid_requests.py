"""One bad request fails alone: a prompt with a lone surrogate (text that is not valid Unicode,
as a broken ``\\ud83d`` escape in a dataset produces) once killed the whole batch in
``request_key``; it must come back failed with its reason while the others are answered."""

from __future__ import annotations

import pytest
from helpers.serve_sim import arithmetic_prompt, openai_profile

from deliberation.inference import make_client
from deliberation.inference.base import ChatRequest, InvalidRequestError
from deliberation.inference.cache import request_key
from deliberation.inference.sim import SimBackend
from deliberation.profiles.profile import load_profile
from deliberation.testing import sim_server_in_thread

BROKEN = "What is 1 + \ud83d?"  # half of a surrogate pair: str holds it, UTF-8 cannot


def _batch() -> list[ChatRequest]:
    prompts = [arithmetic_prompt(1), BROKEN, arithmetic_prompt(2), arithmetic_prompt(3)]
    return [
        ChatRequest.from_prompt(p, stage="smoke.arithmetic", seed=i) for i, p in enumerate(prompts)
    ]


def test_request_key_names_the_field_that_is_not_valid_unicode() -> None:
    request = ChatRequest.from_prompt(BROKEN, system="be brief", stage="smoke.arithmetic")
    with pytest.raises(InvalidRequestError) as caught:
        request_key(SimBackend(), request)
    message = str(caught.value)
    assert "messages[1].content" in message and "U+D83D" in message and "character 12" in message


def _check_batch(client) -> None:
    responses = client.generate(_batch())
    assert [r.ok for r in responses] == [True, False, True, True]
    assert "messages[0].content" in responses[1].error and "U+D83D" in responses[1].error
    assert responses[1].attempts == 0  # never sent
    assert all(r.text.startswith("Answer:") for r in (responses[0], responses[2], responses[3]))
    again = client.generate(_batch())  # a rerun serves the good ones and fails the bad one again
    assert [r.cached for r in again] == [True, False, True, True]
    assert not again[1].ok


def test_a_lone_surrogate_fails_its_request_alone_in_process(tmp_path) -> None:
    _check_batch(make_client(load_profile("sim"), cache_file=tmp_path / "c.sqlite", progress=False))


def test_a_lone_surrogate_fails_its_request_alone_over_http(tmp_path) -> None:
    with sim_server_in_thread() as handle:
        profile = openai_profile(handle.base_url)
        _check_batch(make_client(profile, cache_file=tmp_path / "c.sqlite", progress=False))
        assert handle.stats()["arrivals"] == 3  # the broken prompt never reached the server


def test_a_lone_surrogate_fails_alone_through_an_experiment_stage(tmp_path) -> None:
    """Experiments send stages through runs.send, which must not raise on the bad request."""
    from deliberation.inference.batch import send

    client = make_client(load_profile("sim"), cache_file=tmp_path / "c.sqlite", progress=False)
    counts: list = []
    responses, keys = send(client, _batch(), "smoke.arithmetic", counts)
    assert [r.ok for r in responses] == [True, False, True, True]
    assert keys[1] == "" and all(keys[i] for i in (0, 2, 3))
    assert (counts[0].built, counts[0].unique, counts[0].sent) == (4, 3, 3)
