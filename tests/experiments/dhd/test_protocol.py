"""The DHD protocol end to end on the sim: pools stored once, failures and parse errors kept and
counted, pairings that survive failed calls, and the sim's mechanism recovered by the labels."""

from __future__ import annotations

import pandas as pd
import pytest

from deliberation.experiments.dhd import labels, synthetic
from deliberation.experiments.dhd.pool import PoolStore
from deliberation.experiments.dhd.protocol import build_pools, proposal_rows, run_replays
from deliberation.experiments.dhd.replay import leave_one_out_design, repeated_design
from deliberation.inference.base import ChatRequest, ChatResponse
from deliberation.inference.cache import ResponseCache
from deliberation.inference.client import CachedClient
from deliberation.inference.sim import SimBackend
from deliberation.profiles.profile import load_profile

PROFILE = load_profile("sim")


class FailingSim(SimBackend):
    """The sim, except that calls whose prompt contains a marker fail for good."""

    def __init__(self, *, fail_when, **kwargs):
        super().__init__(**kwargs)
        self.fail_when = fail_when
        self.sent = 0

    def answer(self, request: ChatRequest, **kwargs) -> ChatResponse:
        self.sent += 1
        if self.fail_when(request):
            return ChatResponse(text="", error="HTTP 500 after 3 attempts")
        return super().answer(request, **kwargs)


def _client(tmp_path, backend=None, **parameters) -> CachedClient:
    backend = backend or SimBackend(parameters=parameters)
    return CachedClient(
        backend, ResponseCache(tmp_path / "cache.sqlite"), profile="t", progress=False
    )


def _run_loo(tmp_path, n: int, **parameters):
    client = _client(tmp_path, **parameters)
    items = synthetic.synthetic_bank(n, seed=11)
    by_id = {item.id: item for item in items}
    pools, _ = build_pools(PROFILE, client, items, PoolStore(tmp_path / "pools"))
    replays = [r for pool in pools.values() for r in leave_one_out_design(pool)]
    rows = run_replays(PROFILE, client, by_id, pools, replays)
    cells = labels.six_cells(labels.leave_one_out_effects(rows), proposal_rows(by_id, pools))
    return labels.helpful_share(cells).set_index(["benchmark", "proposal"])


def test_pools_are_built_once_and_a_second_run_sends_nothing(tmp_path):
    backend = FailingSim(fail_when=lambda r: False)
    client = _client(tmp_path, backend)
    items = synthetic.synthetic_bank(6, seed=1)
    store = PoolStore(tmp_path / "pools")
    pools, counts = build_pools(PROFILE, client, items, store)
    assert counts.problems == 6 and counts.messages == 30
    sent = backend.sent
    again, _ = build_pools(PROFILE, client, items, store)
    assert again == pools and backend.sent == sent
    assert len({m.role.name for m in pools[items[0].id].messages}) == 5


def test_a_pool_drawn_by_other_requests_is_refused_naming_its_file(tmp_path):
    """A stored pool outlives no change to what drew it: another hypothesizer cap (or profile,
    or prompt) means other requests, so the stored pool is refused, never silently reused."""
    from deliberation.experiments.dhd.protocol import StalePoolError

    client = _client(tmp_path)
    items = synthetic.synthetic_bank(2, seed=3)
    store = PoolStore(tmp_path / "pools")
    build_pools(PROFILE, client, items, store)
    build_pools(PROFILE, client, items, store)  # the same requests: reused
    capped = PROFILE.model_copy(
        update={"sampling": PROFILE.sampling.model_copy(update={"max_tokens": 64})}
    )
    with pytest.raises(StalePoolError, match=str(store.path("synthetic", items[0].id))):
        build_pools(capped, client, items, store)


def test_unparseable_replies_are_kept_as_they_came_back_and_counted(tmp_path):
    client = _client(tmp_path, dhd_format_error=1.0)
    items = synthetic.synthetic_bank(3, seed=2)
    pools, counts = build_pools(PROFILE, client, items, PoolStore(tmp_path / "pools"))
    assert counts.parse_failures == 15
    message = pools[items[0].id].messages[0]
    assert message.present and message.hypothesis is None and "Key idea" in message.parse_error
    assert "Proposed final answer" in message.raw
    proposals = proposal_rows({i.id: i for i in items}, pools)
    assert (proposals["parse_error"] != "").all() and proposals["proposal_correct"].isna().all()


def test_a_failed_integrator_call_keeps_every_pairing_right(tmp_path):
    items = synthetic.synthetic_bank(2, seed=5)
    by_id = {item.id: item for item in items}
    build = _client(tmp_path)
    pools, _ = build_pools(PROFILE, build, items, PoolStore(tmp_path / "pools"))
    replays = [r for pool in pools.values() for r in repeated_design(pool, blocks=3)]
    # Fail the second full call of block 1 (replicate 3) and message 2's removal in block 2
    # (replicate 4).
    failing = {(r.problem_id, r.arm, r.replicate) for r in replays}
    doomed = {(items[0].id, "full", 3), (items[0].id, "drop-2", 4)}
    assert doomed <= failing
    targets = {}
    for replay in replays:
        if (replay.problem_id, replay.arm, replay.replicate) in doomed:
            targets[(replay.shown, replay.replicate)] = replay
    backend = FailingSim(
        fail_when=lambda request: any(
            _matches(request, pools[r.problem_id], r, by_id) for r in targets.values()
        )
    )
    rows = run_replays(PROFILE, _client(tmp_path / "second", backend), by_id, pools, replays)
    assert rows["valid"].eq(0).sum() == 2
    assert set(rows.loc[rows["valid"] == 0, "error"].str[:23]) == {"integrator call failed:"}
    # Recompute by hand: pair each removal with the valid full calls of its own block.
    values = labels.trajectory_values(rows)
    valid = rows[rows["valid"] == 1]
    for (problem, message), value in values.set_index(["problem", "message"])["value"].items():
        effects = []
        for block in range(3):
            full = valid[
                (valid.problem == problem) & (valid.arm == "full") & (valid.block == block)
            ]
            removed = valid[
                (valid.problem == problem)
                & (valid.arm == f"drop-{message}")
                & (valid.block == block)
            ]
            if len(full) and len(removed):
                effects.append(full["correct"].mean() - removed["correct"].iloc[0])
        assert value == pytest.approx(sum(effects) / len(effects))
    blocks = values.set_index(["problem", "message"])["blocks"]
    assert blocks[(items[0].id, 2)] == 2 and blocks[(items[0].id, 1)] == 3


def _matches(request, pool, replay, by_id) -> bool:
    from deliberation.experiments.dhd.protocol import problem_text
    from deliberation.experiments.dhd.replay import integrator_messages

    if request.stage != "dhd.integrator" or request.sample != replay.replicate:
        return False
    _, user = integrator_messages(problem_text(by_id[replay.problem_id]), pool, replay)
    return request.messages[-1].content == user


@pytest.mark.experiments
def test_valid_steps_in_wrong_messages_drive_the_wrong_helpful_share(tmp_path):
    low = _run_loo(tmp_path / "low", 150, dhd_step_skill_when_wrong=0.1)
    high = _run_loo(tmp_path / "high", 150, dhd_step_skill_when_wrong=0.95)
    low_share, high_share = (t.loc[("pooled", "wrong")] for t in (low, high))
    assert high_share["helpful_share"] > low_share["helpful_share"]
    assert high_share["share_low"] > low_share["share_high"], "intervals should separate"


@pytest.mark.experiments
def test_an_integrator_that_ignores_reasoning_gets_no_help_from_wrong_messages(tmp_path):
    shares = _run_loo(tmp_path, 150, dhd_uptake=0.0, dhd_error_uptake=0.0)
    wrong = shares.loc[("pooled", "wrong")]
    assert wrong["harmful"] > 0
    assert wrong["helpful"] == 0


@pytest.mark.parametrize("benchmark", ["jeebench", "scibench", "mascqa", "labbench", "omnimath"])
def test_real_benchmark_items_run_through_the_whole_protocol_as_noise(tmp_path, benchmark):
    """Loader, prompts, sim and grader together on three real items (the sim's answers to real
    problems are noise; only the plumbing is checked)."""
    from deliberation.experiments.dhd.run import load_problems
    from deliberation.io import paths

    shared = paths.shared_data_dir()
    if shared is None or not (shared / benchmark).exists():
        pytest.skip(f"../shared/data/{benchmark} not present")
    items = load_problems(benchmark, 3, root=shared / benchmark)
    by_id = {item.id: item for item in items}
    client = _client(tmp_path)
    pools, counts = build_pools(PROFILE, client, items, PoolStore(tmp_path / "pools"))
    assert counts.problems == 3 and counts.call_failures == 0 and counts.recruiter_failures == 0
    replays = [r for p in pools.values() for r in leave_one_out_design(p)]
    rows = run_replays(PROFILE, client, by_id, pools, replays)
    assert len(rows) == 3 * sum(k + 1 for k in (2, 3, 4, 5))  # one full call + K removals
    graded = rows[rows["valid"] == 1]
    assert set(graded["correct"].dropna()) <= {0, 1}
    # Anything the grader could not decide is an operational failure with its reason.
    assert (rows.loc[rows["valid"] == 0, "error"] != "").all()
    assert len(graded) >= len(rows) // 2


def test_a_second_run_of_the_whole_experiment_sends_no_model_call(tmp_path, monkeypatch):
    from deliberation.experiments.dhd.run import run_profile

    monkeypatch.setenv("DELIBERATION_CACHE_DIR", str(tmp_path / "cache"))
    profile = load_profile("smoke")
    backend = FailingSim(fail_when=lambda r: False, parameters=profile.options.parameters)
    client = _client(tmp_path, backend)
    first = run_profile(profile, client)
    sent = backend.sent
    assert sent > 0 and len(first.replays) > 0
    assert set(first.replays["arm"]) >= {"solo", "single", "full", "loo", "drop-1"}
    second = run_profile(profile, client)
    assert backend.sent == sent
    pd.testing.assert_frame_equal(first.replays, second.replays)
    pd.testing.assert_frame_equal(first.proposals, second.proposals)


def test_notebook_tables_are_recomputed_from_the_published_rows(tmp_path, monkeypatch):
    """What notebook 07 publishes (rows and proposals as CSV) is enough to rebuild its tables."""
    from deliberation.experiments.dhd import report
    from deliberation.experiments.dhd.run import run_profile

    monkeypatch.setenv("DELIBERATION_CACHE_DIR", str(tmp_path / "cache"))
    profile = load_profile("smoke")
    results = run_profile(profile, _client(tmp_path), limit=20)
    results.replays.to_csv(tmp_path / "rows.csv", index=False)
    results.proposals.to_csv(tmp_path / "proposals.csv", index=False)
    rows = pd.read_csv(tmp_path / "rows.csv", dtype={"message": "Int64", "block": "Int64"})
    proposals = pd.read_csv(tmp_path / "proposals.csv", dtype={"proposal_correct": "Int64"})
    live = report.flip_share_table(
        report.labelled_effects(results.replays, results.proposals), n_resamples=100
    )
    again = report.flip_share_table(report.labelled_effects(rows, proposals), n_resamples=100)
    pd.testing.assert_frame_equal(live, again, check_dtype=False)
    counts = report.cells_table(report.labelled_effects(rows, proposals))
    loo = counts[counts["design"] == "loo"]
    assert (
        loo[["helpful", "neutral", "harmful", "unscored"]].to_numpy().sum()
        == (rows["arm"] == "loo").sum()
    )


@pytest.mark.parametrize("limit", [0, -1])
def test_a_problem_limit_that_is_not_positive_is_refused_not_read_as_100(limit):
    from deliberation.experiments.dhd.run import load_problems

    with pytest.raises(ValueError, match="limit: must be a positive count"):
        load_problems(synthetic.BENCHMARK, limit)
    assert len(load_problems(synthetic.BENCHMARK, 3)) == 3


def test_the_recruiter_has_room_for_five_roles_whatever_the_profile_caps_free_text_at():
    from deliberation.experiments.dhd.protocol import RECRUITER, RECRUITER_MAX_TOKENS
    from deliberation.inference.generation import stage_request

    profile = load_profile("smollm2-135m-llamacpp")
    assert profile.sampling.max_tokens < RECRUITER_MAX_TOKENS
    request = stage_request(profile, RECRUITER, "Recruit five roles.")
    assert request.max_tokens == RECRUITER_MAX_TOKENS
