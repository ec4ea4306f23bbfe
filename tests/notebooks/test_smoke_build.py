"""The whole paper on the smoke profile, built once for the session (conftest.py): the plan
printed first equals what the notebooks then sent, a second plan finds every call cached, every
listed output exists, a second build runs nothing, and the HTML report opens in headless Chromium
with every image and link working."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest

from deliberation.inference.cache import ResponseCache
from deliberation.paper import browser, outputs
from deliberation.paper.build import build_paper
from deliberation.paper.plan import plan_calls
from deliberation.paper.site import build_report
from deliberation.profiles.profile import load_profile
from deliberation.publish.plots import Figure, save_figure


def test_the_plan_printed_first_equals_what_the_notebooks_sent(in_smoke_build):
    result, plan = in_smoke_build["result"], in_smoke_build["plan"]
    assert result.ok, in_smoke_build["text"]
    assert in_smoke_build["text"].index("plan: profile smoke") < in_smoke_build["text"].index(
        "== 00"
    )
    cache = os.path.join(in_smoke_build["env"]["DELIBERATION_CACHE_DIR"], "smoke.sqlite")
    with ResponseCache(cache, read_only=True) as opened:
        stats = opened.stats()
    sent = {
        row.stage: (int(row.calls), int(row.prompt_tokens), int(row.completion_tokens))
        for row in stats.itertuples()
    }
    table = plan.table().groupby("stage")[["to_send", "prompt_tokens", "completion_tokens"]].sum()
    planned = {stage: tuple(int(v) for v in row) for stage, row in table.iterrows()}
    assert planned == sent and sent


def test_a_second_plan_finds_every_call_cached(in_smoke_build):
    first = in_smoke_build["plan"].totals()
    again = plan_calls("smoke").totals()
    assert again["to_send"] == 0 and again["cached"] == first["requests"] > 0


def test_every_listed_output_exists_and_a_second_build_runs_nothing(in_smoke_build):
    assert outputs.missing_outputs("smoke") == []
    # ... and every output is listed (figures/README.md maps each file to its notebook).
    assert outputs.unlisted_outputs("smoke") == []
    assert "not listed in figures/README.md" not in in_smoke_build["text"]
    lines: list[str] = []
    again = build_paper("smoke", out=lines.append)
    assert again.executed == [] and again.ok
    assert len(again.skipped) == len(in_smoke_build["result"].executed)
    assert "plan:" not in "\n".join(lines)  # nothing to run, nothing to plan


def test_every_figure_a_notebook_writes_is_shown_in_the_notebook(in_smoke_build):
    """The executed notebooks (papermill, as `make paper` runs them) hold an image output for
    every figure they wrote to figures/<profile>/ (the library never switches the kernel's
    inline backend off, and a saved figure displays itself)."""
    import json
    from collections import Counter

    import nbformat

    from deliberation.paper.executed import image_outputs

    root = Path(in_smoke_build["env"]["DELIBERATION_OUTPUT_ROOT"])
    written = Counter(
        json.loads(sidecar.read_text())["notebook"]
        for sidecar in (root / "figures" / "smoke").glob("*.provenance.json")
    )
    executed = Path(in_smoke_build["env"]["DELIBERATION_BUILD_DIR"]) / "executed" / "smoke"
    shown = {
        path.stem: image_outputs(nbformat.read(path, as_version=4))
        for path in sorted(executed.glob("[0-9][0-9]_*.ipynb"))
    }
    assert sum(written.values()) >= 8, written  # notebooks 02-07 make figures
    for stem, count in written.items():
        assert shown.get(stem, 0) >= count, (stem, shown)


@pytest.fixture
def site(in_smoke_build, tmp_path):
    # One figure made here too, so the check always has an image file to load.
    fig = Figure()
    ax = fig.subplots()
    ax.plot([0, 1], [0, 1])
    save_figure(fig, "report_check", profile=load_profile("smoke"), caption="a line",
                notebook="test")  # fmt: skip
    return build_report("smoke", out=tmp_path / "report")


def test_report_opens_in_chromium_with_every_image_link_and_banner(
    chromium, in_smoke_build, site, tmp_path
):
    shot = tmp_path / "index.png"
    check = browser.check_site(site, shot)
    assert check.ok, check
    pages = set(check.pages)
    for notebook in in_smoke_build["result"].executed:
        assert f"notebooks/{notebook.removesuffix('.ipynb')}.html" in pages
    tables = sorted(p.stem for p in (site.parent / "tables").glob("*.csv"))
    assert tables and all(f"tables/{t}.html" in pages for t in tables)
    figures = sorted((site.parent / "figures").glob("*.png"))
    assert check.images >= len(figures) >= 1
    # Every page carries the run's banner, except papers.html, which sets the papers beside
    # the sim and this profile (both synthetic here) and says so.
    papers = "Profile papers vs sim, smoke · sim: synthetic (sim backend), smoke: synthetic (sim backend)"
    assert check.banners == {"Profile smoke · synthetic (sim backend): not model results", papers}
    header = shot.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", header[16:24])
    assert width == 1280 and height > 200


def test_the_check_finds_a_broken_link_and_a_broken_image(chromium, site):
    (site.parent / "tables" / "smoke_arithmetic.html").unlink()
    (site.parent / "figures" / "report_check.png").write_bytes(b"not a png")
    check = browser.check_site(site)
    assert not check.ok
    assert any("smoke_arithmetic.html" in link for link in check.broken_links)
    assert any("report_check.png" in image for image in check.broken_images)
