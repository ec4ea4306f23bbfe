"""Replays of published answers (``deliberation replay``, ``paper/replay.py``).

The stand-in: notebook 00 built on the smoke profile into a throwaway "repository" (its
``tables/smoke/`` play the committed tables), its answers exported to ``results/smoke/``, then
replayed: imported into a fresh cache, rebuilt sending nothing, every table byte-identical. A
published file missing an answer stops the replay before any notebook runs, naming the stage. A
profile shaped like the llama.cpp one (openai backend, a ``server:`` section), answered live by
serve-sim, replays with nothing listening and its server never started.

The real thing, every shipped real-model profile with published answers in this repository
(``results/<profile>/responses.jsonl.gz``) against its committed tables, is nbval's run of its
committed executed notebooks from those answers (test_executed_notebooks.py): one execution
checks the notebooks' outputs and the tables.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from deliberation.inference.published import export_responses, published_path
from deliberation.paper.build import ReplayIncomplete, build_paper
from deliberation.paper.replay import replay_published
from deliberation.profiles.profile import load_profile
from deliberation.testing import sim_server_in_thread

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


SERVER_PROFILE = """\
name: replayed-server
backend: openai
model: sim-mechanism
seed: 0
experiments: {{smoke_items: 6}}   # fewer than the full 20: "reduced grid"
openai:
  base_url: {base_url}
  max_retries: 0
  timeout_s: 10
server:
  command: ["{{python}}", "-c", "open({marker!r}, 'w'); raise SystemExit(3)"]
  port: {port}
  log_file: {log}
"""


def test_a_profile_with_a_server_replays_without_starting_or_asking_it(tmp_path: Path) -> None:
    """The shape of the llama.cpp profile (openai backend, a server: section), answered live by
    serve-sim, then replayed with nothing listening: its server command (which would leave a
    marker) never runs, and the replay labels from the profile alone."""
    marker, root = tmp_path / "server-started", tmp_path / "published"
    profile_file = tmp_path / "replayed-server.yaml"
    with sim_server_in_thread() as running, pytest.MonkeyPatch.context() as patch:
        port = int(running.base_url.rsplit(":", 1)[1].split("/")[0])
        profile_file.write_text(SERVER_PROFILE.format(
            base_url=running.base_url, port=port, marker=str(marker),
            log=str(tmp_path / "server.log"),
        ))  # fmt: skip
        patch.setenv("DELIBERATION_OUTPUT_ROOT", str(root))
        patch.setenv("DELIBERATION_CACHE_DIR", str(tmp_path / "live-cache"))
        patch.setenv("DELIBERATION_BUILD_DIR", str(tmp_path / "live-build"))
        assert build_paper(str(profile_file), notebooks=["00"], out=lambda _: None).ok
        assert export_responses(load_profile(profile_file)).answers == 6
    first = replay_published(str(profile_file), committed_root=root, notebooks=["00"],
                             workdir=tmp_path / "replay-a", out=lambda _: None)  # fmt: skip
    assert first.build is not None and first.build.ok and not marker.exists()
    # The live build's answers came from serve-sim, which says so: its tables were labelled
    # synthetic. The replay asks no server, so only the labels differ (in the CSV, its source
    # column); the data do not.
    assert set(first.different) == SMOKE_TABLES
    rebuilt = tmp_path / "replay-a" / "output_root" / "tables" / "replayed-server"
    live, replayed = (
        pd.read_csv(folder / "smoke_arithmetic.csv")
        for folder in (root / "tables" / "replayed-server", rebuilt)
    )
    assert set(live["source"]) == {"synthetic (sim backend)"}
    assert set(replayed["source"]) == {"sim-mechanism, reduced grid"}
    assert live.drop(columns="source").equals(replayed.drop(columns="source"))
    assert "[sim-mechanism, reduced grid]" in (rebuilt / "smoke_arithmetic.md").read_text()
    # Replayed again against the first replay's tables: every byte.
    second_root = tmp_path / "second"
    shutil.copytree(rebuilt, second_root / "tables" / "replayed-server")
    shutil.copytree(root / "results", second_root / "results")
    second = replay_published(str(profile_file), committed_root=second_root, notebooks=["00"],
                              out=lambda _: None)  # fmt: skip
    assert second.ok and set(second.identical) | set(second.checkout_only) == SMOKE_TABLES
    assert not marker.exists()
