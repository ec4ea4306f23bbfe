"""How fast ``deliberation --help`` answers (goal: under 0.3 s), as a user types it.

Runs ``python -m deliberation --help`` in a fresh interpreter ``--runs`` times (default 20) and
prints the median and the slowest wall-clock time, with the bare interpreter's start-up
(``python -c pass``) beside it for scale. The help path imports no area of the library
(``deliberation.cli._summary_parser``), so it costs little more than Python's own start-up.

Usage: ``python benchmarks/bench_cli.py [--runs 20]``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

from deliberation.paper.bench import BenchRow, write_rows

GOAL_S = 0.3


def wall_times(argv: list[str], runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - started)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--rows", help="write this benchmark's rows of the make-bench table here")
    args = parser.parse_args()
    bare = wall_times([sys.executable, "-c", "pass"], args.runs)
    help_times = wall_times([sys.executable, "-m", "deliberation", "--help"], args.runs)
    median = statistics.median(help_times)
    print(f"bench_cli: {args.runs} runs each, fresh interpreter")
    print(f"python -c pass             median {statistics.median(bare):.3f} s")
    print(
        f"deliberation --help        median {median:.3f} s, slowest {max(help_times):.3f} s"
        f"  (goal < {GOAL_S} s: {'met' if median < GOAL_S else 'NOT met'})"
    )
    write_rows(
        args.rows,
        [
            BenchRow(
                "deliberation --help (fresh interpreter, median)",
                f"{median:.3f} s",
                f"python -c pass: {statistics.median(bare):.3f} s",
                f"< {GOAL_S} s: {'met' if median < GOAL_S else 'NOT met'}",
            )
        ],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
