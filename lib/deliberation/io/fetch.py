"""Download a pinned file with its sha256 checked (``make data`` and ``make models`` use it).

Each file is streamed to a temporary file beside its target, hashed on the way, and moved into
place only when its sha256 matches the pin (an ``http(s)`` URL on the one HTTP path,
:mod:`deliberation.io.http`, within ``DOWNLOAD_DEADLINE_S`` and ``DOWNLOAD_MAX_BYTES``); on a mismatch the temporary file is deleted, the
target is left as it was, and the error names the file. A file already present with the right
hash is not downloaded again.
"""

from __future__ import annotations

import hashlib
import logging
import tempfile
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO, Literal, Protocol
from urllib.parse import urlsplit

from deliberation.io import http
from deliberation.io.atomic import atomic_path

logger = logging.getLogger(__name__)

Opener = Callable[[str], BinaryIO]
Status = Literal["present", "downloaded", "missing", "mismatch"]
_CHUNK = 1 << 16
# A download must arrive whole within an hour and be at most 8 GiB (the pinned files are far
# smaller; the bounds stop a server that trickles or never ends).
DOWNLOAD_DEADLINE_S = 3600.0
DOWNLOAD_MAX_BYTES = 8 * 2**30


class ChecksumMismatch(ValueError):
    """A file whose sha256 is not the pinned one."""

    def __init__(self, path: Path | str, expected: str, actual: str, url: str = "") -> None:
        origin = f" (from {url})" if url else ""
        super().__init__(f"{path}{origin}: sha256 {actual} does not match the pinned {expected}")
        self.path = str(path)
        self.expected = expected
        self.actual = actual


class FetchError(RuntimeError):
    """One or more files could not be fetched; ``failures`` maps path -> reason."""

    def __init__(self, failures: dict[str, str]) -> None:
        lines = "\n".join(f"  {path}: {reason}" for path, reason in failures.items())
        super().__init__(f"{len(failures)} file(s) failed:\n{lines}")
        self.failures = failures


class _Pinned(Protocol):
    """What a pin holds: the file's sha256."""

    sha256: str


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def default_opener(url: str) -> BinaryIO:
    """The file at ``url``: an ``http(s)`` one downloaded first on the one HTTP path (into a
    temporary file), a ``file:`` one read in place."""
    if urlsplit(url).scheme not in ("http", "https"):
        return urllib.request.urlopen(url, timeout=60)
    spool = tempfile.TemporaryFile()  # noqa: SIM115 (returned open, closed by the caller)
    try:
        _download(url, spool.write)
    except BaseException:
        spool.close()
        raise
    spool.seek(0)
    return spool  # type: ignore[return-value]


def _download(url: str, take: Callable[[bytes], object]) -> None:
    """Stream an ``http(s)`` URL to ``take`` on the one HTTP path; any failure is an OSError
    naming the URL (what the callers report)."""
    try:
        reply = http.request(
            "GET", url, sink=take, deadline_s=DOWNLOAD_DEADLINE_S, max_bytes=DOWNLOAD_MAX_BYTES,
            deadline_what="the download bound", size_what="the download bound",
        )  # fmt: skip
    except Exception as exc:  # transport errors, bounds: this file failed, the others go on
        raise OSError(f"{url}: {exc}") from None
    if reply.status != 200:
        raise OSError(f"{url}: HTTP {reply.status}")


def fetch_file(url: str, pinned: _Pinned, target: Path, opener: Opener | None = None) -> Status:
    """Make ``target`` hold the pinned file: keep it if its hash matches, else download and check."""
    if target.is_file() and sha256_of(target) == pinned.sha256:
        return "present"
    digest = hashlib.sha256()
    with atomic_path(target) as tmp:
        with (opener or default_opener)(url) as response, tmp.open("wb") as out:
            for chunk in iter(lambda: response.read(_CHUNK), b""):
                digest.update(chunk)
                out.write(chunk)
        if digest.hexdigest() != pinned.sha256:
            raise ChecksumMismatch(target, pinned.sha256, digest.hexdigest(), url)
    logger.info("downloaded %s", target)
    return "downloaded"
