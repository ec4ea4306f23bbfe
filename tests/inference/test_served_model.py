"""The model name a reply gives: kept with the answer when it is not the profile's (a dated
snapshot, an accepted alias), named in the provenance of every output made from it (sent or
cached) and in the run's summary; with ``openai.strict_model`` any other name fails the call."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from helpers.failing_server import failing_server
from helpers.serve_sim import arithmetic_requests, openai_profile

from deliberation.inference import served_models
from deliberation.inference.cache import ResponseCache
from deliberation.inference.client import CachedClient
from deliberation.inference.openai_api import ModelMismatchError, OpenAIBackend
from deliberation.profiles.profile import ProfileError, load_profile
from deliberation.publish.provenance import provenance_record

SNAPSHOT = "sim-mechanism-2024-08-06"
FAST = {"timeout_s": 5.0, "backoff_base_s": 0.005, "backoff_max_s": 0.02, "max_retries": 1}


def _reply(model: str) -> bytes:
    return json.dumps({
        "id": "x", "object": "chat.completion", "created": 0, "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Answer: 7"},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1},
    }).encode()  # fmt: skip


def _client(url, cache_file, **options):
    profile = openai_profile(url, **{**FAST, **options})
    backend = OpenAIBackend.from_profile(profile)
    return profile, CachedClient(backend, ResponseCache(cache_file), profile=profile.name,
                                 progress=False)  # fmt: skip


def _provenance(profile, tmp_path):
    table = tmp_path / "t.csv"
    table.write_text("a\n1\n")
    return provenance_record(profile, notebook="n", caption="c", files={"t.csv": table})


def test_a_snapshot_name_is_kept_with_the_answer_and_named_in_provenance_sent_or_cached(
    tmp_path, caplog
):
    cache_file = tmp_path / "c.sqlite"
    with failing_server() as server:
        server.raw = _reply(SNAPSHOT)
        server.fail = lambda stage, body: True  # every reply names the snapshot
        profile, client = _client(server.base_url, cache_file)
        with caplog.at_level(logging.WARNING):
            answers = client.generate(arithmetic_requests(3))
    assert all(a.ok and a.served_model == SNAPSHOT for a in answers)
    warned = [r for r in caplog.records if "answers as model" in r.getMessage()]
    assert len(warned) == 1 and "strict_model" in warned[0].getMessage()
    assert client.served_as == {SNAPSHOT}
    assert _provenance(profile, tmp_path)["served_as"] == [SNAPSHOT]
    served_models.clear()  # a new process: only the cache knows
    with ResponseCache(cache_file) as cache:
        rerun = CachedClient(client.backend, cache, profile=profile.name, progress=False)
        cached = rerun.generate(arithmetic_requests(3))
    assert all(a.cached and a.served_model == SNAPSHOT for a in cached)
    assert _provenance(profile, tmp_path)["served_as"] == [SNAPSHOT]


def test_the_same_name_adds_nothing_to_the_answer_or_the_provenance(tmp_path):
    with failing_server() as server:
        profile, client = _client(server.base_url, tmp_path / "c.sqlite")
        (answer,) = client.generate(arithmetic_requests(1))
    assert answer.ok and answer.served_model is None
    assert "served_model" not in answer.to_json()  # stored bytes as before the field existed
    assert "served_as" not in _provenance(profile, tmp_path)


def test_strict_model_fails_a_snapshot_reply_and_stores_nothing(tmp_path):
    cache_file = tmp_path / "c.sqlite"
    with failing_server() as server:
        server.raw = _reply(SNAPSHOT)
        server.fail = lambda stage, body: True
        _, client = _client(server.base_url, cache_file, strict_model=True)
        (failed,) = client.generate(arithmetic_requests(1))
        assert not failed.ok and "strict_model is true" in failed.error and SNAPSHOT in failed.error
        assert client.cache.keys() == set() and len(client.failed) == 1
        with pytest.raises(ModelMismatchError, match="openai.strict_model is true"):
            client.backend.preflight()


def test_strict_model_and_allow_model_alias_together_are_refused(tmp_path):
    source = load_profile("smollm2-135m-llamacpp").source
    text = Path(source).read_text(encoding="utf-8")
    text = text.replace(
        "openai:\n", "openai:\n  strict_model: true\n  allow_model_alias: true\n", 1
    )
    profile = tmp_path / "both.yaml"
    profile.write_text(text)
    with pytest.raises(ProfileError, match="strict_model and allow_model_alias contradict"):
        load_profile(str(profile))


def test_a_served_name_survives_export_and_import(tmp_path):
    from deliberation.inference.published import export_responses, import_responses

    with failing_server() as server:
        server.raw = _reply(SNAPSHOT)
        server.fail = lambda stage, body: True
        profile, client = _client(server.base_url, tmp_path / "c.sqlite")
        client.generate(arithmetic_requests(2))
        client.cache.close()
        done = export_responses(
            profile, out=tmp_path / "r.jsonl.gz", cache_file=tmp_path / "c.sqlite"
        )
        import_responses(done.path, profile, cache_file=tmp_path / "d.sqlite")
    with ResponseCache(tmp_path / "d.sqlite") as cache:
        served = cache.get_many(cache.keys())
    assert {r.served_model for r in served.values()} == {SNAPSHOT}


def test_the_run_summary_names_the_served_model(monkeypatch, tmp_path, capsys):
    from deliberation import experiments
    from deliberation.cli import main

    monkeypatch.setattr(experiments, "REGISTRY", list(experiments.REGISTRY))
    from toy_experiment.experiment import EXPERIMENT

    experiments.register_experiment(EXPERIMENT)
    with failing_server() as server:
        server.raw = _reply(SNAPSHOT)
        server.fail = lambda stage, body: True
        profile = tmp_path / "snapshot.yaml"
        profile.write_text(
            f"backend: openai\nmodel: sim-mechanism\nopenai:\n  base_url: {server.base_url}\n"
            "  max_retries: 0\n"
        )
        out = tmp_path / "rows.csv"
        argv = ["run", "toy", "--profile", str(profile), "--items", "2", "--no-progress"]
        assert main([*argv, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert (
        f"model: the server answered as {SNAPSHOT} for the profile's `model: sim-mechanism`"
        in printed
    )
