"""`make lab` as a reader uses it: JupyterLab (deliberation lab's command line) opened in
headless Chromium, a paper notebook run there with "Run All", and its figure seen inline: an
image in the notebook's output area, rendered (decoded, non-zero size), from the lab's own
kernel (this environment's Python, which has the package). Chromium is a system package (`make
chromium`); without it the test skips, saying so."""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from deliberation.paper import browser
from deliberation.paper.lab import lab_command

NOTEBOOK = "05_evidence_balance.ipynb"  # a figure, no external data, ~20 s on smoke
TOKEN = "deliberation-lab-test"
STATE = """(() => {
  const app = window.jupyterapp;  // exposed by --LabApp.expose_app_in_browser
  // The notebook's panel in the main area (a headless page has no focus: no currentWidget).
  const panel = app && Array.from(app.shell.widgets('main')).find(w => w.sessionContext);
  const session = panel && panel.sessionContext && panel.sessionContext.session;
  const kernel = session && session.kernel;
  const images = Array.from(document.querySelectorAll('.jp-OutputArea-output img'));
  return JSON.stringify({
    app: !!app,
    kernel: kernel ? kernel.status : null,
    kernelName: kernel ? kernel.name : null,
    running: Array.from(document.querySelectorAll('.jp-InputArea-prompt'))
      .filter(p => p.textContent.includes('*')).length,
    errors: Array.from(document.querySelectorAll('.jp-OutputArea-output'))
      .filter(o => o.getAttribute('data-mime-type') === 'application/vnd.jupyter.stderr'
                   && o.textContent.includes('Traceback')).map(o => o.textContent.slice(0, 400)),
    images: images.map(i => ({ok: i.complete && i.naturalWidth > 0, width: i.naturalWidth})),
  });
})()"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait(check, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(1)
    raise TimeoutError(f"{what} within {timeout_s:.0f} s")


@pytest.fixture
def lab(tmp_path: Path):
    """The lab on a copy of one notebook (running it in the browser must not touch the
    checkout: JupyterLab autosaves), the smoke profile for its kernels."""
    pytest.importorskip(
        "jupyterlab",
        reason="JupyterLab is not installed (the lab extra: make notebooks installs it)",
    )
    root = tmp_path / "root"
    (root / "notebooks").mkdir(parents=True)
    shutil.copy(Path(__file__).parents[2] / "notebooks" / NOTEBOOK, root / "notebooks")
    port = _free_port()
    argv, env = lab_command(
        "smoke",
        [
            "--no-browser", f"--port={port}", f"--IdentityProvider.token={TOKEN}",
            "--LabApp.expose_app_in_browser=True", f"--LabApp.workspaces_dir={tmp_path}/ws",
            f"--LabApp.user_settings_dir={tmp_path}/settings",
        ],
        root=root,
    )  # fmt: skip
    env = {**env, "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"), "HOME": str(tmp_path)}
    log = (tmp_path / "lab.log").open("w")
    server = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"

    def up() -> bool:
        try:
            with urllib.request.urlopen(f"{url}/api/status?token={TOKEN}", timeout=2) as reply:
                return reply.status == 200
        except OSError:
            return server.poll() is not None  # died: stop waiting, the assert below says so

    try:
        _wait(up, 120, "JupyterLab did not answer")
        assert server.poll() is None, (tmp_path / "lab.log").read_text()[-3000:]
        yield {"url": url, "root": root, "log": tmp_path / "lab.log"}
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


def test_a_notebook_run_in_jupyterlab_shows_its_figure_inline(chromium, lab, tmp_path) -> None:
    with browser.headless_chromium(timeout_s=60) as page:
        page.call("Page.navigate", url=f"{lab['url']}/lab/tree/notebooks/{NOTEBOOK}?token={TOKEN}")

        def state() -> dict:
            try:
                return json.loads(page.evaluate(STATE) or "{}")
            except (RuntimeError, ValueError):
                return {}

        _wait(lambda: state().get("kernel") == "idle", 180, "no idle kernel in the lab")
        page.evaluate(
            "(() => { const app = window.jupyterapp;"
            " const panel = Array.from(app.shell.widgets('main')).find(w => w.sessionContext);"
            " app.shell.activateById(panel.id);"
            " return app.commands.execute('notebook:run-all-cells'); })()"
        )
        _wait(
            lambda: state().get("running", 1) > 0 or state().get("images"),
            60,
            "Run All did not start",
        )

        def finished() -> dict | None:
            now = state()
            done = now.get("images") and not now.get("running")
            return now if done or now.get("errors") else None

        final = _wait(finished, 600, "the notebook did not finish with a figure")
        shot = page.call("Page.captureScreenshot", format="png")
        page.evaluate(
            "document.querySelector('.jp-OutputArea-output img').scrollIntoView({block: 'center'})"
        )
        time.sleep(1)
        figure_shot = page.call("Page.captureScreenshot", format="png")
    (tmp_path / "lab.png").write_bytes(base64.b64decode(shot["data"]))
    (tmp_path / "lab-figure.png").write_bytes(base64.b64decode(figure_shot["data"]))
    assert not final["errors"], final["errors"]
    assert final["kernelName"] == "python3"  # this environment's Python: it has the package
    assert final["images"] and all(image["ok"] for image in final["images"]), final
    assert final["images"][0]["width"] > 300
    # The run wrote the figure the notebook showed (the kernel ran the library, on smoke).
    written = Path(os.environ["DELIBERATION_OUTPUT_ROOT"]) / "figures" / "smoke"
    assert (written / "05_accuracy_by_lead.png").is_file()
