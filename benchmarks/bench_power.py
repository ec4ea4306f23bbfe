"""How long ``deliberation power`` takes for one profile (goal: under 60 s), and the zero-effect
check: an effect of zero planted, the power found equals alpha within Monte Carlo error.

The power table is every preregistered test's power at the profile's grid and the search for
the smallest grid reaching 80% (:func:`deliberation.paper.power.run_power` without the plan,
whose calls and cost take minutes of their own: ``make plan``). The zero-effect check is H3 at
30 templates with 2000 replicates, as tests/stats/test_stats_power.py runs it.

Usage: ``python benchmarks/bench_power.py [--profile qwen2.5-7b-vllm]``.
"""

from __future__ import annotations

import argparse
import sys
import time

from deliberation.paper.bench import BenchRow, write_rows
from deliberation.paper.power import run_power
from deliberation.stats import power as P

GOAL_S = 60.0
ALPHA = 0.05


def zero_effect_check() -> tuple[P.PowerEstimate, float]:
    h3 = next(d for d in P.designs() if d.name == "H3")
    spread = P.Spread(0.05, 0.05, "bench")
    started = time.perf_counter()
    found = P.estimate_power(h3, 0.0, 30, spread, alpha=ALPHA, replicates=2000)
    return found, time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="qwen2.5-7b-vllm")
    parser.add_argument("--rows", help="write this benchmark's rows of the make-bench table here")
    args = parser.parse_args()
    started = time.perf_counter()
    rows, _, _ = run_power(args.profile, plan=False)
    seconds = time.perf_counter() - started
    table_met = seconds < GOAL_S
    zero, zero_seconds = zero_effect_check()
    zero_met = abs(zero.power - ALPHA) <= 3 * zero.mc_error
    print(f"bench_power: profile {args.profile}")
    print(
        f"power table ({len(rows)} tests, no plan)  {seconds:.1f} s"
        f"  (goal < {GOAL_S:g} s: {'met' if table_met else 'NOT met'})"
    )
    print(
        f"zero-effect check            power {zero.power:.4f} +/- {zero.mc_error:.4f} in"
        f" {zero_seconds:.2f} s  (alpha {ALPHA} within 3 MC errors: {'met' if zero_met else 'NOT met'})"
    )
    write_rows(
        args.rows,
        [
            BenchRow(
                f"deliberation power {args.profile} ({len(rows)} tests, no plan)",
                f"{seconds:.1f} s",
                "",
                f"< {GOAL_S:g} s: {'met' if table_met else 'NOT met'}",
            ),
            BenchRow(
                "zero-effect check (H3, 30 templates, 2000 replicates)",
                f"{zero_seconds:.2f} s",
                f"power {zero.power:.4f} +/- {zero.mc_error:.4f} (alpha {ALPHA})",
                f"alpha within 3 MC errors: {'met' if zero_met else 'NOT met'}",
            ),
        ],
    )
    return 0 if table_met and zero_met else 1


if __name__ == "__main__":
    sys.exit(main())
