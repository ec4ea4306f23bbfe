"""Every test writes outputs and caches under a temporary folder, never into the working tree."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _isolated_outputs(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    root = tmp_path_factory.mktemp("outputs")
    monkeypatch.setenv("DELIBERATION_OUTPUT_ROOT", str(root / "out"))
    monkeypatch.setenv("DELIBERATION_CACHE_DIR", str(root / "cache"))
    monkeypatch.setenv("DELIBERATION_BUILD_DIR", str(root / "build"))
    yield root
