"""The test suite's own rules: shared helpers live in conftest.py or tests/helpers/, so no test
module imports another; no test installs system packages (Chromium comes from `make chromium`);
the notebook lane is tests/notebooks/ and the unit lane never imports papermill itself."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).parent
# Package managers a test must never run (this file names them, so it is not scanned for them).
INSTALLERS = {"apt-get", "apt", "dnf", "yum", "apk", "brew", "snap"}


def _modules() -> list[Path]:
    return sorted(p for p in TESTS.rglob("*.py") if "__pycache__" not in p.parts)


def _imported(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_no_test_module_imports_another_test_module():
    """Also in the mirrored folders (``from experiments.memory import test_runs``)."""
    test_modules = {
        p.stem for p in _modules() if p.stem.startswith("test_") or p.stem == "conftest"
    }
    offenders = {
        str(path.relative_to(TESTS)): sorted(
            name
            for name in _imported(ast.parse(path.read_text()))
            if name.rpartition(".")[2] in test_modules
        )
        for path in _modules()
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_no_test_runs_a_package_manager():
    offenders = []
    for path in (p for p in _modules() if p != Path(__file__)):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                words = node.value.split()
                if words and words[0] in INSTALLERS:
                    offenders.append(f"{path.relative_to(TESTS)}:{node.lineno} {node.value!r}")
    assert offenders == []


def test_only_the_notebook_lane_imports_papermill_or_nbclient():
    lane = TESTS / "notebooks"
    helpers = TESTS / "helpers" / "notebooks.py"
    offenders = [
        str(path.relative_to(TESTS))
        for path in _modules()
        if lane not in path.parents
        and path not in (helpers, TESTS / "conftest.py")
        and {"papermill", "nbclient"}
        & {n.split(".")[0] for n in _imported(ast.parse(path.read_text()))}
    ]
    assert offenders == []
