"""The notebook lane (`make notebooks`): the one place tests execute notebooks.

The whole paper is built once per session on the smoke profile (every notebook of the manifest
through papermill, as `make paper` runs them); the tests here check that build's plan, outputs,
tables and report. Only checks that need another configuration execute a notebook again.
"""

from __future__ import annotations

import pytest

from deliberation.paper import browser
from deliberation.paper.build import build_paper
from deliberation.paper.plan import plan_calls

FOLDERS = ("OUTPUT_ROOT", "CACHE_DIR", "BUILD_DIR")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        item.add_marker(pytest.mark.notebook)


@pytest.fixture(scope="session")
def smoke_build(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The paper built once on the smoke profile: its folders, the plan printed first, the build
    result and its printed text."""
    root = tmp_path_factory.mktemp("smoke-build")
    env = {f"DELIBERATION_{name}": str(root / name.lower()) for name in FOLDERS}
    with pytest.MonkeyPatch.context() as patch:
        for name, value in env.items():
            patch.setenv(name, value)
        plan = plan_calls("smoke")
        lines: list[str] = []
        result = build_paper("smoke", out=lines.append)
    return {"env": env, "plan": plan, "result": result, "text": "\n".join(lines)}


@pytest.fixture
def in_smoke_build(smoke_build: dict, monkeypatch: pytest.MonkeyPatch) -> dict:
    """The session's smoke build, with this test's output, cache and build folders set to it."""
    for name, value in smoke_build["env"].items():
        monkeypatch.setenv(name, value)
    return smoke_build


@pytest.fixture(scope="session")
def chromium() -> None:
    """Chromium is a system package, installed by `make chromium` (CI runs it); never here."""
    if not browser.find_chromium():
        pytest.skip("Chromium is not installed: `make chromium` installs it (apt-get, as root)")
