"""Replays of published answers (``deliberation replay``, ``paper/replay.py``).

The stand-in: notebook 00 built on the smoke profile into a throwaway "repository" (its
``tables/smoke/`` play the committed tables), its answers exported to ``results/smoke/``, then
replayed: imported into a fresh cache, rebuilt sending nothing, every table byte-identical. A
published file missing an answer stops the replay before any notebook runs, naming the stage.

Then the real thing: every shipped real-model profile with published answers in this repository
(``results/<profile>/responses.jsonl.gz``) is replayed against its committed tables; until one
is committed the test says so (skipped: "no published results").
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from deliberation import paths
from deliberation.inference.published import export_responses, published_path
from deliberation.paper.build import ReplayIncomplete, build_paper
from deliberation.paper.replay import replay_published
from deliberation.params import load_profile, shipped_profiles

SMOKE_TABLES = {"smoke_arithmetic.csv", "smoke_arithmetic.md", "smoke_arithmetic.tex",
                "smoke_arithmetic.provenance.json"}  # fmt: skip


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A throwaway repository: notebook 00's smoke tables and the answers behind them."""
    root = tmp_path_factory.mktemp("published")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DELIBERATION_OUTPUT_ROOT", str(root))
        patch.setenv("DELIBERATION_CACHE_DIR", str(root / "original-cache"))
        patch.setenv("DELIBERATION_BUILD_DIR", str(root / "original-build"))
        assert build_paper("smoke", notebooks=["00"], out=lambda line: None).ok
        done = export_responses(load_profile("smoke"))
    assert done.path == published_path("smoke", root) and done.answers > 0
    return root


def test_a_replay_rebuilds_every_committed_table_byte_for_byte_sending_nothing(
    published: Path,
) -> None:
    lines: list[str] = []
    report = replay_published("smoke", committed_root=published, notebooks=["00"], out=lines.append)
    assert report.ok, "\n".join(report.lines() + lines)
    assert report.build is not None and report.build.executed == ["00_smoke.ipynb"]
    assert report.imported is not None and report.imported.added > 0
    # The sim's tables carry no checkout-dependent field but the sidecar's git fields.
    assert SMOKE_TABLES - {"smoke_arithmetic.provenance.json"} <= set(report.identical)
    assert set(report.identical) | set(report.checkout_only) == SMOKE_TABLES
    assert not report.different and not report.not_rebuilt
    plan = "\n".join(lines)
    assert ", 0 to send" in plan and "calls are not in the response cache" not in plan


def test_a_published_file_missing_an_answer_stops_the_replay_before_any_notebook(
    published: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "repo"
    file = published_path("smoke", copy)
    file.parent.mkdir(parents=True)
    with gzip.open(published_path("smoke", published), "rt", encoding="utf-8") as text:
        header, *answers = [json.loads(line) for line in text]
    header["answers"] -= 1
    with gzip.open(file, "wt", encoding="utf-8") as text:
        text.writelines(json.dumps(line) + "\n" for line in [header, *answers[1:]])
    report = replay_published("smoke", committed_root=copy, notebooks=["00"], out=lambda _: None)
    assert not report.ok and report.build is not None and not report.build.executed
    assert isinstance(report.build.failed, ReplayIncomplete)
    message = str(report.build.failed)
    assert "replay: 1 planned calls are not in the response cache" in message
    assert "00_smoke: smoke.arithmetic" in message


def _published_real_profiles() -> list[str]:
    real = [name for name in shipped_profiles() if not load_profile(name).synthetic]
    return [name for name in real if published_path(name, paths.repo_root()).is_file()]


def test_every_published_real_model_run_replays_to_its_committed_tables() -> None:
    """CI's replay: a fresh clone without the model or its engine rebuilds the committed tables
    of every real-model profile that publishes its answers."""
    profiles = _published_real_profiles()
    if not profiles:
        pytest.skip("no published results for any shipped real-model profile (results/<profile>/)")
    failed = []
    for name in profiles:
        report = replay_published(name, committed_root=paths.repo_root())
        print("\n".join(report.lines()))
        if not report.ok:
            failed.append(f"{name}: " + "; ".join(report.lines()[-4:]))
    assert not failed, "\n".join(failed)
