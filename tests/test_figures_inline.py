"""Figures show inline in notebooks because the library never chooses matplotlib's backend:
no library module imports pyplot or calls ``matplotlib.use``, importing every module leaves a
kernel's inline backend in place, and a library figure (and a saved one) is displayed as PNG by
IPython's own formatter, with no backend at all. (Executing a notebook and counting its image
outputs is the notebook lane's: tests/notebooks/.)"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import deliberation

LIB = Path(deliberation.__file__).parent
FORBIDDEN_IMPORTS = {"matplotlib.pyplot", "pylab", "matplotlib.pylab"}


def _backend_choices(path: Path, root: Path = LIB) -> list[str]:
    """Each import of pyplot and each call of ``*.use(...)``/``switch_backend(...)`` on
    matplotlib in one module (named relative to ``root``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name in FORBIDDEN_IMPORTS]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = {f"{node.module}.{a.name}" for a in node.names} | {node.module}
            found += sorted(names & FORBIDDEN_IMPORTS)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = ast.unparse(node.func.value)
            if node.func.attr in ("use", "switch_backend") and "matplotlib" in owner:
                found.append(f"{owner}.{node.func.attr}(...)")
    return [f"{path.relative_to(root)}:{name}" for name in found]


def test_no_library_module_imports_pyplot_or_sets_the_backend() -> None:
    found = [hit for path in sorted(LIB.rglob("*.py")) for hit in _backend_choices(path)]
    assert found == []


def test_the_check_finds_a_backend_choice(tmp_path) -> None:
    module = tmp_path / "probe.py"
    module.write_text("import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot\n")
    assert sorted(_backend_choices(module, tmp_path)) == [
        "probe.py:matplotlib.pyplot",
        "probe.py:matplotlib.use(...)",
    ]


KERNEL_LIKE = """
import importlib, os, pkgutil, matplotlib
import deliberation
for module in pkgutil.walk_packages(deliberation.__path__, "deliberation."):
    if module.name.endswith("__main__"):
        continue
    try:
        importlib.import_module(module.name)
    except ImportError as missing:  # an optional extra (vllm) that is not installed
        print("skipped", module.name, missing)
import pandas as pd
from IPython.core.formatters import DisplayFormatter
from deliberation.experiments.memory.analyses import figures
from deliberation.profiles.profile import load_profile
from deliberation.publish.plots import save_figure

table = pd.DataFrame({"policy": ["R1", "all"], "capacity": ["r=0.6", "reference"],
                      "accuracy": [60.0, 80.0], "low": [50.0, 75.0], "high": [70.0, 85.0],
                      "n_clusters": [12, 12], "chance": [100 / 3] * 2})
fig = figures.accuracy_by_budget(table, "t")
saved = save_figure(fig, "inline_check", profile=load_profile("smoke"), caption="c",
                    notebook="nb", intervals="95% intervals")
formatter = DisplayFormatter()
for shown in (fig, saved):
    data, _ = formatter.format(shown)
    assert data["image/png"][:8] == b"\\x89PNG\\r\\n\\x1a\\n", sorted(data)
print("backend", matplotlib.get_backend())
print("pyplot figures", __import__("matplotlib.pyplot").pyplot.get_fignums())
print("caption", saved.caption)
"""


def test_importing_the_library_keeps_the_kernels_backend_and_figures_display_as_png(
    tmp_path,
) -> None:
    env = {
        "MPLBACKEND": "module://matplotlib_inline.backend_inline",  # as ipykernel sets it
        "DELIBERATION_OUTPUT_ROOT": str(tmp_path / "out"),
        "DELIBERATION_CACHE_DIR": str(tmp_path / "cache"),
        "DELIBERATION_BUILD_DIR": str(tmp_path / "build"),
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
    }
    done = subprocess.run(
        [sys.executable, "-c", KERNEL_LIKE], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert "backend module://matplotlib_inline.backend_inline" in lines
    assert "pyplot figures []" in lines  # library figures are not pyplot's: none left open
    assert "caption c Error bars: 95% intervals." in lines
