"""The real-model lane (``deliberation check-real --profile P``, ``make check-real PROFILE=P``;
``make test-real`` is ``PROFILE=smollm2-135m-llamacpp``; not collected by ``make unit``): every
experiment's stages on the profile's own engine with a tiny grid (one CrossProfile task, one
HiddenBench task when its data is there, one natural discussion, one DHD pool, two throughput
probes: about 30 calls; time measured on SmolLM2-135M in docs/real-model.md).
``DELIBERATION_REAL_PROFILE`` names the profile (a name in params/ or a path),
``DELIBERATION_REAL_PORT`` the port for a server it starts (default: a free one).

It asserts what a real model allows, not what it gets right: every call is answered, every
constrained answer parses (a choice, a schema), rows are well formed, a second run sends nothing,
and a server the profile starts (its ``server:`` section, on a free port here) is left listening
by no one. A server that says it is serve-sim is labelled synthetic and checked the same way.
At the end it writes ``build/check-real/<profile>.md`` (:mod:`deliberation.paper.check_real`):
one row per stage (answered, failed calls counted apart, constrained answers valid / cut at
max_tokens / invalid, PASS or FAIL), the verdict, and the throughput measured on the lane's
calls beside the profile's stated ``cost.gpu`` figures, saved for the next plan
(:mod:`deliberation.profiles.throughput`)."""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

import pytest
import yaml

from deliberation.inference import make_client, served_profile
from deliberation.inference.model_files import is_present, pinned_model_for
from deliberation.inference.model_server import model_server
from deliberation.inference.structured import WRAPPED_CHOICE_MODES
from deliberation.paper.check_real import PROFILE_ENV, write_report
from deliberation.profiles.profile import load_profile
from deliberation.profiles.throughput import (
    DECODE_PROBE,
    PREFILL_PROBE,
    keeps_prefix_cache,
    probe_requests,
)

# The real profile the lane runs (a name in params/ or a path): the shipped one by default.
PROFILE = os.environ.get(PROFILE_ENV, "smollm2-135m-llamacpp")
MAX_TOKENS = 96  # the lane's cap on free-text answers (hypotheses, turns, votes' rationales)
# A real model on a loaded 2-core machine is slow (the summary stage alone may generate its
# 2,048 tokens): far above the unit tests' 600 s limit per test.
pytestmark = pytest.mark.timeout(3600)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> Path:
    server = getattr(load_profile(PROFILE), "server", None)
    pinned = pinned_model_for(getattr(server, "model_file", None))
    if pinned is not None and not is_present(pinned):
        pytest.fail(f"the model file is missing or damaged: run `{server.model_file_hint}`")
    root = tmp_path_factory.mktemp("real-model")
    return root


def resolved_profile(name: str) -> dict:
    """The profile's keys as a file spells them, ``extends:`` resolved (its validated dump)."""
    data = load_profile(name).model_dump(mode="json", exclude={"source", "served_by_sim"})
    data[data["backend"]] = data.pop("options")
    return data


def lane_profile_file(root: Path, port: int) -> Path:
    """The profile with the lane's max_tokens; a server it starts itself on a free port with a
    scratch log (a server it only talks to, an API or an offline engine: as the profile says)."""
    data = resolved_profile(PROFILE)
    data["name"] = "real-model-lane"
    if data.get("server"):
        data["openai"]["base_url"] = f"http://127.0.0.1:{port}/v1"
        data["server"].update(port=port, log_file=str(root / "server-{profile}.log"))
        if data["server"].get("model_file"):
            model_file = Path(data["server"]["model_file"])
            data["server"]["model_file"] = str(
                model_file if model_file.is_absolute() else Path(__file__).parents[1] / model_file
            )
    data["sampling"]["max_tokens"] = MAX_TOKENS
    path = root / f"lane-{port}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


class Lane:
    """The one server of the in-process stages, started on first use and stopped by close()."""

    def __init__(self, root: Path) -> None:
        self.port = int(os.environ.get("DELIBERATION_REAL_PORT", "0")) or free_port()
        self.cache_file = root / "lane.sqlite"  # one cache for every test of the lane
        profile = load_profile(lane_profile_file(root, self.port))
        self._block = model_server(profile)
        self.server = self._block.__enter__()
        # Labelled as what answers: a serve-sim endpoint is synthetic whatever the profile says.
        self.profile = served_profile(profile)
        self.closed = False
        self.sending_s = 0.0  # wall time inside the clients' generate (the throughput's clock)

    def client(self):
        client = make_client(self.profile, cache_file=self.cache_file, progress=False)
        generate = client.generate

        def timed(*args, **kwargs):
            started = time.perf_counter()
            try:
                return generate(*args, **kwargs)
            finally:
                self.sending_s += time.perf_counter() - started

        client.generate = timed
        return client

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._block.__exit__(None, None, None)


@pytest.fixture(scope="module")
def lane(scratch):
    opened = Lane(scratch)
    yield opened
    opened.close()
    source = load_profile(PROFILE)
    write_report(
        source, opened.profile, opened.cache_file, sending_s=opened.sending_s,
        prefix_cache=keeps_prefix_cache(source),
    )  # fmt: skip
    if opened.server is not None:
        assert not listening(opened.port)


def no_failures(client) -> None:
    failures = client.cache.failures()
    assert failures.empty, failures.to_string()


def constrained_answers(client, stage: str) -> tuple[int, int]:
    """What constrained decoding guarantees, checked on every stored answer of ``stage``: an
    answer the model ended itself (finish_reason "stop") parses under its constraint (the
    choice, or JSON valid against the schema). An unbounded schema (a free array or string)
    lets a 135M model run on until max_tokens; such an answer is cut ("length") and counted
    invalid by the experiment. Returns (answers, cut)."""
    rows = client.cache._conn.execute(
        "SELECT request, response FROM responses WHERE stage = ?", (stage,)
    ).fetchall()
    cut = 0
    for request, response in rows:
        sent, got = json.loads(request), json.loads(response)
        assert sent.get("structured"), f"{stage}: sent without structured output"
        if got["finish_reason"] == "length":
            cut += 1
            continue
        assert got["parsed"] is not None, f"{stage}: {got['text']!r} ended but does not parse"
    assert rows, f"no answers stored for {stage}"
    return len(rows), cut


def sent(report) -> int:
    return sum(stage.sent for stage in report.stages)


def test_crossprofile_decisions_with_relevance_labels_and_a_summary(lane) -> None:
    from deliberation.experiments.memory.grid import Grid
    from deliberation.experiments.memory.runs import (
        CROSSPROFILE_COLUMNS,
        crossprofile_tasks,
        run_memory_experiment,
    )

    tasks = crossprofile_tasks("main", 1, seed=lane.profile.seed)[:1]
    grid = Grid(policies=("R1-rel", "B3"), budgets=(0.6,), item_limit=None, tags=("keep",))
    client = lane.client()
    first = run_memory_experiment("crossprofile", tasks, grid, lane.profile, client)
    no_failures(client)
    rows = first.frame
    assert list(rows.columns) == list(CROSSPROFILE_COLUMNS) and len(rows) == 2
    labels, cut = constrained_answers(client, "crossprofile.relevance")
    assert labels == 1 and first.report.label_errors == cut  # invalid only when cut off
    assert constrained_answers(client, "crossprofile.decision") == (2, 0)
    assert first.report.summaries == 1
    assert (rows.loc[rows["policy"] == "B3", "kept_tokens"] > 0).all()
    assert (rows["valid"] == 1).all(), rows[["answer", "error"]]  # constrained to the options
    for task, answer in zip(rows["task"], rows["answer"], strict=True):
        assert answer in next(t.options for t in tasks if t.id == task)
    stages = {s.stage for s in first.report.stages}
    assert {"crossprofile.relevance", "crossprofile.summary", "crossprofile.decision"} <= stages
    second = run_memory_experiment("crossprofile", tasks, grid, lane.profile, lane.client())
    assert sent(second.report) == 0 and second.frame.equals(rows)


def test_hiddenbench_decisions_if_its_data_is_there(lane) -> None:
    from deliberation.benchmarks.hiddenbench.tasks import load_hiddenbench
    from deliberation.benchmarks.problems import DatasetNotFoundError
    from deliberation.experiments.memory.grid import Grid
    from deliberation.experiments.memory.runs import HIDDENBENCH_COLUMNS, run_memory_experiment

    try:
        tasks = load_hiddenbench(seed=lane.profile.seed)[:1]
    except DatasetNotFoundError as missing:
        pytest.skip(f"no HiddenBench data here: {missing}")
    grid = Grid(policies=("R1",), budgets=(0.6,), item_limit=None, tags=("keep",))
    client = lane.client()
    result = run_memory_experiment("hiddenbench", tasks, grid, lane.profile, client)
    no_failures(client)
    assert list(result.frame.columns) == HIDDENBENCH_COLUMNS
    assert (result.frame["valid"] == 1).all(), result.frame[["answer", "error"]]
    again = run_memory_experiment("hiddenbench", tasks, grid, lane.profile, lane.client())
    assert sent(again.report) == 0


def test_one_natural_discussion_with_votes_and_a_decision(lane) -> None:
    from deliberation.experiments.natural.runs import natural_tasks, run_natural_experiment

    options = lane.profile.experiments.natural.model_copy(update={"limit": 1})
    tasks = natural_tasks("crossprofile", options, lane.profile.seed)[:1]

    def run(client):
        return run_natural_experiment(
            "crossprofile", tasks, lane.profile, client, variants=("plain",), replicates=1,
            rounds=1, policies=("R1",), budget=0.6, progress=False,
        )  # fmt: skip

    client = lane.client()
    result = run(client)
    no_failures(client)
    messages = [m for d in result.discussions for m in d.messages]
    assert messages and not any(m.error for m in messages)
    votes = result.rows[result.rows["kind"] == "vote"]
    vote_stages = {st.stage for st in result.report.stages if ".vote." in st.stage}
    checked = [constrained_answers(client, stage) for stage in sorted(vote_stages)]
    answers, cut = sum(c[0] for c in checked), sum(c[1] for c in checked)
    assert vote_stages and len(votes) == answers and int((votes["valid"] == 0).sum()) <= cut
    decisions = result.rows[result.rows["kind"] != "vote"]
    assert len(decisions) and (decisions["valid"] == 1).all(), decisions.to_string()
    assert sent(run(lane.client()).report) == 0


def test_one_dhd_pool_with_integrator_replays_and_a_judge_on_a_synthetic_problem(
    lane, scratch
) -> None:
    from deliberation.experiments.dhd.judge import judge_request
    from deliberation.experiments.dhd.pool import PoolStore
    from deliberation.experiments.dhd.prompts import JUDGE_CHOICES
    from deliberation.experiments.dhd.protocol import PROPOSAL_COLUMNS, REPLAY_COLUMNS
    from deliberation.experiments.dhd.run import load_problems, run_dhd

    problems = load_problems("synthetic", 1, seed=lane.profile.seed)
    pools = scratch / "pools"

    def run(client):
        return run_dhd(lane.profile, client, problems, pools, stages=("pool", "replay"),
                       sizes=(), seed=lane.profile.seed)  # fmt: skip

    client = lane.client()
    results = run(client)
    no_failures(client)
    _, cut = constrained_answers(client, "dhd.recruiter")
    if results.pool_counts.recruiter_failures and cut:
        pytest.xfail(f"the recruiter's roles were cut at max_tokens={MAX_TOKENS} (a 135M model)")
    # Pools without roles are stored (their reply is final) but not among the usable ones.
    errors = [p.recruiter_error for p in PoolStore(pools) if p.recruiter_error]
    if errors and all("distinct" in error for error in errors):
        # The constraint guarantees the schema, not five different names: SmolLM2-135M copies
        # the prompt's "<role name>" placeholder (the committed paper run: 2 of 4 problems).
        pytest.xfail(f"the recruiter's reply fits the schema but: {errors[0]} (a 135M model)")
    assert results.pool_counts.recruiter_failures == 0  # the roles parsed against the schema
    assert results.pool_counts.messages == 5 and results.pool_counts.call_failures == 0
    assert list(results.proposals.columns) == PROPOSAL_COLUMNS
    replays = results.replays
    assert list(replays.columns) == REPLAY_COLUMNS and len(replays) == 6  # solo and 5 single
    assert (replays["valid"] == 1).all(), replays[["arm", "error"]]  # graded, none failed
    solo = replays[replays["arm"] == "solo"].iloc[0]
    reply = client.cache.get_many([solo["key"]], count_hits=False)[solo["key"]].text
    (verdict,) = client.generate([judge_request(problems[0], reply)])
    assert verdict.ok and verdict.parsed in JUDGE_CHOICES, verdict.text
    options = lane.profile.options
    if getattr(options, "structured_output", None) in WRAPPED_CHOICE_MODES:
        assert json.loads(verdict.text) == {"answer": verdict.parsed}  # read from the JSON
    again = lane.client()
    assert sum(c.sent for c in run(again).calls) == 0
    assert again.generate([judge_request(problems[0], reply)])[0].cached


def test_the_throughput_probes_are_answered(lane) -> None:
    """A long prompt with a one-word answer and a short prompt with a long one, so that the
    report measures both rates (deliberation.profiles.throughput)."""
    if lane.profile.synthetic:
        pytest.skip("the sim answers: its speed says nothing about a model's (none measured)")
    client = lane.client()
    prefill, decode = client.generate(probe_requests(lane.profile))
    no_failures(client)
    assert prefill.ok and decode.ok
    assert prefill.prompt_tokens > 10 * decode.prompt_tokens  # the prefill probe's long prompt
    assert decode.completion_tokens > prefill.completion_tokens
    stages = {s for (s,) in client.cache._conn.execute("SELECT stage FROM responses")}
    assert {PREFILL_PROBE, DECODE_PROBE} <= stages


def test_every_constrained_call_on_the_wire_carried_the_dialect_and_the_server_is_gone(
    lane,
) -> None:
    import sqlite3

    with sqlite3.connect(lane.cache_file) as db:
        stored = [json.loads(row[0]) for row in db.execute("SELECT request FROM responses")]
    constrained = [r for r in stored if r.get("structured")]
    assert constrained and len(constrained) < len(stored)
    stats = lane.client().cache.stats()
    # The server's own prompt-token counts are recorded beside the project's counter.
    assert (stats["prompt_tokens"] > 0).all() and (stats["counted_prompt_tokens"] > 0).all()
    if not lane.profile.synthetic:  # the sim counts with the project's counter
        assert (stats["prompt_tokens"] != stats["counted_prompt_tokens"]).any()
    if lane.server is None:  # nothing the lane started
        return
    pid = lane.server.process.pid if lane.server.process is not None else None
    lane.close()
    assert not listening(lane.port)
    if pid is not None:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
