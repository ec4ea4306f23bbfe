"""One count of cached and sent per stage: the client's line before sending and the stage's
summary after it say the same "already cached" (distinct prompts, repeats not counted twice),
and a command prints each summary line once (not once logged and once printed)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

from helpers.serve_sim import arithmetic_prompt

from deliberation.inference import make_client
from deliberation.inference.base import ChatRequest
from deliberation.inference.batch import StageCounts, send
from deliberation.profiles.profile import load_profile

LIB = Path(__file__).resolve().parents[1] / "lib"


def _requests(n: int) -> list[ChatRequest]:
    return [
        ChatRequest.from_prompt(arithmetic_prompt(i), stage="smoke.arithmetic") for i in range(n)
    ]


def test_the_client_and_the_stage_summary_count_cached_prompts_alike(tmp_path, caplog) -> None:
    client = make_client(load_profile("smoke"), cache_file=tmp_path / "c.sqlite", progress=False)
    send(client, _requests(25), "smoke.arithmetic")  # 25 answered and cached
    again = _requests(28) + _requests(3)  # 25 cached, 3 new, 3 repeats of cached prompts
    counts: list[StageCounts] = []
    caplog.clear()
    with caplog.at_level(logging.INFO):
        _, _ = send(client, again, "smoke.arithmetic", counts)
    (before,) = [r.getMessage() for r in caplog.records if "to send" in r.getMessage()]
    assert "31 requests, 28 unique prompts, 25 already cached, 3 to send" in before
    (stage,) = counts
    assert "31 requests built, 28 unique prompts, 25 already cached, 3 sent" in stage.line()
    # The summary line is the command's to print: logged for --verbose only.
    assert not [r for r in caplog.records if r.getMessage() == stage.line()]


def test_a_run_prints_each_summary_line_once(tmp_path) -> None:
    """The whole command as a user runs it (its logging configured by the CLI, stdout and
    stderr in one stream): every stage's summary line appears exactly once."""
    argv = [sys.executable, "-m", "deliberation", "run", "crossprofile", "--profile", "smoke",
            "--limit", "1", "--policies", "R1,R1-rel", "--budgets", "0.6", "--tags", "keep",
            "--item-limit", "0", "--cache", str(tmp_path / "c.sqlite"),
            "--out", str(tmp_path / "rows.csv"), "--no-progress"]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": f"{LIB}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    done = subprocess.run(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout
    lines = done.stdout.splitlines()
    summaries = [line for line in lines if "requests built" in line]
    stages = {line.split(":")[0] for line in summaries}
    assert {"crossprofile.relevance", "crossprofile.decision"} <= stages, done.stdout
    for summary in summaries:
        assert sum(summary in line for line in lines) == 1, done.stdout
    assert sum(line.startswith("8 rows -> ") or " rows -> " in line for line in lines) == 1
