"""The whole paper on the smoke profile, built once for this module: the plan printed first
equals what the notebooks then sent, every listed output exists, a second build runs nothing,
and the HTML report opens in headless Chromium with every image and link working."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess

import matplotlib.pyplot as plt
import pytest

from deliberation.inference.cache import ResponseCache
from deliberation.paper import browser, outputs, report
from deliberation.paper.build import build_paper
from deliberation.paper.plan import plan_calls
from deliberation.params import load_profile
from deliberation.plots import save_figure

FOLDERS = ("OUTPUT_ROOT", "CACHE_DIR", "BUILD_DIR")


@pytest.fixture(scope="module")
def smoke_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("smoke-run")
    env = {f"DELIBERATION_{name}": str(root / name.lower()) for name in FOLDERS}
    with pytest.MonkeyPatch.context() as patch:
        for name, value in env.items():
            patch.setenv(name, value)
        plan = plan_calls("smoke")
        lines: list[str] = []
        result = build_paper("smoke", out=lines.append)
    return {"env": env, "plan": plan, "result": result, "text": "\n".join(lines)}


@pytest.fixture
def in_smoke_run(smoke_run, monkeypatch):
    for name, value in smoke_run["env"].items():
        monkeypatch.setenv(name, value)
    return smoke_run


@pytest.mark.slow
def test_the_plan_printed_first_equals_what_the_notebooks_sent(in_smoke_run):
    result, plan = in_smoke_run["result"], in_smoke_run["plan"]
    assert result.ok, in_smoke_run["text"]
    assert in_smoke_run["text"].index("plan: profile smoke") < in_smoke_run["text"].index("== 00")
    cache = os.path.join(in_smoke_run["env"]["DELIBERATION_CACHE_DIR"], "smoke.sqlite")
    with ResponseCache(cache, read_only=True) as opened:
        stats = opened.stats()
    sent = {
        row.stage: (int(row.calls), int(row.prompt_tokens), int(row.completion_tokens))
        for row in stats.itertuples()
    }
    table = plan.table().groupby("stage")[["to_send", "prompt_tokens", "completion_tokens"]].sum()
    planned = {stage: tuple(int(v) for v in row) for stage, row in table.iterrows()}
    assert planned == sent and sent


@pytest.mark.slow
def test_every_listed_output_exists_and_a_second_build_runs_nothing(in_smoke_run):
    assert outputs.missing_outputs("smoke") == []
    lines: list[str] = []
    again = build_paper("smoke", out=lines.append)
    assert again.executed == [] and again.ok
    assert len(again.skipped) == len(in_smoke_run["result"].executed)
    assert "plan:" not in "\n".join(lines)  # nothing to run, nothing to plan


def _install_chromium() -> str | None:
    """Chromium, installed with apt when absent and possible; None, or the reason it is not."""
    if browser.find_chromium():
        return None
    if shutil.which("apt-get") is None or os.geteuid() != 0:
        return "Chromium is not installed and apt-get (as root) is not available to install it"
    for command in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "chromium"]):
        done = subprocess.run(command, capture_output=True, text=True, timeout=900, check=False)
        if done.returncode != 0:
            return f"could not install Chromium ({' '.join(command)}): {done.stderr[-300:]}"
    return None if browser.find_chromium() else "apt-get installed no chromium binary"


@pytest.fixture(scope="module")
def chromium():
    reason = _install_chromium()
    if reason:
        pytest.skip(reason)


@pytest.fixture
def site(in_smoke_run, tmp_path):
    # One figure made here too, so the check always has an image file to load.
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    save_figure(fig, "report_check", profile=load_profile("smoke"), caption="a line",
                notebook="test")  # fmt: skip
    plt.close(fig)
    return report.build_report("smoke", out=tmp_path / "report")


@pytest.mark.slow
def test_report_opens_in_chromium_with_every_image_link_and_banner(
    chromium, in_smoke_run, site, tmp_path
):
    shot = tmp_path / "index.png"
    check = browser.check_site(site, shot)
    assert check.ok, check
    pages = set(check.pages)
    for notebook in in_smoke_run["result"].executed:
        assert f"notebooks/{notebook.removesuffix('.ipynb')}.html" in pages
    tables = sorted(p.stem for p in (site.parent / "tables").glob("*.csv"))
    assert tables and all(f"tables/{t}.html" in pages for t in tables)
    figures = sorted((site.parent / "figures").glob("*.png"))
    assert check.images >= len(figures) >= 1
    assert check.banners == {"Profile smoke · synthetic (sim backend): not model results"}
    header = shot.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", header[16:24])
    assert width == 1280 and height > 200


@pytest.mark.slow
def test_the_check_finds_a_broken_link_and_a_broken_image(chromium, site):
    (site.parent / "tables" / "smoke_arithmetic.html").unlink()
    (site.parent / "figures" / "report_check.png").write_bytes(b"not a png")
    check = browser.check_site(site)
    assert not check.ok
    assert any("smoke_arithmetic.html" in link for link in check.broken_links)
    assert any("report_check.png" in image for image in check.broken_images)


def test_a_real_model_profile_is_labelled_as_model_output():
    label = report.run_label("qwen2.5-7b-vllm")
    assert not label.synthetic and "Qwen/Qwen2.5-7B-Instruct" in label.banner()
    assert report.run_label("smoke").synthetic
