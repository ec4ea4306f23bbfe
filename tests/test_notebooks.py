"""Notebooks through the real executor (papermill), with the smoke profile injected."""

from __future__ import annotations

import os
from pathlib import Path

import papermill as pm
import pytest

from deliberation.paths import repo_root

NOTEBOOKS = repo_root() / "notebooks"


def execute(name: str, out_root: Path, cache_dir: Path, **parameters) -> Path:
    """Run one notebook headlessly with its outputs and cache under the given folders."""
    env = {"DELIBERATION_OUTPUT_ROOT": str(out_root), "DELIBERATION_CACHE_DIR": str(cache_dir)}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        out_root.mkdir(parents=True, exist_ok=True)
        executed = out_root / f"executed-{name}"
        pm.execute_notebook(
            str(NOTEBOOKS / name),
            str(executed),
            parameters={"profile": "smoke", **parameters},
            cwd=str(NOTEBOOKS),
            kernel_name="python3",
            progress_bar=False,
        )
        return executed
    finally:
        for key, value in old.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _tables(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted((root / "tables").rglob("*"))
        if p.is_file()
    }


@pytest.mark.slow
def test_same_profile_and_seed_give_byte_identical_tables(tmp_path):
    # Fresh caches both times, so the second run recomputes rather than replaying the first.
    execute("00_smoke.ipynb", tmp_path / "a", tmp_path / "cache-a")
    execute("00_smoke.ipynb", tmp_path / "b", tmp_path / "cache-b")
    first, second = _tables(tmp_path / "a"), _tables(tmp_path / "b")
    assert first and first == second
    assert any(name.endswith("smoke_arithmetic.provenance.json") for name in first)


@pytest.mark.slow
def test_a_planted_api_key_reaches_no_output_cache_or_executed_notebook(tmp_path, monkeypatch):
    """The smoke notebook on the openai backend, against serve-sim that demands the key."""
    import uuid

    from serve_sim_fixture import SIM_MODEL

    from deliberation.inference.testing import sim_server_in_thread

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
