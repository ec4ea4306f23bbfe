"""Speed of the CrossProfile verifier and task derivation on the shipped bank.

Goal: ``deliberation crossprofile verify`` on the whole bank (70 templates) in under 3 seconds, end to end
(process start and imports included). Run: ``python benchmarks/bench_crossprofile.py``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from deliberation.benchmarks.crossprofile.tasks import derive_tasks, write_tasks_jsonl
from deliberation.benchmarks.crossprofile.verifier import load_bank, verify_paths
from deliberation.paper.bench import BenchRow, write_rows

GOAL_VERIFY_CLI_S = 3.0
REPEATS = 3


def _median_seconds(action) -> float:
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", help="write this benchmark's rows of the make-bench table here")
    args = parser.parse_args(argv)
    report = verify_paths()
    cli = [sys.executable, "-m", "deliberation", "crossprofile", "verify", "--quiet"]
    rows = [
        ("verify_paths() (library)", _median_seconds(verify_paths)),
        (
            "crossprofile verify (CLI)",
            _median_seconds(lambda: subprocess.run(cli, capture_output=True)),
        ),
    ]
    if report.ok:
        templates = load_bank()
        rows.append(
            ("derive_tasks (all variants)", _median_seconds(lambda: derive_tasks(templates)))
        )
        with tempfile.TemporaryDirectory() as tmp:
            tasks = derive_tasks(templates)
            out = Path(tmp) / "tasks.jsonl"
            rows.append(
                ("write_tasks_jsonl", _median_seconds(lambda: write_tasks_jsonl(tasks, out)))
            )
    print(f"bank: {len(report.files)} template files, verifier {'OK' if report.ok else 'FAILED'}")
    print(f"{'step':32s} {'median s':>9s}")
    for name, seconds in rows:
        print(f"{name:32s} {seconds:9.3f}")
    cli_seconds = rows[1][1]
    verdict = "met" if cli_seconds < GOAL_VERIFY_CLI_S else "MISSED"
    print(
        f"goal: deliberation crossprofile verify < {GOAL_VERIFY_CLI_S:.0f} s end to end -> {verdict}"
    )
    write_rows(
        args.rows,
        [
            BenchRow(
                f"deliberation crossprofile verify, whole bank ({len(report.files)} templates)",
                f"{cli_seconds:.2f} s",
                f"library call alone {rows[0][1]:.2f} s",
                f"< {GOAL_VERIFY_CLI_S:.0f} s end to end: {verdict}",
            )
        ],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
