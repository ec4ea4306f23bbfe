"""Failed calls in natural discussions over HTTP: a failed turn fails its discussion (later
turns, final votes, transcript and memory decisions are not sent and their rows are failed, its
disclosure is not labelled), nothing failed is counted, and a rerun against a working server
sends exactly what is missing and gives the rows of a run that never failed."""

from __future__ import annotations

import pandas as pd
from helpers.failing_server import cached_openai_client, failing_server

from deliberation.experiments.memory.runs import crossprofile_tasks
from deliberation.experiments.natural.report import invalid_table, outcomes
from deliberation.experiments.natural.runs import run_natural_experiment
from deliberation.inference.cache import ResponseCache
from deliberation.inference.client import CachedClient

FAST = {"timeout_s": 10.0, "backoff_base_s": 0.005, "backoff_max_s": 0.02, "max_retries": 1}
TASKS = crossprofile_tasks("main", 3)[::8]  # one task of each of three templates
PREFIX = "natural.crossprofile"


def _run(url: str, cache_file):
    profile, client = cached_openai_client(url, cache_file, **FAST)
    result = run_natural_experiment(
        "crossprofile", TASKS, profile, client, variants=("plain",), policies=("R1", "B3"),
        progress=False,
    )  # fmt: skip
    return result, client


def _csv(frame: pd.DataFrame) -> str:
    return frame.to_csv(index=False, lineterminator="\n")


def test_a_failed_turn_fails_its_discussion_and_a_rerun_completes_it(tmp_path) -> None:
    doomed = TASKS[1]
    with failing_server() as server:
        clean, _ = _run(server.base_url, tmp_path / "clean.sqlite")
        server.reset()
        server.fail = lambda stage, body: (
            stage == f"{PREFIX}.round.1"
            and any(doomed.description in m["content"] for m in body["messages"])
        )
        first, client = _run(server.base_url, tmp_path / "c.sqlite")
        rows, facts = first.rows, first.disclosure
        mine = rows["task"] == doomed.id
        failed = rows["valid"].isna()
        assert len(client.failed) == 1  # one turn; nothing after it was sent
        assert server.posts[f"{PREFIX}.round.2"] == 4 * (len(TASKS) - 1)
        # Its initial votes and its every-fact decision do not read the discussion.
        kept = rows[mine & ~failed]
        assert set(zip(kept["kind"], kept["stage"].fillna(""), kept["policy"], strict=True)) == {
            ("vote", "initial", ""),
            ("decision", "", "every-fact"),
        }
        lost = rows[mine & failed]
        assert len(lost[lost["kind"] == "vote"]) == 4  # the final votes
        assert set(lost.loc[lost["kind"] == "decision", "policy"]) == {"transcript", "R1", "B3"}
        assert lost["correct"].isna().all() and (lost["key"] == "").all()
        assert not failed[~mine].any()
        assert (facts.loc[facts["task"] == doomed.id, "label"] == "failed").all()
        assert facts.loc[facts["task"] == doomed.id, "full"].isna().all()
        assert first.report.failed == 3  # its transcript, R1 and B3 decisions
        assert any("FAILED discussions: 1" in line for line in first.lines())
        # Every measure leaves failed rows out of numerator and denominator.
        measures = outcomes(rows, facts)
        decisions = measures[measures["measure"].str.startswith("decision: ")]
        assert len(decisions) == (rows["kind"] == "decision").sum() - 3
        assert measures["value"].notna().all()
        final = measures[measures["measure"] == "group share (final)"]
        assert len(final) == len(TASKS) - 1
        counts = invalid_table(rows)
        assert counts["failed"].sum() == failed.sum()
        assert counts["invalid"].sum() == (rows["valid"] == 0).sum()  # invalid apart from failed

        server.fail = lambda stage, body: False
        server.reset()
        again, _ = _run(server.base_url, tmp_path / "c.sqlite")
        assert server.posts[f"{PREFIX}.vote.initial"] == 0
        assert server.posts[f"{PREFIX}.round.1"] == 4  # the failed turn and the three after it
        assert server.posts[f"{PREFIX}.round.2"] == 4
        assert server.posts[f"{PREFIX}.vote.final"] == 4
        assert server.posts[f"{PREFIX}.decision"] == 3  # transcript, R1, B3
        assert server.posts[f"{PREFIX}.summary"] == 1
    assert _csv(again.rows) == _csv(clean.rows)
    assert _csv(again.disclosure) == _csv(clean.disclosure)


def test_failed_initial_votes_fail_alone_and_are_resent_alone(tmp_path) -> None:
    """Initial votes are private (no turn reads them): when they fail, only those vote rows
    fail; the discussion goes on, and a rerun sends exactly the failed votes."""
    from deliberation.inference.base import ChatResponse
    from deliberation.inference.sim import SimBackend
    from deliberation.profiles.profile import load_profile

    profile = load_profile("smoke")
    doomed = TASKS[2]

    class Sim(SimBackend):
        failing = True
        sent: list[str] = []

        def answer(self, request, **kwargs):
            self.sent.append(request.stage)
            if (
                self.failing
                and request.stage.endswith("vote.initial")
                and doomed.description in request.messages[-1].content
            ):
                return ChatResponse(text="", error="HTTP 503: overloaded")
            return super().answer(request, **kwargs)

    def run(backend, cache_file):
        client = CachedClient(
            backend, ResponseCache(cache_file), profile=profile.name, progress=False
        )
        return run_natural_experiment(
            "crossprofile", TASKS, profile, client, variants=("plain",), policies=("R1",),
            progress=False,
        )  # fmt: skip

    parameters = profile.options.parameters
    working = Sim(parameters=parameters)
    working.failing = False
    clean = run(working, tmp_path / "clean.sqlite")
    backend = Sim(parameters=parameters)
    backend.sent = []
    first = run(backend, tmp_path / "c.sqlite")
    failed = first.rows["valid"].isna()
    lost = first.rows[failed]
    assert len(lost) == 4 and set(lost["stage"]) == {"initial"} and (lost["kind"] == "vote").all()
    assert (lost["task"] == doomed.id).all() and lost["error"].str.contains("HTTP 503").all()
    assert not any(d.failed for d in first.discussions)
    assert "FAILED votes: 4" in " ".join(first.lines())
    backend.failing = False
    backend.sent.clear()
    again = run(backend, tmp_path / "c.sqlite")
    assert backend.sent == ["natural.crossprofile.vote.initial"] * 4
    assert _csv(again.rows) == _csv(clean.rows)
