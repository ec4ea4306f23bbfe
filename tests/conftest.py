"""Every test writes outputs and caches under a temporary folder, never into the working tree;
and only the notebook lane (tests/notebooks/) executes notebooks, so `make unit` stays fast."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

NOTEBOOK_LANE = Path(__file__).parent / "notebooks"


@pytest.fixture(autouse=True)
def _isolated_outputs(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    root = tmp_path_factory.mktemp("outputs")
    monkeypatch.setenv("DELIBERATION_OUTPUT_ROOT", str(root / "out"))
    monkeypatch.setenv("DELIBERATION_CACHE_DIR", str(root / "cache"))
    monkeypatch.setenv("DELIBERATION_BUILD_DIR", str(root / "build"))
    # Spill files stay in the test's folder: the default one is shared by every run here.
    monkeypatch.setenv("DELIBERATION_SPILL_DIR", str(root / "spill"))
    from deliberation.inference import served_models

    served_models.clear()  # model names answered as are noted per process
    yield root


def _no_notebook(*args, **kwargs):
    raise RuntimeError(
        "a unit test executed a notebook: move it to tests/notebooks/ (the `make notebooks` lane)"
    )


@pytest.fixture(autouse=True)
def _notebooks_only_in_their_lane(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch):
    """Outside tests/notebooks/, papermill and nbclient refuse to execute anything."""
    if NOTEBOOK_LANE in Path(request.node.path).parents:
        return
    import nbclient
    import papermill

    monkeypatch.setattr(papermill, "execute_notebook", _no_notebook)
    monkeypatch.setattr(nbclient.NotebookClient, "execute", _no_notebook)
    monkeypatch.setattr(nbclient.NotebookClient, "async_execute", _no_notebook)


@pytest.fixture
def tiny_disk(tmp_path: Path):
    """A 300 KiB tmpfs (a really full disk: ENOSPC, SQLITE_FULL) where mounting is allowed
    (root); skipped elsewhere. Grow it with ``mount -o remount,size=20m``."""
    folder = tmp_path / "disk"
    folder.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=300k", "tmpfs", str(folder)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)
