"""Failed calls in memory runs (CrossProfile over HTTP): failed rows are never counted, rows
that need a failed call fail with it (and are not sent), a rerun against a working server sends
exactly the failed calls and gives the rows of a run that never failed; `deliberation run`
exits 3 naming the server."""

from __future__ import annotations

import hashlib

import pandas as pd
import pytest
from helpers.failing_server import cached_openai_client, failing_server
from helpers.serve_sim import openai_profile

from deliberation.cli import main
from deliberation.exit_codes import CALLS_FAILED
from deliberation.experiments.memory import run_from_profile
from deliberation.experiments.memory.analyses.accuracy import accuracy_table, differences
from deliberation.inference.cache import ResponseCache
from deliberation.inference.client import CachedClient
from deliberation.inference.openai_api import OpenAIBackend

FAST = {"timeout_s": 10.0, "backoff_base_s": 0.005, "backoff_max_s": 0.02, "max_retries": 1}
GRID = {"policies": ("R1", "B3", "R1-rel"), "budgets": (0.6,), "tags": ("keep",), "item_limit": 0}


def _run(url: str, cache_file):
    profile, client = cached_openai_client(url, cache_file, **FAST)
    result = run_from_profile(
        "crossprofile", profile, limit=1, client=client, progress=False, **GRID
    )
    return result, client


def _csv(frame: pd.DataFrame) -> str:
    return frame.to_csv(index=False, lineterminator="\n")


def _never_failed(server, tmp_path):
    """The same run against the same server (the URL is in the key), which never failed."""
    server.fail_stages()
    result, _ = _run(server.base_url, tmp_path / "clean.sqlite")
    server.reset()
    return result


def _one_in_three(stage: str, body: dict) -> bool:
    text = body["messages"][-1]["content"]
    return stage.endswith(".decision") and hashlib.sha256(text.encode()).digest()[0] % 3 == 0


@pytest.mark.parametrize(
    ("failing", "dependent"),
    [
        ("crossprofile.summary", "B3"),
        ("crossprofile.relevance", "R1-rel"),
    ],
)
def test_a_failed_input_fails_its_decisions_unsent_and_a_rerun_sends_exactly_those(
    failing, dependent, tmp_path
) -> None:
    cache_file = tmp_path / "c.sqlite"
    with failing_server() as server:
        never_failed = _never_failed(server, tmp_path)
        server.fail_stages(failing)
        first, client = _run(server.base_url, cache_file)
        rows = first.frame
        failed = rows["valid"].isna()
        # Exactly the dependent policy's rows failed; they were never sent (no key).
        assert set(rows.loc[failed, "policy"]) == {dependent}
        assert failed.sum() == (rows["policy"] == dependent).sum() == 8
        assert (rows.loc[failed, "key"] == "").all()
        assert rows.loc[failed, "kept_tokens"].isna().all()
        assert rows.loc[failed, "error"].str.contains("input failed, not sent").all()
        assert first.report.failed == 8  # (the sim may answer a decision invalidly)
        assert len(client.failed) == 8 and client.failed.first.server in server.base_url
        # No decision of the failed policy reached the server.
        sent_decisions = server.posts["crossprofile.decision"]
        answered = (~failed).sum()
        assert sent_decisions <= answered
        # Failed rows are in no accuracy; the table counts them.
        table = accuracy_table(rows, ["policy"], n_resamples=50)
        assert set(table["policy"]) == {"R1", "B3", "R1-rel"} - {dependent}
        assert table["failed"].sum() == 0 and table["n_rows"].sum() == answered

        server.fail_stages()  # the server is back
        server.reset()
        again, _ = _run(server.base_url, cache_file)
        assert server.posts[failing] == 8  # the failed calls, once each
        # ... and the decisions that depended on them (once per prompt not already answered:
        # a R1-rel memory can equal R1's).
        redone = again.frame.loc[failed.to_numpy(), "key"]
        new_prompts = set(redone) - set(rows.loc[~failed, "key"])
        assert 1 <= len(new_prompts) <= 8
        assert server.posts["crossprofile.decision"] == len(new_prompts)
        assert sum(server.posts.values()) == 8 + len(new_prompts)
    assert _csv(again.frame) == _csv(never_failed.frame)


def test_failed_decision_calls_are_not_counted_and_are_retried_alone(tmp_path) -> None:
    cache_file = tmp_path / "c.sqlite"
    with failing_server() as server:
        never_failed = _never_failed(server, tmp_path)
        server.fail = _one_in_three
        first, client = _run(server.base_url, cache_file)
        rows = first.frame
        failed = rows["valid"].isna()
        assert 0 < failed.sum() < len(rows)
        assert (rows.loc[failed, "key"] != "").all()  # sent, no usable reply
        assert rows.loc[failed, "correct"].isna().all()
        assert rows.loc[failed, "error"].str.startswith("call failed").all()
        assert first.report.failed == failed.sum()
        table = accuracy_table(rows, ["policy"], n_resamples=50)
        assert table["failed"].sum() == failed.sum()
        assert table["n_rows"].sum() == (~failed).sum()
        # Accuracy over the answered rows only.
        r1 = rows[(rows["policy"] == "R1") & ~failed]
        got = table.loc[table["policy"] == "R1", "accuracy"].item()
        assert got == pytest.approx(100 * r1["correct"].astype(float).mean())
        # Differences leave failed rows out too (as if they were never there).
        pair = [("R1", "B3")]
        assert differences(rows, pair, n_resamples=50).equals(
            differences(rows[~failed], pair, n_resamples=50)
        )
        failed_keys = set(rows.loc[failed, "key"])

        server.fail_stages()
        server.reset()
        again, _ = _run(server.base_url, cache_file)
        assert sum(server.posts.values()) == len(failed_keys)
    assert _csv(again.frame) == _csv(never_failed.frame)


def _profile_file(tmp_path, url: str) -> str:
    path = tmp_path / "down.yaml"
    path.write_text(
        "name: down\nbackend: openai\nmodel: sim-mechanism\n"
        f"openai:\n  base_url: {url}\n  max_retries: 6\n  timeout_s: 10\n"
        "  backoff_base_s: 0.01\n  backoff_max_s: 0.02\n  concurrency: 16\n"
        # No pre-flight: these tests are about the run's own calls (the pre-flight's refusal is
        # tested in test_model_server.py).
        "  preflight: false\n"
    )
    return str(path)


def test_run_exits_3_when_every_post_fails_after_few_requests(tmp_path, capsys) -> None:
    with failing_server() as server:
        server.message = "model 'sim-mechanism' is not loaded"
        server.fail = lambda stage, body: True
        code = main(
            ["run", "crossprofile", "--profile", _profile_file(tmp_path, server.base_url),
             "--limit", "1", "--policies", "R1,B3,R1-rel", "--budgets", "0.6", "--tags", "keep",
             "--item-limit", "0", "--cache", str(tmp_path / "c.sqlite"),
             "--out", str(tmp_path / "rows.csv"), "--no-progress"]
        )  # fmt: skip
        sent = server.total_posts
    out = capsys.readouterr().out
    assert code == CALLS_FAILED
    # relevance, summary, then decisions of R1 (the rest depend on failed calls): each stage
    # stops after at most 15 requests.
    assert sent <= 3 * 15
    assert "FAILED:" in out and "model 'sim-mechanism' is not loaded" in out
    assert server.base_url in out and "`model`" in out
    assert "run the same command again" in out
    rows = pd.read_csv(tmp_path / "rows.csv")
    assert (rows["outcome"] == "failed").all() and rows["correct"].isna().all()
    assert (tmp_path / "rows.csv.provenance.json").is_file()


def test_run_over_serve_sim_is_labelled_synthetic_and_counts_what_was_sent(tmp_path, capsys):
    with failing_server() as server:
        args = ["run", "crossprofile", "--profile", _profile_file(tmp_path, server.base_url),
                "--limit", "1", "--policies", "R1", "--budgets", "0.6", "--tags", "keep",
                "--item-limit", "0", "--cache", str(tmp_path / "c.sqlite"),
                "--out", str(tmp_path / "rows.csv"), "--no-progress"]  # fmt: skip
        assert main(args) == 0
        first = capsys.readouterr().out
        sent = server.total_posts
        assert main(args) == 0
        second = capsys.readouterr().out
    assert "synthetic (sim backend)" in first
    assert f"{sent} sent" in first and "0 sent" in second
    rows = pd.read_csv(tmp_path / "rows.csv")
    assert list(rows.columns[:2]) == ["profile", "model"] and "request_key" in rows
    assert "key" not in rows and (rows["gold"] != "").all()
    assert set(rows["outcome"]) <= {"answered", "invalid"}  # the sim answers every call
    assert "accuracy (%) by policy and budget" in first


def test_stage_counts_say_what_was_sent_and_answered_after_the_fact(tmp_path) -> None:
    """ "sent" is counted after the batch: a stage whose every call failed sent (and got
    answered) nothing, and says how many failed."""
    from helpers.serve_sim import arithmetic_requests

    from deliberation.inference.batch import StageCounts, send

    with failing_server() as server:
        profile = openai_profile(server.base_url, **FAST)
        client = CachedClient(
            OpenAIBackend.from_profile(profile),
            ResponseCache(tmp_path / "c.sqlite"),
            profile=profile.name,
            progress=False,
        )
        counts: list[StageCounts] = []
        server.fail = lambda stage, body: "What is 1 +" not in body["messages"][-1]["content"]
        send(client, arithmetic_requests(4), "smoke.arithmetic", counts)
        server.fail = lambda stage, body: False
        send(client, arithmetic_requests(4), "smoke.arithmetic", counts)
    first, second = counts
    assert (first.cached, first.sent, first.failed) == (0, 1, 3)
    assert "1 sent, 3 FAILED" in first.line()
    assert (second.cached, second.sent, second.failed) == (1, 3, 0)
    assert "FAILED" not in second.line()


def test_run_dhd_exits_3_when_calls_fail(tmp_path, capsys) -> None:
    with failing_server() as server:
        server.fail = lambda stage, body: stage == "dhd.hypothesizer"
        code = main(
            ["run", "dhd", "--profile", _profile_file(tmp_path, server.base_url),
             "--benchmarks", "synthetic", "--limit", "2", "--stage", "pool",
             "--cache", str(tmp_path / "c.sqlite"), "--out", str(tmp_path / "rows.csv"),
             "--no-progress"]
        )  # fmt: skip
    out = capsys.readouterr().out
    assert code == CALLS_FAILED
    assert "FAILED pools: 2" in out and server.base_url in out


def test_run_dhd_rows_carry_profile_model_gold_outcome_and_a_sidecar(tmp_path, capsys):
    code = main(["run", "dhd", "--profile", "smoke", "--limit", "2", "--stage", "replay",
                 "--cache", str(tmp_path / "c.sqlite"), "--out", str(tmp_path / "dhd.csv"),
                 "--no-progress"])  # fmt: skip
    assert code == 0
    rows = pd.read_csv(tmp_path / "dhd.csv", keep_default_na=False)
    assert list(rows.columns[:2]) == ["profile", "model"] and "request_key" in rows
    assert (rows["gold"] != "").all() and set(rows["outcome"]) == {"answered"}
    assert (tmp_path / "dhd.csv.provenance.json").is_file()
    assert "accuracy (%) by replay arm" in capsys.readouterr().out
