"""Wall time of ``make paper`` on the sim: cold, forced with a warm cache, and with everything current.

Runs ``deliberation paper sim`` (plan printed first, as ``make paper`` does) three times in one
scratch folder (outputs, caches and build products never touch the working tree):

* cold: empty cache, no build record: every notebook runs and every model call is answered;
* ``FORCE=1``: every notebook runs again, every model call is a cache hit;
* current: nothing changed, so no notebook runs (goal: seconds).

Usage: ``python benchmarks/bench_paper.py [--profile sim] [--rows FILE]``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from deliberation.paper.bench import BenchRow, write_rows

CURRENT_GOAL_S = 10.0


def timed_build(profile: str, env: dict[str, str], *extra: str) -> float:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "deliberation", "paper", profile, *extra],
        env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"deliberation paper {profile} {extra} failed:\n{done.stdout[-3000:]}")
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="sim")
    parser.add_argument("--rows", help="write this benchmark's rows of the make-bench table here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-paper-") as scratch:
        env = dict(os.environ)
        for name, sub in (("OUTPUT_ROOT", "out"), ("CACHE_DIR", "cache"), ("BUILD_DIR", "build")):
            env[f"DELIBERATION_{name}"] = str(Path(scratch) / sub)
        cold = timed_build(args.profile, env)
        forced = timed_build(args.profile, env, "--force", "--no-plan")
        current = timed_build(args.profile, env)
    print(f"make paper PROFILE={args.profile}: cold {cold:.1f} s, FORCE=1 with a warm cache"
          f" {forced:.1f} s, everything current {current:.1f} s")  # fmt: skip
    verdict = "met" if current < CURRENT_GOAL_S else "NOT met"
    write_rows(
        args.rows,
        [
            BenchRow(
                f"make paper PROFILE={args.profile}, everything current",
                f"{current:.1f} s",
                f"cold (empty cache, plan first) {cold:.1f} s; FORCE=1, warm cache {forced:.1f} s",
                f"< {CURRENT_GOAL_S:g} s: {verdict}",
            )
        ],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
