"""Where things live: the repository root, profiles, outputs, caches and benchmark data.

Every location can be overridden by an environment variable so tests and CI write to
temporary folders and read the shared test data without touching the working tree.
"""

from __future__ import annotations

import os
from pathlib import Path

_MARKER = "pyproject.toml"


def repo_root() -> Path:
    """The checkout this package was installed from (editable install), else the cwd's."""
    env = os.environ.get("DELIBERATION_ROOT")
    if env:
        return Path(env).resolve()
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
    env = os.environ.get("DELIBERATION_OUTPUT_ROOT")
    return Path(env).resolve() if env else repo_root()


def build_dir() -> Path:
    """Executed notebooks, build stamps, the report and the benchmark table."""
    env = os.environ.get("DELIBERATION_BUILD_DIR")
    return Path(env).resolve() if env else repo_root() / "build"


def run_rows(profile: str, experiment: str) -> Path:
    """Where ``deliberation run EXPERIMENT`` writes its rows without ``--out`` (its parent made):
    ``build/runs/<profile>/<experiment>_rows.csv``, where ``deliberation replies`` looks too."""
    folder = build_dir() / "runs" / profile
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"{experiment}_rows.csv"


def cache_dir() -> Path:
    env = os.environ.get("DELIBERATION_CACHE_DIR")
    return Path(env).resolve() if env else repo_root() / ".cache"


def external_data_dir() -> Path:
    """Benchmark files downloaded by ``make data``."""
    env = os.environ.get("DELIBERATION_DATA_DIR")
    return Path(env).resolve() if env else repo_root() / "data" / "external"


def shared_data_dir() -> Path | None:
    """The public test copies in ``../shared/data`` beside the checkout, if present."""
    env = os.environ.get("DELIBERATION_SHARED_DATA")
    candidate = Path(env) if env else repo_root().parent / "shared" / "data"
    return candidate.resolve() if candidate.is_dir() else None
