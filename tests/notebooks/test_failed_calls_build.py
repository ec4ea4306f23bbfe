"""`make paper` with a server that is down (through the library's build function, on a tiny
notebook): the build stops non-zero with the count and first error, the notebook is recorded
as not current and its table marked incomplete (caption and sidecar, also on the report page);
once the server is back the next build reruns it, sending only the failed call."""

from __future__ import annotations

import json

import pytest
from helpers.failing_server import failing_server
from helpers.toy_paper import notebook

from deliberation.paper import build, outputs
from deliberation.paper.site import build_report

CELL = """\
import pandas as pd
from deliberation.inference import open_run
from deliberation.inference.base import ChatRequest
from deliberation.profiles.profile import load_profile
from deliberation.publish.tables import write_table
settings = load_profile(profile)
_, client = open_run(load_profile({profile_file!r}), cache_file={cache!r}, progress=False)
prompts = ["What is 1 + 2?", "What is 2 + 5?"]
answers = client.generate(
    [ChatRequest.from_prompt(p, stage="smoke.arithmetic", max_tokens=16) for p in prompts]
)
write_table(pd.DataFrame({{"answer": [a.text for a in answers]}}), "calls", profile=settings,
            caption="answers", notebook="00_calls", latex=False)
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.setenv("DELIBERATION_BUILD_DIR", str(tmp_path / "build"))
    monkeypatch.setenv("DELIBERATION_OUTPUT_ROOT", str(tmp_path / "out"))
    folder = tmp_path / "notebooks"
    folder.mkdir()
    (folder / "manifest.yaml").write_text("notebooks:\n  00_calls.ipynb: {}\n")
    readme = tmp_path / "README.md"
    readme.write_text(
        f"# outputs\n\n{outputs.BEGIN}\n| notebook | file |\n| --- | --- |\n"
        f"| 00_calls | `tables/{{profile}}/calls.csv` |\n{outputs.END}\n"
    )
    return {"folder": folder, "readme": readme, "root": tmp_path}


def _build(project):
    lines: list[str] = []
    result = build.build_paper(
        "smoke", folder=project["folder"], readme=project["readme"], plan=False,
        out=lines.append,
    )  # fmt: skip
    return result, "\n".join(lines)


def test_a_build_against_a_down_server_fails_and_the_next_one_reruns_only_the_failures(
    project,
) -> None:
    root = project["root"]
    with failing_server() as server:
        profile_file = root / "served.yaml"
        profile_file.write_text(
            "name: served\nbackend: openai\nmodel: sim-mechanism\n"
            f"openai:\n  base_url: {server.base_url}\n  max_retries: 1\n  timeout_s: 10\n"
            "  backoff_base_s: 0.01\n  backoff_max_s: 0.02\n"
        )
        notebook(
            project["folder"] / "00_calls.ipynb",
            CELL.format(profile_file=str(profile_file), cache=str(root / "cache.sqlite")),
        )
        server.message = "the model is still loading"
        server.fail = lambda stage, body: "2 + 5" in body["messages"][-1]["content"]

        first, text = _build(project)
        assert not first.ok and isinstance(first.failed, build.CallsFailed)
        assert "1 model calls failed" in text and "the model is still loading" in text
        assert server.base_url in text
        sidecar = root / "out" / "tables" / "smoke" / "calls.provenance.json"
        record = json.loads(sidecar.read_text())
        assert record["incomplete"]["failed_calls"] == 1
        assert record["caption"].startswith("INCOMPLETE (not final)")
        markdown = (root / "out" / "tables" / "smoke" / "calls.md").read_text()
        assert markdown.startswith("**INCOMPLETE (not final)")
        page = build_report("smoke", out=root / "report").read_text()
        assert "INCOMPLETE: 1 model calls failed" in page

        server.fail = lambda stage, body: False
        server.reset()
        second, text = _build(project)
        assert second.ok and second.executed == ["00_calls.ipynb"]
        assert "incomplete: 1 model calls failed in its last run" in text
        assert server.total_posts == 1  # only the failed call is sent again
        record = json.loads(sidecar.read_text())
        assert "incomplete" not in record and not record["caption"].startswith("INCOMPLETE")
        assert "INCOMPLETE" not in build_report("smoke", out=root / "report").read_text()

        third, _ = _build(project)
        assert third.ok and third.executed == [] and server.total_posts == 1
