"""``make lab`` (``deliberation lab``): JupyterLab on ``notebooks/``, with a kernel that has the
package.

The lab runs in this Python's environment and opens on ``notebooks/`` (the paper's notebooks,
and ``notebooks/executed/<profile>/``: the published profiles' executed notebooks with their
outputs), rooted at the repository. Its kernels are this environment's Python: the lab extra's
install registers it as the ``python3`` kernel under ``sys.prefix`` (``ipykernel install
--sys-prefix``, the Makefile's lab stamp), and ``JUPYTER_PATH`` puts that folder first, so a
``python3`` kernel of another Python in the user's Jupyter folders cannot shadow it. Kernels
get ``DELIBERATION_PROFILE``, which the notebooks' ``parameters`` cell reads.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

from deliberation.io import paths

START = "notebooks"  # the folder the lab opens on, relative to its root


def lab_command(
    profile: str, extra: Sequence[str] = (), root: Path | None = None
) -> tuple[list[str], dict[str, str]]:
    """The command line and environment of the lab (see the module docstring)."""
    root = Path(root or paths.repo_root())
    argv = [
        sys.executable, "-m", "jupyterlab", f"--ServerApp.root_dir={root}",
        f"--LabApp.default_url=/lab/tree/{START}",
    ]  # fmt: skip
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        argv.append("--allow-root")  # Jupyter refuses root without it
    kernels = Path(sys.prefix) / "share" / "jupyter"
    jupyter_path = os.pathsep.join(p for p in (str(kernels), os.environ.get("JUPYTER_PATH")) if p)
    env = {**os.environ, "DELIBERATION_PROFILE": profile, "JUPYTER_PATH": jupyter_path}
    return [*argv, *extra], env


def run_lab(profile: str, extra: Sequence[str] = ()) -> int:
    """Replace this process with the lab (Ctrl-C stops it)."""
    argv, env = lab_command(profile, extra)
    print(f"JupyterLab on {paths.repo_root() / START} (profile {profile}; executed notebooks:"
          f" {START}/executed/<profile>/)", flush=True)  # fmt: skip
    os.execve(argv[0], argv, env)
    return 0  # not reached
