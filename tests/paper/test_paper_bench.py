"""make bench: every benchmark script's rows in one table (build/bench.md)."""

from __future__ import annotations

import pytest

from deliberation.paper.bench import run_benchmarks

GOOD = """\
import argparse
from deliberation.paper.bench import BenchRow, write_rows
parser = argparse.ArgumentParser()
parser.add_argument("--rows")
args = parser.parse_args()
print("fast: 2.0 s")
write_rows(args.rows, [BenchRow("fast thing", "2.0 s", "slow thing 9.0 s (4.5x)", ">= 2x: met")])
"""


def test_rows_of_every_script_make_one_table_and_a_failure_is_named(tmp_path):
    folder = tmp_path / "benchmarks"
    folder.mkdir()
    (folder / "bench_good.py").write_text(GOOD)
    (folder / "bench_broken.py").write_text("raise SystemExit(3)\n")
    (folder / "helper.py").write_text("raise SystemExit('not a benchmark')\n")
    out = tmp_path / "bench.md"
    with pytest.raises(SystemExit, match="bench_broken.py"):
        run_benchmarks(folder=folder, out=out)
    text = out.read_text()
    assert "fast thing" in text and "slow thing 9.0 s (4.5x)" in text
    assert "FAILED" in text and "exit status 3" in text and "helper" not in text

    table = run_benchmarks(only=["bench_good"], folder=folder, out=out)
    assert table[["benchmark", "measure", "value"]].values.tolist() == [
        ["good", "fast thing", "2.0 s"]
    ]
    with pytest.raises(ValueError, match="no benchmark"):
        run_benchmarks(only=["bench_missing"], folder=folder, out=out)


def test_the_power_benchmark_contributes_the_power_tables_time_and_the_zero_effect_check(
    tmp_path,
):
    import json
    import subprocess
    import sys

    from deliberation.io import paths

    rows_file = tmp_path / "rows.json"
    script = paths.repo_root() / "benchmarks" / "bench_power.py"
    done = subprocess.run(
        [sys.executable, str(script), "--profile", "smoke", "--rows", str(rows_file)],
        capture_output=True,
        text=True,
        check=False,
    )
    rows = json.loads(rows_file.read_text())
    assert [r["measure"].split(" (")[0] for r in rows] == [
        "deliberation power smoke",
        "zero-effect check",
    ]
    assert rows[0]["value"].endswith(" s") and float(rows[0]["value"][:-2]) > 0
    assert "alpha 0.05" in rows[1]["side_by_side"]
    assert done.returncode == (0 if all(r["goal"].endswith(": met") for r in rows) else 1)
