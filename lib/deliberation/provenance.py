"""Provenance sidecars: every table and figure says which profile, backend, model, parameters and
commit made it, and whether it is synthetic (made by the sim mechanism model, not a model).

Sidecars hold no timestamps, so the same profile, seed and commit give byte-identical files.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path
from typing import Any

from deliberation import __version__, paths
from deliberation.atomic import atomic_write_text
from deliberation.params import Profile

SYNTHETIC_LABEL = "synthetic (sim backend)"
NO_MODEL_LABEL = "benchmark description (no model calls)"


# What makes an output: edits (tracked or not, ignored files aside) under these folders make the
# checkout "dirty", because a rerun from the recorded commit would not reproduce the output.
SOURCE_FOLDERS = ("lib", "params", "templates", "notebooks")


def git_state() -> tuple[str, bool]:
    """(commit, dirty) of the checkout, or ("unknown", False) outside git. Dirty means a change
    to a tracked file or an untracked (not ignored) file under :data:`SOURCE_FOLDERS`."""
    root = paths.repo_root()
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=all", "--", *SOURCE_FOLDERS],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown", False
    return commit, bool(status)


def output_label(profile: Profile, *, uses_model: bool = True) -> str:
    """What made an output: the sim (synthetic), a named model, or no model at all (a table
    describing a benchmark, identical under every profile)."""
    if not uses_model:
        return NO_MODEL_LABEL
    return SYNTHETIC_LABEL if profile.synthetic else f"model output ({profile.model})"


def label_caption(caption: str, profile: Profile, *, uses_model: bool = True) -> str:
    """Captions of sim-made outputs carry the synthetic label; no exceptions."""
    if uses_model and profile.synthetic:
        return f"{caption} [{SYNTHETIC_LABEL}]"
    return caption


def provenance_record(
    profile: Profile, *, notebook: str, caption: str, files: list[Path], uses_model: bool = True
) -> dict[str, Any]:
    commit, dirty = git_state()
    return {
        "profile": profile.name,
        "backend": profile.backend,
        "model": profile.model,
        "revision": profile.revision,
        "seed": profile.seed,
        "params_hash": profile.params_hash,
        "synthetic": profile.synthetic and uses_model,
        "uses_model": uses_model,
        "label": output_label(profile, uses_model=uses_model),
        "caption": label_caption(caption, profile, uses_model=uses_model),
        "notebook": notebook,
        "git_commit": commit,
        "git_dirty": dirty,
        "package_version": __version__,
        "files": {f.name: hashlib.sha256(f.read_bytes()).hexdigest() for f in files},
    }


def write_sidecar(
    stem: Path,
    profile: Profile,
    *,
    notebook: str,
    caption: str,
    files: list[Path],
    uses_model: bool = True,
) -> Path:
    record = provenance_record(
        profile, notebook=notebook, caption=caption, files=files, uses_model=uses_model
    )
    target = stem.with_name(stem.name + ".provenance.json")
    atomic_write_text(target, json.dumps(record, indent=2, sort_keys=True) + "\n")
    return target
