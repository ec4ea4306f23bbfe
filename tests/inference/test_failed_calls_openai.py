"""Failed calls over HTTP: one malformed or oversized reply fails that call alone; a server that
fails every POST the same way is stopped by the circuit breaker after a few requests."""

from __future__ import annotations

import json
import logging

import pytest
from helpers.failing_server import failing_server
from helpers.serve_sim import arithmetic_prompt, arithmetic_requests, openai_profile

from deliberation.inference.cache import ResponseCache
from deliberation.inference.client import CachedClient
from deliberation.inference.openai_api import (
    BREAKER_ATTEMPTS,
    OpenAIBackend,
    profile_hint,
    reply_byte_limit,
)

FAST = {"timeout_s": 5.0, "backoff_base_s": 0.005, "backoff_max_s": 0.02, "max_retries": 3}


def _client(url: str, cache_file, **options) -> CachedClient:
    profile = openai_profile(url, **{**FAST, **options})
    return CachedClient(
        OpenAIBackend.from_profile(profile),
        ResponseCache(cache_file),
        profile=profile.name,
        progress=False,
    )


def _completion(usage: object, content: object = "Answer: 1", choices: bool = True) -> bytes:
    body = {
        "id": "x",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": content},
             "finish_reason": "stop"}
        ] if choices else [],
        "usage": usage,
    }  # fmt: skip
    return json.dumps(body, allow_nan=True).encode().replace(b"1e999x", b"1e999")


def _prompt_of(body: dict) -> str:
    return body.get("messages", [{}])[-1].get("content", "")


MALFORMED = {
    "usage NaN": _completion({"prompt_tokens": float("nan"), "completion_tokens": 1}),
    "usage 1e999": _completion({"prompt_tokens": "1e999x", "completion_tokens": 1}),
    "usage string": _completion({"prompt_tokens": "x", "completion_tokens": 1}),
    "usage list": _completion({"prompt_tokens": [1], "completion_tokens": 1}),
    "negative usage": _completion({"prompt_tokens": -3, "completion_tokens": 1}),
    "not JSON": b"{not json",
    "no choices": _completion({"prompt_tokens": 1, "completion_tokens": 1}, choices=False),
}


@pytest.mark.parametrize("kind", sorted(MALFORMED))
def test_one_malformed_reply_fails_that_call_only(kind, tmp_path) -> None:
    bad = arithmetic_prompt(3)
    with failing_server() as server:
        server.raw = MALFORMED[kind]
        server.fail = lambda stage, body: _prompt_of(body) == bad
        client = _client(server.base_url, tmp_path / "c.sqlite")
        requests = arithmetic_requests(10)
        responses = client.generate(requests)
    failed = [r.messages[-1].content for r, a in zip(requests, responses, strict=True) if not a.ok]
    assert failed == [bad]
    assert all(a.ok and a.text for a in responses if a is not responses[3])
    assert int(client.cache.stats()["failures"].sum()) == 1


def test_a_reply_past_the_byte_bound_fails_alone_unretried_and_is_not_stored(tmp_path) -> None:
    bad = arithmetic_prompt(2)
    limit = reply_byte_limit(16)
    assert limit == 64 * 1024 + 256 * 16  # the documented bound
    huge = _completion({"prompt_tokens": 1, "completion_tokens": 1}, content="y" * (limit + 10))
    with failing_server() as server:
        server.raw = huge
        server.fail = lambda stage, body: _prompt_of(body) == bad
        cache_file = tmp_path / "c.sqlite"
        client = _client(server.base_url, cache_file)
        responses = client.generate(arithmetic_requests(6))
        assert server.failed_posts["smoke.arithmetic"] == 1  # not retried
    assert [r.ok for r in responses] == [True, True, False, True, True, True]
    assert "larger than" in responses[2].error and "max_tokens" in responses[2].error
    with ResponseCache(cache_file) as cache:
        assert int(cache.stats()["calls"].sum()) == 5


def test_a_server_failing_every_post_the_same_way_gets_few_requests(tmp_path, caplog) -> None:
    with failing_server() as server:
        server.message = "unsupported parameter: response_format"
        server.fail = lambda stage, body: True
        client = _client(server.base_url, tmp_path / "c.sqlite", concurrency=16, max_retries=6)
        with caplog.at_level(logging.WARNING):
            responses = client.generate(arithmetic_requests(80))
        sent = server.total_posts
    assert not any(r.ok for r in responses)
    # The documented bound: the breaker trips after BREAKER_ATTEMPTS identical failures, with
    # at most BREAKER_ATTEMPTS - 1 others in flight.
    assert BREAKER_ATTEMPTS <= sent <= 2 * BREAKER_ATTEMPTS - 1
    stopped = [r.error for r in responses if "circuit breaker" in r.error]
    assert len(stopped) >= 80 - sent
    assert all("unsupported parameter: response_format" in e for e in stopped)
    assert all("openai.structured_output" in e for e in stopped)
    assert server.base_url.removesuffix("/") in stopped[0]
    warnings = " ".join(r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING)
    assert "circuit breaker" in warnings and server.base_url in warnings


def test_failures_after_a_success_do_not_trip_the_breaker(tmp_path) -> None:
    """One prompt answered first: later identical failures of other prompts are retried and
    fail one by one (the breaker only guards a stage that never worked)."""
    with failing_server() as server:
        client = _client(server.base_url, tmp_path / "c.sqlite", max_retries=1)
        assert client.generate(arithmetic_requests(1))[0].ok
        server.fail = lambda stage, body: _prompt_of(body) != arithmetic_prompt(0)
        responses = client.backend.generate(arithmetic_requests(12))
    assert responses[0].ok
    assert all("gave up after 2 attempts" in r.error for r in responses[1:])


@pytest.mark.parametrize(
    ("complaint", "key"),
    [
        ("Unrecognized request argument: seed", "openai.send_seed"),
        ("'response_format' of type json_schema is not supported", "openai.structured_output"),
        ("temperature must be in [0, 2]", "sampling.temperature"),
        ("The model `qwen-x` does not exist", "model"),
        ("max_tokens is too large", "sampling.max_tokens"),
    ],
)
def test_the_hint_names_the_profile_key(complaint, key) -> None:
    assert f"`{key}`" in profile_hint(complaint)
    assert profile_hint("Internal Server Error") == ""


def _reply(message: dict, finish: str = "stop", model: str = "sim-mechanism") -> bytes:
    return json.dumps({
        "id": "x", "object": "chat.completion", "created": 0, "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", **message},
                     "finish_reason": finish}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1},
    }).encode()  # fmt: skip


TOOL_CALL = {"id": "t", "type": "function", "function": {"name": "f", "arguments": "{}"}}
NO_ANSWER = {
    "tool call": (_reply({"content": None, "tool_calls": [TOOL_CALL]}, "tool_calls"), "tool call"),
    "refusal": (_reply({"content": None, "refusal": "I can't help with that."}), "refused"),
    "content filter": (_reply({"content": None}, "content_filter"), "content filter"),
    "filter with text": (_reply({"content": "partial"}, "content_filter"), "content filter"),
    "null content": (_reply({"content": None}), "content is null"),
}


@pytest.mark.parametrize("case", sorted(NO_ANSWER))
def test_a_reply_without_an_answer_fails_is_not_stored_and_the_rerun_sends_it(case, tmp_path):
    """HTTP 200 with no usable content is no answer: failed with its reason, counted apart,
    never cached as text, and sent again by the next run."""
    body, reason = NO_ANSWER[case]
    bad = arithmetic_prompt(1)
    cache_file = tmp_path / "c.sqlite"
    with failing_server() as server:
        server.raw = body
        server.fail = lambda stage, sent: _prompt_of(sent) == bad
        responses = _client(server.base_url, cache_file).generate(arithmetic_requests(4))
        assert [r.ok for r in responses] == [True, False, True, True]
        assert reason in responses[1].error
        assert server.failed_posts["smoke.arithmetic"] == 1  # not retried within the run
        server.fail = lambda stage, sent: False  # the server recovers
        server.reset()
        rerun = _client(server.base_url, cache_file).generate(arithmetic_requests(4))
        assert server.total_posts == 1  # exactly the failed call
    assert all(r.ok for r in rerun)
    with ResponseCache(cache_file) as cache:
        assert int(cache.stats()["calls"].sum()) == 4


def test_an_empty_answer_is_an_answer_and_a_cut_answer_stays_invalid(tmp_path) -> None:
    """Content "" and finish_reason length are answers (counted invalid by the parsers), not
    failures: the model chose to say nothing, or ran out of room."""
    with failing_server() as server:
        server.raw = _reply({"content": ""})
        server.fail = lambda stage, sent: _prompt_of(sent) == arithmetic_prompt(0)
        empty = _client(server.base_url, tmp_path / "a.sqlite").generate(arithmetic_requests(1))
        server.raw = _reply({"content": "Answer: 1"}, "length")
        cut = _client(server.base_url, tmp_path / "b.sqlite").generate(arithmetic_requests(1))
    assert empty[0].ok and empty[0].text == ""
    assert cut[0].ok and cut[0].finish_reason == "length"


@pytest.mark.parametrize(
    ("replied", "other"),
    [("gpt-4o-evil", True), ("other", True), ("sim-mechanism", False),
     ("sim-mechanism-2024-08-06", False), ("", False)],
)  # fmt: skip
def test_which_reply_model_names_are_another_model(replied, other) -> None:
    from deliberation.inference.openai_api import replied_as_other_model

    assert replied_as_other_model("sim-mechanism", replied) is other


def test_a_reply_naming_another_model_fails_unless_an_alias_is_allowed(tmp_path, caplog):
    bad = arithmetic_prompt(0)
    with failing_server() as server:
        server.raw = _reply({"content": "Answer: 7"}, model="gpt-4o-evil")
        server.fail = lambda stage, sent: _prompt_of(sent) == bad
        strict = _client(server.base_url, tmp_path / "a.sqlite").generate(arithmetic_requests(2))
        with caplog.at_level(logging.WARNING):
            client = _client(server.base_url, tmp_path / "b.sqlite", allow_model_alias=True)
            allowed = client.generate(arithmetic_requests(2))
            client.generate([*arithmetic_requests(2)])  # cached: no second warning
    assert not strict[0].ok and "gpt-4o-evil" in strict[0].error and strict[1].ok
    assert allowed[0].ok and allowed[0].text == "Answer: 7"
    warned = [r for r in caplog.records if "answers as model" in r.getMessage()]
    assert len(warned) == 1 and client.backend.served_as == {"gpt-4o-evil"}
