"""Notebook 00 executed again where the check needs a run of its own: with a fresh cache (its
tables byte-identical to the session build's), and on the openai backend against serve-sim (a
planted API key reaches no output, cache or executed notebook)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.notebooks import execute, tables


def test_same_profile_and_seed_give_byte_identical_tables(in_smoke_build, tmp_path):
    # A fresh cache, so this run recomputes rather than replaying the build's answers.
    execute("00_smoke.ipynb", tmp_path / "again", tmp_path / "cache-again")
    again = tables(tmp_path / "again")
    built = Path(in_smoke_build["env"]["DELIBERATION_OUTPUT_ROOT"])
    assert any(name.endswith("smoke_arithmetic.provenance.json") for name in again)
    assert again == {name: (built / name).read_bytes() for name in again}


def test_a_planted_api_key_reaches_no_output_cache_or_executed_notebook(tmp_path, monkeypatch):
    """The smoke notebook on the openai backend, against serve-sim that demands the key."""
    import uuid

    from helpers.serve_sim import SIM_MODEL

    from deliberation.testing import sim_server_in_thread

    key = f"sk-planted-{uuid.uuid4().hex}"
    monkeypatch.setenv("DELIB_PLANTED_KEY", key)
    with sim_server_in_thread(require_key_env="DELIB_PLANTED_KEY") as server:
        profile = tmp_path / "planted.yaml"
        profile.write_text(
            "name: planted\nbackend: openai\n"
            f"model: {SIM_MODEL}\n"
            f"openai: {{base_url: '{server.base_url}', api_key_env: DELIB_PLANTED_KEY,"
            " max_retries: 1, timeout_s: 10}\n"
        )
        executed = execute(
            "00_smoke.ipynb", tmp_path / "out", tmp_path / "cache", profile=str(profile)
        )
        answered = server.stats()["answered"]
    assert answered > 0  # the key was sent: the server refuses calls without it
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p != profile]
    assert executed in written and any(p.suffix == ".sqlite" for p in written)
    for path in written:
        assert key.encode() not in path.read_bytes(), path


@pytest.mark.parametrize(
    ("notebook", "parameters", "error", "message"),
    [
        ("03_crossprofile_h1_h3.ipynb", {"n_resamples": "abc"}, "NotebookParameterError",
         "notebook parameter n_resamples: expected an integer from 2 to 1,000,000, got str 'abc'"),
        ("02_hiddenbench.ipynb", {"budgets": "0.4,0.6"}, "NotebookParameterError",
         "notebook parameter budgets: expected a budget fraction r in (0, 1]"),
        ("07_dhd_replay.ipynb", {"profile": 123}, "ProfileError",
         "profile: expected a profile name or a path to a profile file, got int 123"),
    ],
    ids=["n_resamples", "budgets", "profile"],
)  # fmt: skip
def test_a_wrong_parameter_stops_the_notebook_at_entry_naming_it(
    notebook, parameters, error, message, tmp_path
):
    """papermill -p passes what it parsed: a wrong type is refused by the first library call,
    naming the parameter, before any work (no model call, no output)."""
    from papermill.exceptions import PapermillExecutionError

    with pytest.raises(PapermillExecutionError) as failed:
        execute(notebook, tmp_path / "out", tmp_path / "cache", **parameters)
    assert failed.value.ename == error and message in failed.value.evalue
    assert not (tmp_path / "out" / "tables").exists() and not (tmp_path / "cache").exists()
