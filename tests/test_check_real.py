"""`make check-real` itself, on the sim (seconds): the real-model lane for any profile runs every
experiment's stages and writes its per-stage table (tests/real_model_lane.py is not collected by
`make unit`; this runs it as `make check-real PROFILE=sim` does)."""

from __future__ import annotations

import os
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
