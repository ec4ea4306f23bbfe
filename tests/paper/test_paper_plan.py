"""deliberation plan: the calls and tokens it predicts are the ones a run sends; it needs no GPU,
network or API key; it writes nothing; costs come from the profile's cost section."""

from __future__ import annotations

import datetime as dt
import socket
import subprocess
import sys
from collections import Counter

import pytest

from deliberation.inference import make_client
from deliberation.inference.backends import backend_class
from deliberation.inference.base import (
    BackendIdentity,
    ChatRequest,
    ChatResponse,
    Message,
)
from deliberation.inference.cache import ResponseCache
from deliberation.inference.client import CachedClient
from deliberation.paper.manifest import load_manifest
from deliberation.paper.plan import (
    PlanningClient,
    format_plan,
    plan_calls,
    planning_answerer,
    unshared_prompt_shares,
)
from deliberation.profiles.cost import APIPrice, CostModel, GPUThroughput, estimate
from deliberation.profiles.profile import load_profile


def experiments():
    return [e for e in load_manifest() if e.experiment is not None]


def smoke_sized(name: str):
    """A profile with the smoke profile's experiment sizes (the grid CI can afford)."""
    return load_profile(name).model_copy(update={"experiments": load_profile("smoke").experiments})


def run_for_real(profile, client) -> None:
    for entry in experiments():
        entry.experiment_function()(profile=profile, client=client, **entry.kwargs)


class CountingBackend:
    """Answers with ``inner``, keys as ``keys`` does, and counts what reaches it per stage."""

    def __init__(self, inner, keys):
        self.inner, self.keys = inner, keys
        self.name = inner.name
        self.calls: Counter = Counter()
        self.tokens: Counter = Counter()

    @property
    def identity(self):
        return self.keys.identity

    def request_payload(self, request):
        return self.keys.request_payload(request)

    def generate(self, requests, on_response=None):
        responses = self.inner.generate(requests, on_response=on_response)
        for request, response in zip(requests, responses, strict=True):
            self.calls[request.stage] += 1
            self.tokens[request.stage, "prompt"] += response.prompt_tokens
            self.tokens[request.stage, "completion"] += response.completion_tokens
        return responses


def per_stage(plan) -> dict:
    table = plan.table().groupby("stage")[["to_send", "prompt_tokens", "completion_tokens"]].sum()
    return {stage: tuple(int(v) for v in row) for stage, row in table.iterrows()}


@pytest.mark.experiments
@pytest.mark.parametrize("name", ["qwen2.5-7b-vllm", "deepseek-v4.1-flash-api"])
def test_plan_for_a_real_model_equals_a_sim_run_of_the_same_requests(name, tmp_path):
    """The real profile's requests (its sampling, its keys), answered by the plan's sim."""
    profile = smoke_sized(name)
    plan = plan_calls(profile)
    backend = CountingBackend(
        planning_answerer(profile), backend_class(profile.backend).for_planning(profile)
    )
    client = CachedClient(backend, ResponseCache(tmp_path / "c.sqlite"), profile=name)
    client.progress = False
    run_for_real(profile, client)
    sent = {
        stage: (
            backend.calls[stage],
            backend.tokens[stage, "prompt"],
            backend.tokens[stage, "completion"],
        )
        for stage in backend.calls
    }
    assert per_stage(plan) == sent


@pytest.mark.experiments
def test_an_openai_profile_planned_then_run_over_http_against_serve_sim(monkeypatch):
    """The openai backend really sends the planned calls (to serve-sim): same count, same tokens.
    A profile whose structured outputs travel with their schema (vLLM's `structured_outputs`),
    so serve-sim answers exactly as the plan's in-process sim; with `json_object` (DeepSeek)
    the wire drops the schema, answers differ, and so may the later stages' prompts: that is
    the estimate the plan warns about."""
    from deliberation.testing import sim_server_in_thread

    profile = smoke_sized("vllm-serve-local")
    plan = plan_calls(profile)
    with sim_server_in_thread(served_model=profile.model) as server:
        options = profile.options.model_copy(
            update={"base_url": server.base_url, "api_key_env": None}
        )
        served = profile.model_copy(update={"options": options})
        client = make_client(served, progress=False)
        run_for_real(served, client)
        answered = server.stats()["answered"]
    stats = client.cache.stats()
    totals = plan.totals()
    assert answered == totals["to_send"] == int(stats["calls"].sum())
    assert int(stats["prompt_tokens"].sum()) == totals["prompt_tokens"]
    assert int(stats["completion_tokens"].sum()) == totals["completion_tokens"]


def test_plan_needs_no_gpu_network_or_key_and_writes_nothing(monkeypatch, tmp_path):
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    monkeypatch.setitem(sys.modules, "vllm", None)  # `import vllm` fails as on a CPU machine

    def no_network(*args, **kwargs):
        raise AssertionError("the plan tried to open a network connection")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    cache_dir = tmp_path / "cache"
    monkeypatch.setenv("DELIBERATION_CACHE_DIR", str(cache_dir))
    for name in ("qwen2.5-7b-vllm", "deepseek-v4.1-flash-api"):
        plan = plan_calls(smoke_sized(name), load_manifest()[:1])
        assert plan.totals()["to_send"] > 0
        assert any("estimates" in line for line in format_plan(plan))
    assert not cache_dir.exists()  # no cache created, no pool stored


def test_cli_plans_a_real_profile_without_a_key(tmp_path):
    env = {k: v for k, v in __import__("os").environ.items() if k != "DEEPSEEK_API_KEY"}
    done = subprocess.run(
        [sys.executable, "-m", "deliberation", "plan", "deepseek-v4.1-flash-api", "--notebooks",
         "00", "--csv", str(tmp_path / "plan.csv")],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "smoke.arithmetic" in done.stdout and "list price of" in done.stdout
    assert (tmp_path / "plan.csv").read_text().startswith("notebook,stage,requests")


def test_cache_hits_are_counted_from_the_profiles_cache_without_touching_it(tmp_path, monkeypatch):
    monkeypatch.setenv("DELIBERATION_CACHE_DIR", str(tmp_path))
    profile = load_profile("smoke")
    client = make_client(profile, progress=False)
    entry = load_manifest()[0]
    entry.experiment_function()(profile=profile, client=client, **entry.kwargs)
    client.cache.close()
    before = (tmp_path / "smoke.sqlite").read_bytes()
    plan = plan_calls(profile, [entry])
    assert plan.totals()["to_send"] == 0 and plan.totals()["cached"] > 0
    assert (tmp_path / "smoke.sqlite").read_bytes() == before  # no hit counted, nothing written


def test_cost_from_throughput_and_from_prices():
    gpu = GPUThroughput(gpus=4, prompt_tokens_per_s=10_000, completion_tokens_per_s=1_000)
    price = APIPrice(prompt_per_million=0.5, completion_per_million=2.0, as_of=dt.date(2026, 1, 2))
    cost = estimate(CostModel(gpu=gpu, price=price), 36_000_000, 3_600_000, 7_200_000)
    assert cost.wall_hours == pytest.approx(1.0 + 1.0)  # 3600 s prefill + 3600 s decode
    assert cost.gpu_hours == pytest.approx(8.0)
    assert cost.gpu_hours_ceiling == pytest.approx(4 * (1.0 + 2.0))
    assert cost.money == pytest.approx(18.0 + 7.2)
    assert cost.money_ceiling == pytest.approx(18.0 + 14.4)
    assert "2026-01-02" in "\n".join(cost.lines())
    assert "no cost section" in estimate(CostModel(), 1, 1, 1).lines()[0]


def test_a_prefix_caching_server_is_timed_on_unshared_prompt_tokens_in_server_units():
    gpu = GPUThroughput(
        gpus=1,
        prompt_tokens_per_s=100,
        completion_tokens_per_s=50,
        server_tokens_per_counter_token=1.5,
        prefix_cache=True,
    )
    price = APIPrice(prompt_per_million=1.0, completion_per_million=1.0, as_of=dt.date(2026, 1, 2))
    cost = estimate(CostModel(gpu=gpu, price=price), 3600, 0, 0, unshared_prompt_tokens=1200)
    assert cost.wall_hours == pytest.approx(1200 * 1.5 / 100 / 3600)  # 18 s of prefill
    assert cost.money == pytest.approx(3600 / 1e6)  # a price counts every token sent
    without = GPUThroughput(gpus=1, prompt_tokens_per_s=100, completion_tokens_per_s=50)
    cost = estimate(CostModel(gpu=without), 3600, 0, 0, unshared_prompt_tokens=1200)
    assert cost.wall_hours == pytest.approx(3600 / 100 / 3600)


def test_unshared_prompt_shares_follow_the_order_the_client_sends_in():
    def ask(text: str) -> ChatRequest:
        return ChatRequest(messages=(Message("user", text),), stage="t")

    head = "alpha beta gamma delta epsilon zeta eta theta " * 5
    requests = [ask("zzz unrelated words here"), ask(head + "one two"), ask(head + "three four")]
    shares = unshared_prompt_shares(requests)
    # prefix order: head+"one two", head+"three four", "zzz...": the second repeats the head
    assert shares[1] == pytest.approx(1.0)
    assert 0 < shares[2] < 0.2
    assert shares[0] > 0.5  # shares nothing but "user\n" with the prompt before it
    assert unshared_prompt_shares([]) == []


def test_a_real_models_stage_already_answered_is_priced_at_its_observed_answer_length(tmp_path):
    """The sim's answers are short; a stage with answers in the cache prices the calls still to
    send at those answers' mean length (capped by max_tokens), other stages at the sim's."""
    profile = load_profile("smollm2-135m-llamacpp")
    cache = ResponseCache(tmp_path / "c.sqlite")
    identity = BackendIdentity("openai", profile.model, profile.revision)
    for index, length in enumerate((90, 100, 110)):
        request = ChatRequest(messages=(Message("user", f"seen {index}"),), stage="long")
        answer = ChatResponse(text="x", completion_tokens=length)
        cache.put(f"k{index}", request, answer, profile=profile.name, identity=identity)
    client = PlanningClient(
        backend_class(profile.backend).for_planning(profile),
        cache,
        planning_answerer(profile),
        profile=profile.name,
        observed_lengths=True,
    )
    asks = [
        ChatRequest(messages=(Message("user", "new one"),), stage="long", max_tokens=512),
        ChatRequest(messages=(Message("user", "new two"),), stage="long", max_tokens=64),
        ChatRequest(messages=(Message("user", "new three"),), stage="other", max_tokens=512),
    ]
    client.generate(asks)
    lengths = [call.completion_tokens for call in client.calls]
    sim_length = planning_answerer(profile).generate(asks[2:])[0].completion_tokens
    assert lengths == [100, 64, sim_length]
    cache.close()


def test_every_shipped_real_profile_prices_its_calls():
    """Shipped profiles only: the README calls `cost:` optional for a profile a user adds."""
    from helpers.profile_checks import check_every_shipped_real_profile_prices_its_calls

    check_every_shipped_real_profile_prices_its_calls()


def failing_experiment(profile, client):
    raise FileNotFoundError("no file data/external/x.json (run `make data`)")


def test_a_notebook_that_cannot_be_planned_is_named_with_its_reason_and_the_rest_planned():
    from deliberation.paper.manifest import NotebookEntry

    broken = NotebookEntry(name="05_broken.ipynb", experiment="test_paper_plan:failing_experiment")
    plan = plan_calls(load_profile("smoke"), [broken, *experiments()])
    assert "05_broken.ipynb" in plan.not_planned
    assert plan.totals()["to_send"] > 0
    assert any(
        line.startswith("NOT PLANNED 05_broken.ipynb") and "make data" in line
        for line in format_plan(plan)
    )


def test_a_request_that_cannot_be_sent_is_counted_invalid_not_planned(tmp_path):
    from deliberation.inference.base import ChatRequest
    from deliberation.paper.plan import PlanningClient

    profile = load_profile("smoke")
    sim = planning_answerer(profile)
    client = PlanningClient(sim, ResponseCache(tmp_path / "c.sqlite"), sim, profile="smoke")
    good = ChatRequest.from_prompt("What is 1 + 2?", stage="smoke.arithmetic")
    bad = ChatRequest.from_prompt("What is \ud800?", stage="smoke.arithmetic")  # lone surrogate
    responses = client.generate([good, bad, good])
    assert responses[1].error and "cannot send" in responses[1].error
    assert [c.state for c in client.calls] == ["send", "invalid", "repeat"]


def test_planning_logs_no_sent_lines_while_a_run_does(caplog):
    """The plan says nothing was sent; the experiments it runs must not log "... N sent"."""
    from deliberation.paper.manifest import select

    entry = select(load_manifest(), ["03"])
    with caplog.at_level("INFO"):
        plan = plan_calls(load_profile("smoke"), entry)
    assert plan.totals()["to_send"] > 0
    assert not [r for r in caplog.records if r.getMessage().endswith(" sent")]
    caplog.clear()
    from deliberation.inference.batch import send

    client = make_client(load_profile("smoke"), progress=False)
    with caplog.at_level("DEBUG"):
        send(client, [ChatRequest.from_prompt("What is 1 + 2?", stage="smoke.arithmetic")], "smoke")
    # A run's "sent" line is for --verbose: the commands print the stage's counts themselves.
    (sent,) = [r for r in caplog.records if r.getMessage().endswith(", 1 sent")]
    assert sent.levelname == "DEBUG"


def test_the_plan_and_cache_stats_show_the_servers_prompt_tokens_beside_the_counter(
    tmp_path, monkeypatch
):
    """A real server counts prompt tokens with its own tokenizer: both counts are reported per
    stage, the server's as it said (31 a call here) and the project's counter over the prompt."""
    from helpers.llama_like import SERVER_PROMPT_TOKENS, llama_like_server
    from helpers.serve_sim import openai_profile

    from deliberation.experiments import smoke
    from deliberation.inference.tokens import count_tokens

    monkeypatch.setenv("DELIBERATION_CACHE_DIR", str(tmp_path))
    entry = load_manifest()[0]  # 00_smoke
    with llama_like_server() as base_url:
        profile = openai_profile(
            base_url, name="llama-like", structured_output="json_object_schema"
        )
        profile = profile.model_copy(update={"experiments": load_profile("smoke").experiments})
        client = make_client(profile, progress=False)
        entry.experiment_function()(profile=profile, client=client, **entry.kwargs)
        stats = client.cache.stats().set_index("stage").loc["smoke.arithmetic"]
        client.cache.close()
    items = smoke.arithmetic_items(profile.experiments.smoke_items, seed=profile.seed)
    counter = sum(
        count_tokens(r.messages[-1].content) for r in smoke.arithmetic_requests(profile, items)
    )
    calls = profile.experiments.smoke_items
    assert stats["prompt_tokens"] == SERVER_PROMPT_TOKENS * calls != counter
    assert stats["counted_prompt_tokens"] == counter
    plan = plan_calls(profile, [entry])
    row = plan.table().set_index("stage").loc["smoke.arithmetic"]
    assert (row["cached"], row["to_send"]) == (calls, 0)
    assert (row["cached_server_tokens"], row["cached_counter_tokens"]) == (
        SERVER_PROMPT_TOKENS * calls,
        counter,
    )
    assert any("by the server's count" in line for line in format_plan(plan))


def test_the_printed_plan_table_fits_120_characters():
    """The terminal table (notebook number, short headers) fits a terminal; --csv keeps all."""
    import pandas as pd

    from deliberation.paper.plan import PLAN_COLUMNS, shown_table

    # The whole paper on gpt-oss-120b (docs/scaling.md): 211,288 calls, 75.5 M prompt tokens.
    counts, tokens = [211_288] * 5, [75_500_000] * 6
    wide = pd.DataFrame(
        [["03_crossprofile_h1_h3.ipynb", "crossprofile.relevance_labels", *counts, *tokens]],
        columns=PLAN_COLUMNS,
    )
    lines = shown_table(wide).to_markdown(index=False, intfmt=",", tablefmt="simple").splitlines()
    assert max(len(line) for line in lines) <= 120, lines[0]
    assert lines[2].lstrip().startswith("03 ") and "crossprofile.relevance_labels" in lines[2]
