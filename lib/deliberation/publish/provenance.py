"""Provenance sidecars: every table and figure says which profile, backend, model, parameters and
commit made it, and whether it is synthetic (made by the sim mechanism model, not a model).

What made an output is decided here, once (:func:`output_label`): the sim's synthetic label, a
real model's description from its profile (``Profile.label``: model, quantisation, engine and
version, "reduced grid"; see :mod:`deliberation.profiles.model_label`), no model, or released results.
Captions, figure titles and sidecars all carry that label.

Sidecars hold no timestamps, so the same profile, seed and commit give byte-identical files.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deliberation import __version__
from deliberation.inference import served_models
from deliberation.inference.failures import FailedCall, incomplete_note, logged_failures
from deliberation.io import paths
from deliberation.io.atomic import atomic_write_text, write_file_set
from deliberation.profiles.model_label import SYNTHETIC_LABEL, describe_model
from deliberation.profiles.profile import Profile

__all__ = ["SYNTHETIC_LABEL", "ReleasedSource", "output_label", "label_caption"]
_NO_MODEL_LABEL = "benchmark description (no model calls)"


@dataclass(frozen=True)
class ReleasedSource:
    """Results other people made with their own models and released, re-analysed here: an output
    made from them is theirs under every profile, never a run of the profile (nor the sim's)."""

    models: tuple[str, ...]
    repository: str  # owner/name on GitHub
    commit: str
    licence: str
    files: tuple[str, ...] = ()  # paths in the repository the output reads

    def label(self) -> str:
        return (
            f"authors' released results ({', '.join(self.models)}; "
            f"github.com/{self.repository} at {self.commit[:12]}), re-analysed"
        )

    def record(self) -> dict[str, Any]:
        return {
            "models": list(self.models),
            "repository": f"https://github.com/{self.repository}",
            "commit": self.commit,
            "licence": self.licence,
            "files": list(self.files),
        }


# What makes an output: edits (tracked or not, ignored files aside) under these folders make the
# checkout "dirty", because a rerun from the recorded commit would not reproduce the output.
_SOURCE_FOLDERS = ("lib", "params", "templates", "notebooks")


def git_state() -> tuple[str, bool]:
    """(commit, dirty) of the checkout, or ("unknown", False) outside git. Dirty means a change
    to a tracked file or an untracked (not ignored) file under :data:`_SOURCE_FOLDERS`."""
    root = paths.repo_root()
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=all", "--", *_SOURCE_FOLDERS],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown", False
    return commit, bool(status)


def output_label(
    profile: Profile, *, uses_model: bool = True, source: ReleasedSource | None = None
) -> str:
    """What made an output: the sim (synthetic), the profile's model as the profile describes
    it (``Profile.label``), no model at all (a table describing a benchmark, identical under
    every profile), or someone else's released results."""
    if source is not None:
        return source.label()
    if not uses_model:
        return _NO_MODEL_LABEL
    return profile.label


def label_caption(
    caption: str,
    profile: Profile,
    *,
    uses_model: bool = True,
    source: ReleasedSource | None = None,
) -> str:
    """Captions of model outputs carry :func:`output_label`, no exceptions: the synthetic
    label on the sim, the model's description on a real model; those of released results name
    their models and source. An output made while model calls of its notebook had failed
    (``make paper`` logs them) says it is incomplete, first."""
    if source is not None:
        return f"{caption} [{source.label()}]"
    if not uses_model:
        return caption
    caption = incomplete_note(logged_failures()) + caption
    return f"{caption} [{output_label(profile)}]"


def incomplete_record(calls: list[FailedCall]) -> dict[str, Any]:
    """The sidecar's ``incomplete`` entry: how many calls failed, and the first error."""
    return {"failed_calls": len(calls), "first_error": calls[0].line()}


def provenance_record(
    profile: Profile,
    *,
    notebook: str,
    caption: str,
    files: Mapping[str, Path],
    uses_model: bool = True,
    source: ReleasedSource | None = None,
) -> dict[str, Any]:
    """The sidecar's content; ``files`` maps each output's name to the path to hash (the
    temporary file while a set is being written). With ``source`` (released results) the
    backend is none and the model and revision are the release's."""
    commit, dirty = git_state()
    made_by: dict[str, Any] = {}
    if source is not None:
        uses_model = False
        made_by = {
            "backend": None,
            "model": ", ".join(source.models),
            "revision": source.commit,
            "source": source.record(),
        }
    failed = logged_failures() if uses_model else []
    incomplete: dict[str, Any] = {"incomplete": incomplete_record(failed)} if failed else {}
    if uses_model and not profile.synthetic:  # model file sha256, engine version, grid
        made_by["model_description"] = describe_model(profile).record()
    served = served_models.served_as(profile.model) if uses_model and source is None else []
    if served:  # the replies named another model (a snapshot, an accepted alias)
        made_by["served_as"] = served
    record = incomplete | {
        "profile": profile.name,
        "backend": profile.backend,
        "model": profile.model,
        "revision": profile.revision,
        "seed": profile.seed,
        "params_hash": profile.params_hash,
        "synthetic": profile.synthetic and uses_model,
        "uses_model": uses_model,
        "label": output_label(profile, uses_model=uses_model, source=source),
        "caption": label_caption(caption, profile, uses_model=uses_model, source=source),
        "notebook": notebook,
        "git_commit": commit,
        "git_dirty": dirty,
        "package_version": __version__,
        "files": {
            name: hashlib.sha256(path.read_bytes()).hexdigest() for name, path in files.items()
        },
    }
    return {**record, **made_by}


def sidecar_path(stem: Path) -> Path:
    return stem.with_name(stem.name + ".provenance.json")


# What names the checkout that wrote a set, not what it holds.
CHECKOUT_FIELDS = ("git_commit", "git_dirty")


def _keep_checkout(sidecar: Path, record: dict[str, Any]) -> dict[str, Any]:
    """``record``, with the existing sidecar's checkout fields when that is all that differs:
    rebuilding the same bytes at a later commit (a run, a replay into the tree) then leaves a
    committed set untouched, and only a build that changes what a set holds (publishing new
    results) writes a new commit into it."""
    try:
        old = json.loads(sidecar.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return record
    if not isinstance(old, dict) or any(f not in old for f in CHECKOUT_FIELDS):
        return record
    kept = {**record, **{f: old[f] for f in CHECKOUT_FIELDS}}
    return kept if kept == old else record


def write_output_set(
    stem: Path,
    writers: Mapping[str, Callable[[Path], object]],
    profile: Profile,
    *,
    notebook: str,
    caption: str,
    uses_model: bool = True,
    source: ReleasedSource | None = None,
) -> dict[str, Path]:
    """Write ``<stem>.<suffix>`` for each ``writers`` entry and the sidecar, as one set (all or
    none; see :func:`deliberation.io.atomic.write_file_set`). Returns paths by suffix, plus
    ``"provenance"``."""
    targets = {suffix: stem.with_suffix(f".{suffix}") for suffix in writers}

    sidecar = sidecar_path(stem)

    def make_sidecar(files: Mapping[str, Path]) -> str:
        record = provenance_record(
            profile,
            notebook=notebook,
            caption=caption,
            files=files,
            uses_model=uses_model,
            source=source,
        )
        return json.dumps(_keep_checkout(sidecar, record), indent=2, sort_keys=True) + "\n"

    write_file_set(
        {targets[suffix]: write for suffix, write in writers.items()},
        sidecar=sidecar,
        make_sidecar=make_sidecar,
    )
    return {**targets, "provenance": sidecar}


def check_output_set(sidecar: Path) -> list[str]:
    """Problems with a written set: files its sidecar lists that are missing or whose hash
    differs (empty when the set is whole)."""
    record = json.loads(sidecar.read_text(encoding="utf-8"))
    problems = []
    for name, digest in record["files"].items():
        path = sidecar.with_name(name)
        if not path.is_file():
            problems.append(f"{path}: missing")
        elif hashlib.sha256(path.read_bytes()).hexdigest() != digest:
            problems.append(f"{path}: differs from the hash in {sidecar.name}")
    return problems


def mark_incomplete(sidecar: Path, calls: list[FailedCall]) -> bool:
    """Mark an output made by a notebook whose run had failed calls as incomplete (its caption
    and an ``incomplete`` entry), when it is not marked yet; True when it changed."""
    record = json.loads(sidecar.read_text(encoding="utf-8"))
    if "incomplete" in record or not calls or not record.get("uses_model", True):
        return False
    record["incomplete"] = incomplete_record(calls)
    record["caption"] = incomplete_note(calls) + str(record.get("caption", ""))
    atomic_write_text(sidecar, json.dumps(record, indent=2, sort_keys=True) + "\n")
    return True
