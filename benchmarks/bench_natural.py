"""Speed of the natural-discussion sim run behind notebook 06: ``deliberation run natural`` with
the sim profile's ``experiments.natural`` section (20 main CrossProfile templates x 8 cells, and
HiddenBench when its data is present; plain and evidence-first prompts; every policy), into a
fresh cache; then the same run again (everything cached).

Goal: the fresh run in under 2 minutes on a 2-core machine, so `make paper` runs notebook 06 in a
few minutes. Prints the times and the calls saved by sending identical prompts once.
Run: ``python benchmarks/bench_natural.py``.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from deliberation.experiments.natural.runs import run_from_profile, runnable_benchmarks
from deliberation.profiles.profile import load_profile

GOAL_S = 120.0


def main() -> int:
    profile = load_profile("sim")
    benchmarks, skipped = runnable_benchmarks(profile.experiments.natural.benchmarks)
    for note in skipped:
        print(note)
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "bench.sqlite"
        start = time.perf_counter()
        fresh = run_from_profile(profile, benchmarks=benchmarks, cache_file=cache, progress=False)
        fresh_s = time.perf_counter() - start
        start = time.perf_counter()
        run_from_profile(profile, benchmarks=benchmarks, cache_file=cache, progress=False)
        cached_s = time.perf_counter() - start
    built = sum(s.built for s in fresh.report.stages)
    sent = sum(s.sent for s in fresh.report.stages)
    print(f"rows: {len(fresh.rows)}; requests built {built}, sent {sent}:"
          f" {built - sent} calls saved by sending identical prompts once")  # fmt: skip
    print(f"fresh run: {fresh_s:.1f} s (goal < {GOAL_S:.0f} s); rerun from cache: {cached_s:.1f} s")
    return 0 if fresh_s < GOAL_S else 1


if __name__ == "__main__":
    raise SystemExit(main())
