"""make report: the HTML site of a smoke run, opened in headless Chromium."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess

import matplotlib.pyplot as plt
import pytest

from deliberation.paper import browser, report
from deliberation.paper.build import build_paper
from deliberation.params import load_profile
from deliberation.plots import save_figure


def _install_chromium() -> str | None:
    """Chromium, installed with apt when absent and possible; None (with the reason) if not."""
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
def smoke_site(tmp_path, monkeypatch):
    monkeypatch.setenv("DELIBERATION_BUILD_DIR", str(tmp_path / "build"))
    result = build_paper("smoke", plan=False, out=lambda line: None)
    assert result.failed is None
    # One figure made here too, so the check always has an image file to load.
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    save_figure(fig, "report_check", profile=load_profile("smoke"), caption="a line",
                notebook="test")  # fmt: skip
    plt.close(fig)
    return report.build_report("smoke"), result


@pytest.mark.slow
def test_report_opens_in_chromium_with_every_image_link_and_banner(chromium, smoke_site, tmp_path):
    index, result = smoke_site
    shot = tmp_path / "index.png"
    check = browser.check_site(index, shot)
    assert check.ok, check
    pages = set(check.pages)
    for notebook in result.executed:
        assert f"notebooks/{notebook.removesuffix('.ipynb')}.html" in pages
    tables = sorted(p.stem for p in (index.parent / "tables").glob("*.csv"))
    assert tables and all(f"tables/{t}.html" in pages for t in tables)
    assert check.images >= 1 and (index.parent / "figures" / "report_check.png").is_file()
    assert check.banners == {"Profile smoke · synthetic (sim backend): not model results"}
    header = shot.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", header[16:24])
    assert width == 1280 and height > 200


@pytest.mark.slow
def test_the_check_finds_a_broken_link_and_a_broken_image(chromium, smoke_site):
    index, _ = smoke_site
    (index.parent / "tables" / "smoke_arithmetic.html").unlink()
    (index.parent / "figures" / "report_check.png").write_bytes(b"not a png")
    check = browser.check_site(index)
    assert not check.ok
    assert any("smoke_arithmetic.html" in link for link in check.broken_links)
    assert any("report_check.png" in image for image in check.broken_images)


def test_a_real_model_profile_is_labelled_as_model_output():
    label = report.run_label("qwen2.5-7b-vllm")
    assert not label.synthetic and "Qwen/Qwen2.5-7B-Instruct" in label.banner()
    assert report.run_label("smoke").synthetic
