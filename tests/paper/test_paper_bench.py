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


def test_the_code_size_benchmark_counts_lines_modules_and_names_nobody_else_uses(
    tmp_path, monkeypatch
):
    """A toy checkout: ``helper`` is used only in its module, ``tested`` only by a test, ``used``
    by another module (also through a "module:attr" string), ``_private`` is not public."""
    import importlib.util
    import sys

    from deliberation.io import paths

    script = paths.repo_root() / "benchmarks" / "bench_code_size.py"
    spec = importlib.util.spec_from_file_location("bench_code_size", script)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "bench_code_size", module)  # its dataclass looks it up
    spec.loader.exec_module(module)

    library = tmp_path / "lib" / "deliberation"
    library.mkdir(parents=True)
    (library / "a.py").write_text(
        '"""A."""\n\n# a comment\nLIMIT = 3\n\n\ndef helper():\n    return LIMIT\n\n\n'
        "def tested():\n    return helper()\n\n\ndef used():\n    return tested()\n\n\n"
        "def _private():\n    return 2\n\n\ndef nobody():\n    return 3\n"
    )
    (library / "b.py").write_text(
        'from deliberation.a import used\nTARGET = "deliberation.a:LIMIT"\n'
    )
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text("from deliberation.a import tested, nobody\n")
    found = module.measure(tmp_path)
    assert found["modules"] == 2
    assert found["lines"] == 24 + 2 and found["code_lines"] == 12 + 2  # docstring, LIMIT, 5 defs
    assert found["public"] == 6  # LIMIT helper tested used nobody TARGET
    assert found["own_only"] == ["a.py:helper", "b.py:TARGET"]
    assert found["tests_only"] == ["a.py:tested", "a.py:nobody"]
    assert found["unused"] == ["a.py:nobody", "b.py:TARGET"]
