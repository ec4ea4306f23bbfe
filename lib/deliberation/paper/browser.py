"""Open the report in headless Chromium and check it as a reader would see it.

:func:`check_site` starts Chromium (the ``chromium`` system package) with a fresh profile and
no background networking, drives it over the Chrome DevTools Protocol (``websocket-client``),
takes a screenshot of the index, and visits every page the index links to (and the pages they
link to, inside the site): on each it checks that every image loaded (decoded, non-zero size),
that every link resolves to an existing file, and that the page carries the provenance banner.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deliberation import exit_codes
from deliberation.io import http

_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--remote-allow-origins=*",
    "--window-size=1280,1600",
]
_LISTENING = re.compile(r"DevTools listening on (ws://\S+)")
_PAGE_STATE = """JSON.stringify({
  banner: (document.querySelector('#provenance') || {}).textContent || '',
  images: Array.from(document.images).map(i => ({src: i.currentSrc || i.src,
                                                ok: i.complete && i.naturalWidth > 0})),
  links: Array.from(document.querySelectorAll('a[href]')).map(a => a.href),
})"""


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


class DevTools:
    """A minimal Chrome DevTools Protocol session on one page target."""

    def __init__(self, websocket_url: str, timeout_s: float) -> None:
        import websocket

        self._ws = websocket.create_connection(websocket_url, timeout=timeout_s)
        self._next = 0
        self.timeout_s = timeout_s

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self._next += 1
        ident = self._next
        self._ws.send(json.dumps({"id": ident, "method": method, "params": params}))
        while True:
            message = json.loads(self._ws.recv())
            if message.get("id") == ident:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})

    def navigate(self, url: str) -> None:
        """Load ``url`` and wait for its load event."""
        self.call("Page.navigate", url=url)
        deadline = time.monotonic() + self.timeout_s
        while time.monotonic() < deadline:
            message = json.loads(self._ws.recv())
            if message.get("method") == "Page.loadEventFired":
                return
        raise TimeoutError(f"{url} did not finish loading in {self.timeout_s} s")

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return result["result"].get("value")

    def close(self) -> None:
        self._ws.close()


@contextmanager
def headless_chromium(executable: str | None = None, timeout_s: float = 30.0) -> Iterator[DevTools]:
    """Chromium with a fresh ``--user-data-dir`` and a DevTools session on its first page."""
    executable = executable or find_chromium()
    if executable is None:
        raise FileNotFoundError("no Chromium found (Debian: apt-get install chromium)")
    # Chromium's helper processes may still write its profile while it exits: clean up what
    # can be removed, never fail the check over it.
    with tempfile.TemporaryDirectory(
        prefix="deliberation-chromium-", ignore_cleanup_errors=True
    ) as profile_dir:
        process = subprocess.Popen(
            [executable, *_FLAGS, f"--user-data-dir={profile_dir}", "--remote-debugging-port=0",
             "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        try:
            browser_url = _wait_for_devtools(process, timeout_s)
            port = urllib.parse.urlsplit(browser_url).port
            listing = http.request(
                "GET", f"http://127.0.0.1:{port}/json/list", deadline_s=10, max_bytes=2**20,
                deadline_what="the browser's DevTools", size_what="the browser's page list",
            )  # fmt: skip
            targets = json.loads(listing.body)
            page = next(t for t in targets if t.get("type") == "page")
            session = DevTools(page["webSocketDebuggerUrl"], timeout_s)
            try:
                session.call("Page.enable")
                yield session
            finally:
                session.close()
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _wait_for_devtools(process: subprocess.Popen, timeout_s: float) -> str:
    assert process.stderr is not None
    deadline = time.monotonic() + timeout_s
    seen = []
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        if not line and process.poll() is not None:
            break
        seen.append(line)
        match = _LISTENING.search(line)
        if match:
            return match.group(1)
    raise RuntimeError("Chromium did not start its DevTools endpoint:\n" + "".join(seen[-20:]))


@dataclass
class _SiteCheck:
    pages: list[str] = field(default_factory=list)
    images: int = 0
    links: int = 0
    broken_images: list[str] = field(default_factory=list)
    broken_links: list[str] = field(default_factory=list)
    external_links: list[str] = field(default_factory=list)
    pages_without_banner: list[str] = field(default_factory=list)
    banners: set[str] = field(default_factory=set)

    @property
    def ok(self) -> bool:
        return not (
            self.broken_images
            or self.broken_links
            or self.external_links
            or self.pages_without_banner
        )


def _file_of(url: str) -> Path | None:
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "file":
        return None
    return Path(urllib.parse.unquote(parts.path))


def check_site(index: Path, screenshot: Path | None = None, timeout_s: float = 30.0) -> _SiteCheck:
    """Visit the site from ``index`` (see the module docstring); screenshot the index."""
    index = index.resolve()
    site = index.parent
    check = _SiteCheck()
    queue, seen = [index], {index}
    with headless_chromium(timeout_s=timeout_s) as browser:
        while queue:
            page = queue.pop(0)
            browser.navigate(page.as_uri())
            if page == index and screenshot is not None:
                shot = browser.call("Page.captureScreenshot", format="png")
                screenshot.write_bytes(base64.b64decode(shot["data"]))
            state = json.loads(browser.evaluate(_PAGE_STATE))
            name = str(page.relative_to(site))
            check.pages.append(name)
            if not state["banner"].strip():
                check.pages_without_banner.append(name)
            check.banners.add(" ".join(state["banner"].split()))
            for image in state["images"]:
                check.images += 1
                if not image["ok"]:
                    check.broken_images.append(f"{name}: {image['src'][:120]}")
            for link in state["links"]:
                check.links += 1
                target = _file_of(link)
                if target is None:
                    check.external_links.append(f"{name}: {link}")
                    continue
                if not target.exists():
                    check.broken_links.append(f"{name}: {link}")
                elif (
                    target.suffix == ".html" and target.is_relative_to(site) and target not in seen
                ):
                    seen.add(target)
                    queue.append(target)
    return check


def install_chromium(*, install: bool = True) -> str:
    """Headless Chromium for the report check (``make chromium``): the one installed, else
    (with ``install``) the ``chromium`` package through apt-get when running as root; a line
    saying which. Raises :class:`ChromiumUnavailable` when neither works (the message says
    what to do)."""
    found = find_chromium()
    if found:
        return f"chromium: installed ({found})"
    if not install:
        raise ChromiumUnavailable("chromium: not installed (make chromium installs it)")
    if shutil.which("apt-get") is None or os.geteuid() != 0:
        raise ChromiumUnavailable(
            "chromium: not installed and apt-get (as root) is not available: install the"
            " chromium package"
        )
    for command in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "chromium"]):
        done = subprocess.run(command, check=False)
        if done.returncode != 0:
            raise ChromiumUnavailable(f"chromium: `{' '.join(command)}` failed ({done.returncode})")
    found = find_chromium()
    if not found:
        raise ChromiumUnavailable("chromium: apt-get installed the package but no browser is found")
    return f"chromium: installed now ({found})"


class ChromiumUnavailable(RuntimeError):
    """No headless Chromium here and none could be installed; the message says what to do."""

    exit_code = exit_codes.BAD_INPUT  # the machine lacks a system package
