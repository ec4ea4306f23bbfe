"""Failed calls in DHD over HTTP: a pool holding a failed recruiter or hypothesizer call is not
stored and none of its replays runs; a rerun after the server is back sends exactly the failed
calls (and the replays that waited for them) and gives the rows of a run that never failed."""

from __future__ import annotations

import pandas as pd
import pytest
from helpers.failing_server import failing_server
from helpers.serve_sim import openai_profile

from deliberation.experiments.dhd import synthetic
from deliberation.experiments.dhd.pool import PoolStore
from deliberation.experiments.dhd.prompts import (
    HYPOTHESIZER_STAGE,
    INTEGRATOR_STAGE,
    RECRUITER_STAGE,
)
from deliberation.experiments.dhd.protocol import problem_text
from deliberation.experiments.dhd.run import run_dhd
from deliberation.inference.cache import ResponseCache
from deliberation.inference.client import CachedClient
from deliberation.inference.openai_api import OpenAIBackend

FAST = {"timeout_s": 10.0, "backoff_base_s": 0.005, "backoff_max_s": 0.02, "max_retries": 1}
ITEMS = synthetic.synthetic_bank(4, seed=3)


def _run(url: str, folder):
    profile = openai_profile(url, **FAST)
    client = CachedClient(
        OpenAIBackend.from_profile(profile),
        ResponseCache(folder / "cache.sqlite"),
        profile=profile.name,
        progress=False,
    )
    results = run_dhd(profile, client, ITEMS, folder / "pools", stages=("pool", "replay"))
    return results, client


def _csv(frame: pd.DataFrame) -> str:
    return frame.to_csv(index=False, lineterminator="\n")


def _about(item):
    text = problem_text(item)
    return lambda body: any(text in m["content"] for m in body.get("messages", []))


@pytest.mark.parametrize("stage", [HYPOTHESIZER_STAGE, RECRUITER_STAGE])
def test_a_pool_with_a_failed_call_is_not_stored_nor_replayed_and_a_rerun_completes_it(
    stage, tmp_path
) -> None:
    doomed = ITEMS[1]
    about = _about(doomed)
    with failing_server() as server:
        clean, _ = _run(server.base_url, tmp_path / "clean")
        server.reset()
        server.fail = lambda s, body: s == stage and about(body)
        first, client = _run(server.base_url, tmp_path / "run")
        store = PoolStore(tmp_path / "run" / "pools")
        assert store.get(doomed.benchmark, doomed.id) is None  # not stored as final
        assert all(store.get(i.benchmark, i.id) is not None for i in ITEMS if i is not doomed)
        assert doomed.id not in set(first.replays["problem"])  # no replay over a failed pool
        assert doomed.id not in first.pools
        assert first.pool_counts.failed_pools == 1
        failed_calls = len(client.failed)
        assert failed_calls == (5 if stage == HYPOTHESIZER_STAGE else 1)
        assert any("FAILED pools: 1" in line for line in first.lines())
        # The other problems' rows are those of the run that never failed.
        others = clean.replays[clean.replays["problem"] != doomed.id].reset_index(drop=True)
        assert _csv(first.replays) == _csv(others)

        server.fail = lambda s, body: False
        server.reset()
        again, _ = _run(server.base_url, tmp_path / "run")
        integrator = clean.replays.loc[clean.replays["problem"] == doomed.id, "key"]
        assert server.posts[stage] == failed_calls  # the failed calls, once each
        if stage == RECRUITER_STAGE:  # the hypothesizers waited for the recruiter
            assert server.posts[HYPOTHESIZER_STAGE] == 5
        else:
            assert server.posts[RECRUITER_STAGE] == 0
        assert server.posts[INTEGRATOR_STAGE] == integrator.nunique()
    assert store.get(doomed.benchmark, doomed.id) is not None
    assert _csv(again.replays) == _csv(clean.replays)
    assert _csv(again.proposals) == _csv(clean.proposals)


def test_a_pool_stored_with_failures_by_an_older_version_is_rebuilt(tmp_path) -> None:
    from dataclasses import replace

    with failing_server() as server:
        first, _ = _run(server.base_url, tmp_path)
        store = PoolStore(tmp_path / "pools")
        pool = store.get(ITEMS[0].benchmark, ITEMS[0].id)
        broken = replace(
            pool, messages=(replace(pool.messages[0], raw="", error="HTTP 500"), *pool.messages[1:])
        )
        store.path(pool.benchmark, pool.problem_id).write_text(broken.to_json())
        server.reset()
        again, _ = _run(server.base_url, tmp_path)
        assert server.posts[HYPOTHESIZER_STAGE] == 0  # its answers are in the cache
    assert store.get(pool.benchmark, pool.problem_id) == pool
    assert _csv(again.replays) == _csv(first.replays)
