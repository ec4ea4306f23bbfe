"""``deliberation check-real --profile P`` (``make check-real PROFILE=P``): every experiment's
stages on the profile's own engine with a tiny grid, before paying for the paper.

The stages run in ``tests/real_model_lane.py``, a pytest file because each stage asserts what a
real model allows (every call answered, constrained answers parse, rows well formed, a second
run sends nothing, a server it started is gone). This module is what the lane and the command
share: the per-stage table read from the lane's response cache (:func:`stage_results`), the
throughput measured on the lane's calls (:func:`measure`), the report the lane writes
(``build/check-real/<profile>.md``: :func:`write_report`), and the command that runs the lane,
prints the report and exits non-zero when a stage failed (:func:`run_check_real`).

A server that says it is serve-sim (the sim mechanism behind the OpenAI protocol) is checked
like any other, and its report says it is synthetic; its throughput says nothing about a model,
so none is measured or saved.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deliberation import exit_codes
from deliberation.inference.tokens import count_tokens
from deliberation.io import paths
from deliberation.io.atomic import atomic_write_text
from deliberation.profiles.throughput import (
    MeasuredThroughput,
    fit_throughput,
    save_measured,
    unshared_in_send_order,
)

LANE = Path("tests") / "real_model_lane.py"  # relative to the repository root
PROFILE_ENV = "DELIBERATION_REAL_PROFILE"  # the profile the lane runs (a name or a path)


def report_path(profile: str) -> Path:
    return paths.build_dir() / "check-real" / f"{profile}.md"


@dataclass(frozen=True)
class StageResult:
    """One stage of the lane: calls answered and failed (no usable reply), and of the
    constrained answers those valid, cut at max_tokens (counted invalid by the experiments, a
    small model's habit, not a fault of the stage) and otherwise invalid."""

    stage: str
    answered: int = 0
    failed: int = 0
    constrained: bool = False
    valid: int = 0
    cut: int = 0
    invalid: int = 0

    @property
    def passed(self) -> bool:
        return self.failed == 0 and self.invalid == 0

    def row(self) -> str:
        checked = (
            (self.valid, self.cut, self.invalid) if self.constrained else ("free text", "", "")
        )
        cells = (
            self.stage,
            self.answered,
            self.failed,
            *checked,
            "PASS" if self.passed else "FAIL",
        )
        return "| " + " | ".join(map(str, cells)) + " |"


TABLE_HEAD = [
    "| stage | answered | failed | constrained: valid | cut | invalid | result |",
    "| --- | --- | --- | --- | --- | --- | --- |",
]


def stage_results(cache_file: Path) -> list[StageResult]:
    """One result per stage of the lane's cache, by stage name."""
    with sqlite3.connect(cache_file) as db:
        answered = db.execute("SELECT stage, request, response FROM responses").fetchall()
        failed = db.execute(
            "SELECT stage, COUNT(DISTINCT key) FROM failures"
            " WHERE key NOT IN (SELECT key FROM responses) GROUP BY stage"
        ).fetchall()
    counts: dict[str, dict[str, Any]] = {}
    for stage, request, response in answered:
        row = counts.setdefault(stage, {})
        row["answered"] = row.get("answered", 0) + 1
        if json.loads(request).get("structured"):
            row["constrained"] = True
            got = json.loads(response)
            kind = "valid" if got["parsed"] is not None else "invalid"
            kind = "cut" if kind == "invalid" and got["finish_reason"] == "length" else kind
            row[kind] = row.get(kind, 0) + 1
    for stage, count in failed:
        counts.setdefault(stage, {})["failed"] = count
    return [StageResult(stage, **row) for stage, row in sorted(counts.items())]


def measure(cache_file: Path, *, sending_s: float, prefix_cache: bool) -> MeasuredThroughput | None:
    """The throughput of the lane's answered calls (the probes included), with the server's
    prompt tokens per counter token; None when the calls cannot give both rates."""
    with sqlite3.connect(cache_file) as db:
        calls = db.execute(
            "SELECT stage, request, prompt_tokens, completion_tokens, latency_s FROM responses"
            " ORDER BY created"
        ).fetchall()
    messages = [json.loads(call[1])["messages"] for call in calls]
    texts = ["".join(f"{m['role']}\n{m['content']}\n" for m in sent) for sent in messages]
    shares = unshared_in_send_order(texts) if prefix_cache else [1.0] * len(calls)
    measured = fit_throughput(
        [call[2] * share for call, share in zip(calls, shares, strict=True)],
        [call[3] for call in calls],
        [call[4] for call in calls],
        sending_s,
        stages=[call[0] for call in calls],
    )
    counted = sum(count_tokens(m["content"]) for sent in messages for m in sent)
    if measured is None or not counted:
        return measured
    ratio = sum(call[2] for call in calls) / counted
    return dataclasses.replace(measured, server_tokens_per_counter_token=round(ratio, 3))


def write_report(
    source: Any, lane: Any, cache_file: Path, *, sending_s: float, prefix_cache: bool
) -> Path:
    """``build/check-real/<profile>.md``: what ran, the per-stage table, the verdict and the
    throughput (measured and saved for the next plan, unless the answers are synthetic).
    ``source`` is the profile as its file says, ``lane`` as the lane ran it (labelled)."""
    results = stage_results(cache_file)
    failing = [r.stage for r in results if not r.passed]
    lines = [f"# make check-real PROFILE={source.name}", "", f"results: {lane.label}", ""]
    lines += TABLE_HEAD + [r.row() for r in results]
    verdict = f"FAIL: {', '.join(failing)}" if failing else f"PASS: all {len(results)} stages"
    if not results:
        verdict = "FAIL: no stage answered"
    lines += ["", f"check-real: {verdict}"]
    if lane.synthetic:
        what = "serve-sim answers" if lane.served_by_sim else "the sim answers"
        lines.append(
            f"throughput: not measured ({what}: the sim mechanism model, not a language model;"
            " its speed says nothing about a model's)"
        )
    else:
        measured = measure(cache_file, sending_s=sending_s, prefix_cache=prefix_cache)
        if measured is None:
            lines.append("throughput: FAIL: not measured (too few answered calls, or no time)")
        else:
            saved = save_measured(source.name, measured)
            lines += [measured.line(source.cost), f"saved for the next plan: {saved}"]
    target = report_path(source.name)
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(target, "\n".join(lines) + "\n")
    return target


def report_failed(report: str) -> bool:
    """Whether a report's verdict or throughput line says FAIL."""
    return any(
        line.startswith(("check-real: FAIL", "throughput: FAIL")) for line in report.splitlines()
    )


def run_check_real(profile_arg: str, *, out: Callable[[str], None] = print) -> int:
    """Run the lane on ``profile_arg``, print its report and the time taken; exit
    :data:`~deliberation.exit_codes.CHECK_FAILED` when a test or a stage failed."""
    from deliberation.profiles.profile import load_profile

    profile = load_profile(profile_arg)
    lane = paths.repo_root() / LANE
    if not lane.is_file():
        raise exit_codes.CommandError(
            f"check-real runs {LANE} of the repository, and {lane} is not there (a checkout of"
            " the repository has it)",
            exit_codes.BAD_INPUT,
        )
    report = report_path(profile.name)
    report.unlink(missing_ok=True)  # a report from an earlier run must not pass for this one's
    out(f"check-real: profile {profile.name}: every experiment's stages, tiny grid ({LANE})")
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rsx", lane.name],
        cwd=lane.parent,
        env={**os.environ, PROFILE_ENV: profile_arg},
        check=False,
    )
    seconds = time.perf_counter() - started
    text = report.read_text(encoding="utf-8") if report.is_file() else ""
    if text:
        out("")
        out(text.rstrip("\n"))
    else:
        out(f"check-real: no report written ({report}): the lane stopped before any stage ran")
    failed = done.returncode != 0 or not text or report_failed(text)
    out(f"check-real: {'FAILED' if failed else 'passed'} in {seconds:.0f} s ({report})")
    return exit_codes.CHECK_FAILED if failed else exit_codes.OK
