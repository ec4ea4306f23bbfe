"""`make check-real` itself, on the sim (seconds): the real-model lane for any profile runs every
experiment's stages and writes its per-stage table (tests/real_model_lane.py is not collected by
`make unit`; this runs it as `make check-real PROFILE=sim` does)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).parent


def lane(tmp_path: Path, profile: str) -> tuple[subprocess.CompletedProcess, Path]:
    env = {**os.environ, "DELIBERATION_REAL_PROFILE": profile,
           "DELIBERATION_BUILD_DIR": str(tmp_path / "build")}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "real_model_lane.py"],
        cwd=TESTS, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    return done, tmp_path / "build" / "check-real" / f"{Path(profile).stem}.md"


def test_the_lane_on_the_sim_passes_every_stage_and_writes_its_table(tmp_path) -> None:
    done, report = lane(tmp_path, "sim")
    assert done.returncode == 0, done.stdout[-2000:]
    table = report.read_text()
    for stage in ("crossprofile.relevance", "crossprofile.summary", "crossprofile.decision",
                  "natural.crossprofile.vote.initial", "dhd.recruiter", "dhd.hypothesizer",
                  "dhd.integrator", "dhd.judge"):  # fmt: skip
        assert f"| {stage} |" in table
    rows = [line for line in table.splitlines() if line.startswith("| ") and "stage" not in line]
    assert rows and all(line.endswith("| PASS |") for line in rows[1:])
    assert "throughput: not measured (the sim" in table
    assert not (tmp_path / "build" / "measured").exists()  # the sim measures nothing


def test_the_command_prints_the_table_and_its_time_and_exits_zero(tmp_path, monkeypatch, capsys):
    from deliberation.cli import main

    monkeypatch.setenv("DELIBERATION_BUILD_DIR", str(tmp_path / "build"))
    assert main(["check-real", "--profile", "sim"]) == 0
    out = capsys.readouterr().out
    assert "| crossprofile.decision |" in out and "check-real: PASS: all " in out
    assert "results: synthetic (sim backend)" in out
    assert re.search(r"check-real: passed in \d+ s", out)


def test_a_failing_lane_exits_check_failed_naming_it(tmp_path, monkeypatch, capsys):
    """No server at the profile's URL: the lane fails, and so does the command (exit 8), after
    saying so; the probe's recipe printed "5 passed", a traceback, and exited 0."""
    from deliberation.cli import main
    from deliberation.exit_codes import CHECK_FAILED

    monkeypatch.setenv("DELIBERATION_BUILD_DIR", str(tmp_path / "build"))
    profile = tmp_path / "nowhere.yaml"
    profile.write_text(
        "backend: openai\nmodel: m\nopenai:\n  base_url: http://127.0.0.1:9/v1\n"
        "  max_retries: 0\n  timeout_s: 5\n"
    )
    assert main(["check-real", "--profile", str(profile)]) == CHECK_FAILED
    out = capsys.readouterr().out
    assert re.search(r"check-real: FAILED in \d+ s", out)


def test_a_report_that_names_a_failed_stage_or_throughput_fails() -> None:
    from deliberation.paper.check_real import StageResult, report_failed

    assert StageResult("s", answered=3, valid=2, cut=1, constrained=True).passed  # cut: counted
    assert not StageResult("s", answered=3, failed=1).passed
    assert not StageResult("s", answered=3, invalid=1, constrained=True).passed
    assert report_failed("x\ncheck-real: FAIL: dhd.judge\n")
    assert report_failed("check-real: PASS: all 3 stages\nthroughput: FAIL: not measured\n")
    assert not report_failed("check-real: PASS: all 3 stages\nthroughput: not measured (sim)\n")
