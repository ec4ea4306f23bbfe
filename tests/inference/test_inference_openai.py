"""The ``openai`` backend over real HTTP against serve-sim: answers, retries, faults, secrets."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import numpy as np
import pytest
from helpers.retry import retry_wait
from helpers.serve_sim import SIM_MODEL, arithmetic_requests, openai_profile

from deliberation.inference.backends import backend_class
from deliberation.inference.base import ChatRequest, StructuredOutput
from deliberation.inference.cache import ResponseCache
from deliberation.inference.client import CachedClient
from deliberation.inference.openai_api import OpenAIBackend, RetryPolicy, parse_retry_after
from deliberation.inference.secrets import PLACEHOLDER_KEY, MissingAPIKeyError, read_api_key
from deliberation.inference.sim import SimBackend
from deliberation.profiles.profile import load_profile
from deliberation.testing import sim_server_in_thread

FAST = {"timeout_s": 2.0, "backoff_base_s": 0.005, "backoff_max_s": 0.02}


@pytest.fixture(scope="module")
def sim() -> SimBackend:
    return SimBackend.from_profile(load_profile("sim"))


@pytest.fixture(scope="module")
def server():
    with sim_server_in_thread() as handle:
        yield handle


def _backend(base_url: str, **options) -> OpenAIBackend:
    return OpenAIBackend.from_profile(openai_profile(base_url, **{**FAST, **options}))


def _same_answer(a, b) -> bool:
    fields = ("text", "parsed", "finish_reason", "prompt_tokens", "completion_tokens")
    return all(getattr(a, f) == getattr(b, f) for f in fields)


# -- construction ---------------------------------------------------------------------------------


def test_registered_as_openai_and_built_from_the_profile() -> None:
    profile = openai_profile("http://127.0.0.1:9/v1/", concurrency=5, timeout_s=7.0)
    backend = backend_class("openai").from_profile(profile)
    assert isinstance(backend, OpenAIBackend)
    assert backend.concurrency == 5 and backend.timeout_s == 7.0
    assert backend.identity.backend == "openai"
    assert backend.identity.model == SIM_MODEL
    assert backend.identity.base_url == "http://127.0.0.1:9/v1"  # trailing slash normalised


def test_missing_key_variable_is_an_error_naming_it(monkeypatch) -> None:
    monkeypatch.delenv("DELIB_NO_SUCH_KEY", raising=False)
    profile = openai_profile("http://127.0.0.1:9/v1", api_key_env="DELIB_NO_SUCH_KEY")
    with pytest.raises(MissingAPIKeyError, match="DELIB_NO_SUCH_KEY"):
        OpenAIBackend.from_profile(profile)


def test_no_key_variable_means_the_placeholder_key() -> None:
    assert read_api_key(None) == PLACEHOLDER_KEY


def test_repr_and_vars_hide_the_key(monkeypatch) -> None:
    monkeypatch.setenv("DELIB_TEST_KEY", "sk-very-secret-value")
    profile = openai_profile("http://127.0.0.1:9/v1", api_key_env="DELIB_TEST_KEY")
    backend = OpenAIBackend.from_profile(profile)
    assert "sk-very-secret-value" not in repr(backend)
    assert "sk-very-secret-value" not in repr(vars(backend))
    assert "sk-very-secret-value" not in str(backend.identity)


def test_request_body_carries_sampling_seed_and_structured_fields() -> None:
    spec = StructuredOutput(choices=("A", "B"))
    request = ChatRequest.from_prompt("x", seed=11, sample=2, temperature=0.7, structured=spec)
    body = _backend("http://127.0.0.1:9/v1").request_body(request)
    assert body["seed"] == request.effective_seed() and body["seed"] != 11  # draw 2 differs
    assert body["temperature"] == 0.7 and body["top_p"] == 1.0 and body["max_tokens"] == 512
    assert body["structured_outputs"] == {"choice": ["A", "B"]}
    guided = _backend("http://127.0.0.1:9/v1", structured_output="guided").request_body(request)
    assert guided["guided_choice"] == ["A", "B"] and "structured_outputs" not in guided
    no_seed = _backend("http://127.0.0.1:9/v1", send_seed=False).request_body(request)
    assert "seed" not in no_seed
    unseeded = _backend("http://127.0.0.1:9/v1").request_body(ChatRequest.from_prompt("x"))
    assert "seed" not in unseeded and "structured_outputs" not in unseeded


# -- retry arithmetic -----------------------------------------------------------------------------


def test_parse_retry_after_reads_seconds_milliseconds_and_dates() -> None:
    assert parse_retry_after({"Retry-After": "3"}) == 3.0
    assert parse_retry_after({"retry-after": "0.25"}) == 0.25
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    now = datetime(2030, 1, 1, tzinfo=UTC)
    date = format_datetime(now + timedelta(seconds=20), usegmt=True)
    assert parse_retry_after({"Retry-After": date}, now=now.timestamp()) == pytest.approx(20.0)
    assert parse_retry_after({"Retry-After": "soon"}) is None
    assert parse_retry_after({}) is None


def test_backoff_is_full_jitter_capped_and_at_least_retry_after() -> None:
    policy = RetryPolicy(max_retries=10, backoff_base_s=0.5, backoff_max_s=3.0)
    rng = np.random.default_rng(0)
    for retry in range(8):
        ceiling = min(3.0, 0.5 * 2**retry)  # 0.5, 1, 2, 3, 3, ...
        waits = [retry_wait(policy, retry, rng, None) for _ in range(200)]
        assert min(waits) >= 0.0 and max(waits) <= ceiling
        assert max(waits) > 0.8 * ceiling  # the whole range is used (jitter is full)
    assert all(retry_wait(policy, 0, rng, 4.0) >= 4.0 for _ in range(50))  # above the cap if asked
    first = [retry_wait(policy, k, np.random.default_rng(7), None) for k in range(5)]
    again = [retry_wait(policy, k, np.random.default_rng(7), None) for k in range(5)]
    assert first == again  # seeded


# -- answers over HTTP ----------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["structured_outputs", "guided"])
def test_http_answers_equal_in_process_sim_answers(server, sim, mode) -> None:
    spec = StructuredOutput(choices=("north", "south", "east"))
    requests = arithmetic_requests(30) + [
        ChatRequest.from_prompt(f"choose {i}", stage="echo", structured=spec, sample=i % 3)
        for i in range(15)
    ]
    responses = _backend(server.base_url, structured_output=mode).generate(requests)
    expected = sim.generate(requests)
    assert all(r.ok and r.attempts == 1 for r in responses)
    assert all(_same_answer(got, want) for got, want in zip(responses, expected, strict=True))
    assert [r.parsed for r in responses[30:]] == [e.parsed for e in expected[30:]]
    assert all(r.parsed in spec.choices for r in responses[30:])


def test_response_format_mode_parses_the_wrapped_choice(server, sim) -> None:
    spec = StructuredOutput(choices=("yes", "no"))
    requests = [ChatRequest.from_prompt(f"q{i}", stage="echo", structured=spec) for i in range(6)]
    responses = _backend(server.base_url, structured_output="response_format").generate(requests)
    assert [r.parsed for r in responses] == [e.parsed for e in sim.generate(requests)]
    assert all(r.text.startswith('{"answer"') for r in responses)


def test_on_response_reports_every_index_once_with_its_own_answer(server, sim) -> None:
    seen: dict[int, str] = {}
    requests = arithmetic_requests(20)
    responses = _backend(server.base_url, concurrency=4).generate(
        requests, on_response=lambda i, r: seen.setdefault(i, r.text)
    )
    assert sorted(seen) == list(range(20))
    assert [seen[i] for i in range(20)] == [r.text for r in sim.generate(requests)]
    assert [r.text for r in responses] == [seen[i] for i in range(20)]
    assert all(r.latency_s > 0 for r in responses)


def test_generate_works_inside_a_running_event_loop(server) -> None:
    backend = _backend(server.base_url)

    async def notebook_cell():
        return backend.generate(arithmetic_requests(3))  # Jupyter: a loop is already running

    assert all(r.ok for r in asyncio.run(notebook_cell()))


def test_concurrency_bound_is_respected() -> None:
    # 100 ms per answer, 12 requests, at most 3 in flight: at least 4 waves, so >= 0.4 s. Only
    # the lower bound is a correctness property (a load can slow a run, never speed it up); the
    # speed-up from concurrency is measured by benchmarks/bench_inference.py.
    with sim_server_in_thread(latency_ms=100) as handle:
        started = time.monotonic()
        responses = _backend(handle.base_url, concurrency=3).generate(arithmetic_requests(12))
        elapsed = time.monotonic() - started
    assert all(r.ok for r in responses)
    assert elapsed >= 0.38


# -- faults and retries ---------------------------------------------------------------------------


def test_retry_after_is_honoured_and_attempts_are_counted() -> None:
    with sim_server_in_thread(fault_429=1.0, retry_after=0.3) as handle:
        started = time.monotonic()
        (response,) = _backend(handle.base_url, max_retries=2).generate(arithmetic_requests(1))
        elapsed = time.monotonic() - started
        arrivals = handle.stats()["arrivals"]
    assert not response.ok and response.text == ""
    assert response.attempts == 3 and arrivals == 3
    assert "429" in response.error and "gave up after 3 attempts" in response.error
    assert elapsed >= 0.6  # two waits of at least Retry-After, though backoff alone is <= 0.02 s


@pytest.mark.parametrize(
    ("options", "kind"),
    [
        ({"fault_500": 1.0}, "500"),
        ({"fault_malformed": 1.0}, "malformed"),
        ({"fault_hang": 1.0, "hang_s": 2.0}, "timeout"),
    ],
)
def test_each_fault_kind_is_retried_then_recorded_with_its_reason(options, kind) -> None:
    with sim_server_in_thread(**options) as handle:
        (response,) = _backend(handle.base_url, max_retries=1, timeout_s=0.3).generate(
            arithmetic_requests(1)
        )
        arrivals = handle.stats()["arrivals"]
    assert not response.ok and response.attempts == 2 and arrivals == 2
    assert f"{kind} x2" in response.error


def test_client_errors_fail_at_once_without_retry(server) -> None:
    backend = OpenAIBackend(model="not-served", base_url=server.base_url, max_retries=5, **FAST)
    before = server.stats()["arrivals"]
    (response,) = backend.generate(arithmetic_requests(1))
    assert not response.ok and response.attempts == 1
    assert "HTTP 404" in response.error and "not retried" in response.error
    assert server.stats()["arrivals"] - before == 1


def test_twenty_percent_of_each_fault_nothing_is_dropped(tmp_path, sim) -> None:
    """429, 500, hangs and malformed bodies at 20% each (80% of arrivals fail): the run ends,
    every request is answered correctly or recorded as failed with its reason, and the server's
    own counts agree with the client's attempts."""
    requests = arithmetic_requests(60)
    options = {"fault_429": 0.2, "fault_500": 0.2, "fault_hang": 0.2, "fault_malformed": 0.2}
    with sim_server_in_thread(retry_after=0.02, hang_s=2.0, fault_seed=3, **options) as handle:
        backend = _backend(handle.base_url, concurrency=16, max_retries=8, timeout_s=0.5)
        with ResponseCache(tmp_path / "cache.sqlite") as cache:
            client = CachedClient(backend, cache, profile="openai-test", progress=False)
            responses = client.generate(requests)
            cached = cache.keys()
            failures = cache.failures()
        stats = handle.stats()
    assert len(responses) == len(requests)
    expected = sim.generate(requests)
    answered = [i for i, r in enumerate(responses) if r.ok]
    failed = [i for i, r in enumerate(responses) if not r.ok]
    assert answered and failed  # 0.8**9 = 13% fail: both outcomes occur at this seed
    assert all(_same_answer(responses[i], expected[i]) for i in answered)
    assert all(
        responses[i].attempts == 9 and "gave up after 9" in responses[i].error for i in failed
    )
    # Every request is in the cache or in the failures table, with its reason.
    assert len(cached) == len(answered) and len(failures) == len(failed)
    assert set(failures["key"]) == {client.key(requests[i]) for i in failed}
    assert all(reason.startswith("gave up after") for reason in failures["reason"])
    # Server side: every attempt arrived, each answered prompt was answered exactly once.
    assert sum(stats["faults"].values()) >= 0.7 * stats["arrivals"]
    # Every attempt the client counted reached the server, except that on a loaded machine an
    # attempt can time out on the client before the server has read it.
    attempts = sum(r.attempts for r in responses)
    assert 0.9 * attempts <= stats["arrivals"] <= attempts
    prompts = [r.messages[-1].content for r in requests]
    # Each answered prompt was answered by the server at least once; more than once only when
    # an answer arrived after the client's timeout (possible on a loaded machine), and never
    # more often than it was sent.
    answered_counts = stats["answered_per_prompt"]
    assert all(answered_counts.get(prompts[i], 0) >= 1 for i in answered)
    assert all(answered_counts[p] <= stats["arrivals_per_prompt"][p] for p in answered_counts)
    assert all(1 <= stats["arrivals_per_prompt"][prompts[i]] <= 9 for i in failed)


# -- secrets --------------------------------------------------------------------------------------


def test_api_key_never_reaches_the_cache_file_or_logs(tmp_path, monkeypatch, caplog) -> None:
    key = f"sk-planted-{uuid.uuid4().hex}"
    monkeypatch.setenv("DELIB_PLANTED_KEY", key)
    caplog.set_level(logging.DEBUG)
    for name in ("openai", "httpx2", "httpcore2", "httpx", "httpcore", "deliberation"):
        caplog.set_level(logging.DEBUG, logger=name)
    cache_file = tmp_path / "cache.sqlite"
    # The server insists on the key (401 otherwise), so answers prove it was sent; some 429s
    # and 500s exercise the retry and failure paths, whose messages are logged and stored too.
    with sim_server_in_thread(
        require_key_env="DELIB_PLANTED_KEY", fault_429=0.3, fault_500=0.3, retry_after=0.01
    ) as handle:
        profile = openai_profile(handle.base_url, api_key_env="DELIB_PLANTED_KEY", max_retries=1)
        with ResponseCache(cache_file) as cache:
            client = CachedClient(
                OpenAIBackend.from_profile(profile), cache, profile=profile.name, progress=False
            )
            responses = client.generate(arithmetic_requests(40))
            failures = cache.failures()
        monkeypatch.setenv("DELIB_PLANTED_KEY", "a-different-key")
        wrong = OpenAIBackend.from_profile(profile).generate(arithmetic_requests(1))
    assert any(r.ok for r in responses) and any(not r.ok for r in responses)
    assert "HTTP 401" in wrong[0].error
    assert any(record.name.startswith(("openai", "httpx")) for record in caplog.records)
    files = [p for p in tmp_path.iterdir() if p.name.startswith("cache.sqlite")]
    assert files
    for path in files:
        assert key.encode() not in path.read_bytes(), path.name
    logged = caplog.text + "\n".join(str(record.__dict__) for record in caplog.records)
    assert key not in logged
    assert key not in failures.to_string()
    assert all(key not in (r.error or "") for r in responses)
