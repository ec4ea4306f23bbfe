"""Run one of the paper's notebooks headlessly with papermill (the notebook lane only)."""

from __future__ import annotations

import os
from pathlib import Path

from deliberation.io.paths import repo_root

NOTEBOOKS = repo_root() / "notebooks"


def execute(name: str, out_root: Path, cache_dir: Path, **parameters) -> Path:
    """Run notebook ``name`` with the smoke profile (unless ``parameters`` say otherwise), its
    outputs and cache under the given folders; returns the executed copy."""
    import papermill as pm

    env = {"DELIBERATION_OUTPUT_ROOT": str(out_root), "DELIBERATION_CACHE_DIR": str(cache_dir)}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        out_root.mkdir(parents=True, exist_ok=True)
        executed = out_root / f"executed-{name}"
        pm.execute_notebook(
            str(NOTEBOOKS / name),
            str(executed),
            parameters={"profile": "smoke", **parameters},
            cwd=str(NOTEBOOKS),
            kernel_name="python3",
            progress_bar=False,
        )
        return executed
    finally:
        for key, value in old.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def tables(root: Path) -> dict[str, bytes]:
    """Every file under ``root/tables`` by its path relative to ``root``."""
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted((root / "tables").rglob("*"))
        if p.is_file()
    }
