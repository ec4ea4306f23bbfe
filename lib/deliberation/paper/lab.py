"""``deliberation lab --profile P`` (``make lab``): JupyterLab rooted at the repository, so
``build/executed/<profile>/`` (the notebooks with their outputs) is browsable beside
``notebooks/``. It opens on the profile's executed notebooks when they exist, else on
``notebooks/``; kernels get ``DELIBERATION_PROFILE`` (the notebooks' default profile, and
``show_memory``'s); as root, Jupyter's ``--allow-root`` is added (it refuses to start as root
without it). Any other Jupyter options pass through (``make lab LAB_ARGS="--port 8890"``)."""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from deliberation.io import paths

PROFILE_ENV = "DELIBERATION_PROFILE"


@dataclass(frozen=True)
class LabLaunch:
    argv: list[str]
    env: dict[str, str]
    opens: str  # the folder it opens on, relative to the repository


def lab_launch(profile: str, lab_args: str | Sequence[str] = ()) -> LabLaunch:
    """The ``jupyter lab`` command line and environment for ``profile`` (a name or a path)."""
    from deliberation.profiles.profile import load_profile

    root = paths.repo_root()
    executed = paths.build_dir() / "executed" / load_profile(profile).name
    start = executed if executed.is_dir() else root / "notebooks"
    opens = str(start.relative_to(root)) if start.is_relative_to(root) else str(start)
    jupyter = Path(sys.executable).with_name("jupyter")
    argv = [
        str(jupyter) if jupyter.is_file() else "jupyter",
        "lab",
        f"--ServerApp.root_dir={root}",
        f"--LabApp.default_url=/lab/tree/{opens}",
    ]
    if os.geteuid() == 0:
        argv.append("--allow-root")
    argv += shlex.split(lab_args) if isinstance(lab_args, str) else list(lab_args)
    return LabLaunch(argv, {**os.environ, PROFILE_ENV: profile}, opens)


def run_lab(profile: str, lab_args: str | Sequence[str] = ()) -> None:
    """Replace this process with JupyterLab (it keeps the terminal until Ctrl-C)."""
    launch = lab_launch(profile, lab_args)
    print(
        f"JupyterLab on {paths.repo_root()}, opening {launch.opens}/ (executed notebooks:"
        " build/executed/<profile>/)",
        flush=True,
    )
    os.execvpe(launch.argv[0], launch.argv, launch.env)
