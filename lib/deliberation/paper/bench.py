"""``make bench``: every ``benchmarks/bench_*.py`` in one run, their figures in one table.

Each benchmark script prints its own report and, given ``--rows FILE``, writes the rows it
contributes to the table (:func:`write_rows`): one per measured figure, with the figure it is
measured side by side against in the same run where a comparison exists. The table is printed
and written to ``build/bench.md``. A new benchmark joins the table by being a
``benchmarks/bench_*.py`` that accepts ``--rows``.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd

from deliberation.io import paths
from deliberation.io.atomic import atomic_write_text

COLUMNS = ["benchmark", "measure", "value", "side by side", "goal"]


@dataclass(frozen=True)
class BenchRow:
    measure: str
    value: str
    side_by_side: str = ""
    goal: str = ""


def write_rows(path: str | Path | None, rows: Sequence[BenchRow]) -> None:
    """What a benchmark script contributes to the table (no-op without ``--rows``)."""
    if path is not None:
        atomic_write_text(Path(path), json.dumps([asdict(r) for r in rows], indent=1) + "\n")


def _benchmark_scripts(only: Sequence[str] | None = None, folder: Path | None = None) -> list[Path]:
    scripts = sorted((folder or paths.repo_root() / "benchmarks").glob("bench_*.py"))
    if only:
        unknown = set(only) - {s.stem for s in scripts}
        if unknown:
            raise ValueError(f"no benchmark {sorted(unknown)}; known: {[s.stem for s in scripts]}")
        scripts = [s for s in scripts if s.stem in only]
    return scripts


def run_benchmarks(
    only: Sequence[str] | None = None, out: Path | None = None, folder: Path | None = None
) -> pd.DataFrame:
    """Run the scripts one after another (each alone on the machine), print and write the table."""
    out = out or paths.build_dir() / "bench.md"
    rows: list[dict[str, str]] = []
    failed: list[str] = []
    with tempfile.TemporaryDirectory(prefix="deliberation-bench-") as scratch:
        for script in _benchmark_scripts(only, folder):
            print(f"== {script.name}", flush=True)
            rows_file = Path(scratch) / f"{script.stem}.json"
            done = subprocess.run(
                [sys.executable, str(script), "--rows", str(rows_file)], check=False
            )
            if not rows_file.is_file():  # crashed before writing its rows
                failed.append(script.name)
                rows.append({"benchmark": script.stem, "measure": "FAILED", "value": "",
                             "side by side": f"exit status {done.returncode}", "goal": ""})  # fmt: skip
                continue
            if done.returncode != 0:
                print(f"   {script.name} exited with status {done.returncode} (a goal not met?)")
            for row in json.loads(rows_file.read_text()):
                rows.append(
                    {"benchmark": script.stem.removeprefix("bench_"), "measure": row["measure"],
                     "value": row["value"], "side by side": row["side_by_side"], "goal": row["goal"]}
                )  # fmt: skip
    table = pd.DataFrame(rows, columns=COLUMNS)
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    markdown = (
        "# make bench\n\nMeasured in one run on this machine "
        f"({machine}; the machine may be shared, so figures are indicative).\n\n"
        + table.to_markdown(index=False)
        + "\n"
    )
    atomic_write_text(out, markdown)
    print("\n" + markdown)
    print(f"written to {out}")
    if failed:
        raise SystemExit(f"benchmarks failed: {', '.join(failed)}")
    return table
