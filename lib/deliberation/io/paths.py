"""Where things live: the repository root, profiles, outputs, caches and benchmark data.

Every location can be overridden by an environment variable so tests and CI write to
temporary folders and read the shared test data without touching the working tree. Each such
variable is read by :func:`folder_from_env`: a value that cannot be a folder (a file is there, a
part of it is a file, it is too long for the file system, it holds a control character) is a
one-line :class:`PathSettingError` naming the variable, before anything is written.
"""

from __future__ import annotations

import errno
import os
import unicodedata
from pathlib import Path

from deliberation.exit_codes import BAD_INPUT

_MARKER = "pyproject.toml"


class PathSettingError(ValueError):
    """An environment variable naming a folder that cannot be one (the message names it)."""

    exit_code = BAD_INPUT


def folder_from_env(name: str) -> Path | None:
    """The folder environment variable ``name`` names (resolved), None when it is unset or
    empty; :class:`PathSettingError` when it cannot be a folder."""
    value = os.environ.get(name)
    if not value:
        return None
    shown = value if len(value) <= 80 else f"{value[:60]}... ({len(value)} characters)"
    bad = next((c for c in value if unicodedata.category(c) in ("Cc", "Cf")), None)
    if bad is not None:
        raise PathSettingError(
            f"{name}={shown!r}: holds the control character U+{ord(bad):04X}; name a folder"
        )
    path = Path(value).expanduser()
    try:
        path = path.resolve()
        if path.exists() and not path.is_dir():
            raise PathSettingError(f"{name}={shown}: a file is there, not a folder; name a folder")
        for parent in path.parents:
            if parent.exists() and not parent.is_dir():
                raise PathSettingError(f"{name}={shown}: {parent} is a file, not a folder")
    except OSError as exc:
        why = "too long for the file system" if exc.errno == errno.ENAMETOOLONG else exc.strerror
        raise PathSettingError(f"{name}={shown}: not a usable folder ({why})") from None
    if any(len(part.encode()) > 255 for part in path.parts):
        raise PathSettingError(f"{name}={shown}: a part of it is too long for a file name")
    return path


def repo_root() -> Path:
    """The checkout this package was installed from (editable install), else the cwd's."""
    env = folder_from_env("DELIBERATION_ROOT")
    if env:
        return env
    here = Path(__file__).resolve()
    for parent in [*here.parents, *Path.cwd().resolve().parents, Path.cwd().resolve()]:
        if (parent / _MARKER).is_file() and (parent / "lib" / "deliberation").is_dir():
            return parent
    raise FileNotFoundError("cannot find the repository root (set DELIBERATION_ROOT)")


def params_dir() -> Path:
    return repo_root() / "params"


def templates_dir() -> Path:
    return repo_root() / "templates"


def output_root() -> Path:
    """Parent of ``figures/`` and ``tables/``; tests point it at a temporary folder."""
    return folder_from_env("DELIBERATION_OUTPUT_ROOT") or repo_root()


def build_dir() -> Path:
    """Executed notebooks, build stamps, the report and the benchmark table."""
    return folder_from_env("DELIBERATION_BUILD_DIR") or repo_root() / "build"


def run_rows(profile: str, experiment: str) -> Path:
    """Where ``deliberation run EXPERIMENT`` writes its rows without ``--out`` (its parent made):
    ``build/runs/<profile>/<experiment>_rows.csv``, where ``deliberation replies`` looks too."""
    folder = build_dir() / "runs" / profile
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{experiment}_rows.csv"


def cache_dir() -> Path:
    return folder_from_env("DELIBERATION_CACHE_DIR") or repo_root() / ".cache"


def external_data_dir() -> Path:
    """Benchmark files downloaded by ``make data``."""
    return folder_from_env("DELIBERATION_DATA_DIR") or repo_root() / "data" / "external"


def shared_data_dir() -> Path | None:
    """The public test copies in ``../shared/data`` beside the checkout, if present."""
    env = os.environ.get("DELIBERATION_SHARED_DATA")
    candidate = Path(env) if env else repo_root().parent / "shared" / "data"
    return candidate.resolve() if candidate.is_dir() else None
