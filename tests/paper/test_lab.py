"""``deliberation lab`` (``make lab``): JupyterLab rooted at the repository, opening on the
profile's executed notebooks when there are some, with --allow-root only as root and the
user's options passed on."""

from __future__ import annotations

import shutil

import pytest

from deliberation.io import paths
from deliberation.paper.lab import PROFILE_ENV, lab_launch


@pytest.mark.parametrize("uid", [0, 1000])
def test_lab_opens_on_the_executed_notebooks_when_there_are_some(monkeypatch, uid):
    monkeypatch.setenv("DELIBERATION_BUILD_DIR", str(paths.repo_root() / "build" / "lab-test"))
    monkeypatch.setattr("os.geteuid", lambda: uid)
    first = lab_launch("sim", "--port 8890 --no-browser")
    assert first.argv[1] == "lab" and f"--ServerApp.root_dir={paths.repo_root()}" in first.argv
    assert "--LabApp.default_url=/lab/tree/notebooks" in first.argv
    assert first.argv[-3:] == ["--port", "8890", "--no-browser"]
    assert ("--allow-root" in first.argv) == (uid == 0)
    assert first.env[PROFILE_ENV] == "sim"
    executed = paths.repo_root() / "build" / "lab-test" / "executed" / "sim"
    executed.mkdir(parents=True, exist_ok=True)
    try:
        again = lab_launch("sim")
    finally:
        shutil.rmtree(executed.parents[1])
    assert "--LabApp.default_url=/lab/tree/build/lab-test/executed/sim" in again.argv
