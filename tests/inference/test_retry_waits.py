"""Waits are visible and bounded: a server's Retry-After is capped by the profile's
``retry_after_max_s``, a long wait is logged at WARNING with the server's reason, and
permanent errors (400, 401, 404) are sent once, never retried."""

from __future__ import annotations

import logging
import time

import numpy as np
import pytest
from helpers.retry import retry_wait
from helpers.serve_sim import arithmetic_requests, openai_profile

from deliberation.inference import openai_api
from deliberation.inference.base import ChatRequest
from deliberation.inference.openai_api import OpenAIBackend, OpenAIOptions, RetryPolicy
from deliberation.testing import sim_server_in_thread


def test_the_cap_defaults_to_a_few_minutes() -> None:
    assert 60 <= OpenAIOptions(base_url="http://x/v1").retry_after_max_s <= 600


def test_retry_after_is_honoured_up_to_the_cap() -> None:
    policy = RetryPolicy(max_retries=3, backoff_base_s=0.0, backoff_max_s=0.0, retry_after_max_s=7)
    rng = np.random.default_rng(0)
    assert retry_wait(policy, 0, rng, 3.0) == 3.0
    assert retry_wait(policy, 0, rng, 3600.0) == 7.0
    assert retry_wait(policy, 0, rng, float("inf")) == 7.0


def test_an_hour_long_retry_after_waits_only_the_cap_and_says_so(monkeypatch, caplog) -> None:
    monkeypatch.setattr(openai_api, "LONG_WAIT_S", 0.05)  # "long" at test scale
    caplog.set_level(logging.WARNING, logger="deliberation.inference.openai_api")
    with sim_server_in_thread(fault_429=1.0, retry_after=3600) as handle:
        profile = openai_profile(handle.base_url, max_retries=1, retry_after_max_s=0.2)
        started = time.monotonic()
        (response,) = OpenAIBackend.from_profile(profile).generate(arithmetic_requests(1))
        elapsed = time.monotonic() - started
    assert not response.ok and response.attempts == 2
    assert 0.2 <= elapsed < 5
    (wait,) = [r.getMessage() for r in caplog.records if "waiting" in r.getMessage()]
    assert "rate limited" in wait  # the server's reason
    assert "asked for 3600 s" in wait and "retry_after_max_s=0.2" in wait


def test_short_waits_stay_out_of_the_warnings(caplog) -> None:
    caplog.set_level(logging.WARNING, logger="deliberation.inference.openai_api")
    with sim_server_in_thread(fault_429=1.0, retry_after=0.01) as handle:
        profile = openai_profile(handle.base_url, max_retries=2)
        (response,) = OpenAIBackend.from_profile(profile).generate(arithmetic_requests(1))
    assert response.attempts == 3
    assert not [r for r in caplog.records if "waiting" in r.getMessage()]


def _bad_request() -> ChatRequest:
    return ChatRequest.from_prompt("x", stage="echo", max_tokens=0)  # serve-sim answers 400


@pytest.mark.parametrize(
    ("status", "server", "profile_options", "request_factory"),
    [
        (400, {}, {}, _bad_request),
        (401, {"require_key_env": "WIRE_TEST_SERVER_KEY"}, {}, lambda: arithmetic_requests(1)[0]),
        (404, {}, {"model": "not-served"}, lambda: arithmetic_requests(1)[0]),
    ],
    ids=["400", "401", "404"],
)
def test_permanent_errors_are_sent_once(
    monkeypatch, status, server, profile_options, request_factory
) -> None:
    monkeypatch.setenv("WIRE_TEST_SERVER_KEY", "server-only-key")
    with sim_server_in_thread(**server) as handle:
        profile = openai_profile(handle.base_url, max_retries=5)
        if "model" in profile_options:
            profile = profile.model_copy(update=profile_options)
        (response,) = OpenAIBackend.from_profile(profile).generate([request_factory()])
        stats = handle.stats()
    assert not response.ok and response.attempts == 1
    assert f"HTTP {status}" in response.error and "not retried" in response.error
    assert stats["rejected"] == 1
