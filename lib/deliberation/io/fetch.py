"""Download the pinned benchmark files with sha256 checks (what ``make data`` runs).

Each file is streamed to a temporary file beside its target, hashed on the way, and moved into
place only when its sha256 matches the pin; on a mismatch the temporary file is deleted, the
target is left as it was, and the error names the file. A file already present with the right
hash is not downloaded again.
"""

from __future__ import annotations

import hashlib
import logging
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Literal

from deliberation.benchmarks.problems.sources import SOURCES, BenchmarkSource, PinnedFile
from deliberation.io.atomic import atomic_path

logger = logging.getLogger(__name__)

Opener = Callable[[str], BinaryIO]
Status = Literal["present", "downloaded", "missing", "mismatch"]
_CHUNK = 1 << 16


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


@dataclass(frozen=True)
class FileStatus:
    benchmark: str
    path: Path
    status: Status


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def default_opener(url: str) -> BinaryIO:
    return urllib.request.urlopen(url, timeout=60)


def _selected(names: Iterable[str] | None) -> list[BenchmarkSource]:
    if not names:
        return list(SOURCES)
    wanted = list(names)
    known = {s.name for s in SOURCES}
    unknown = [n for n in wanted if n not in known]
    if unknown:
        raise KeyError(f"no pinned source for {unknown}; known: {sorted(known)}")
    return [s for s in SOURCES if s.name in wanted]


def fetch_file(url: str, pinned: PinnedFile, target: Path, opener: Opener | None = None) -> Status:
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


def fetch(
    dest: Path,
    names: Iterable[str] | None = None,
    *,
    opener: Opener | None = None,
    sources: Iterable[BenchmarkSource] | None = None,
) -> list[FileStatus]:
    """Fetch every pinned file of the named benchmarks into ``dest/<benchmark>/``.

    Tries every file, then raises :class:`FetchError` naming each one that failed.
    """
    chosen = list(sources) if sources is not None else _selected(names)
    results: list[FileStatus] = []
    failures: dict[str, str] = {}
    for entry in chosen:
        for pinned in entry.files:
            target = dest / entry.name / pinned.local_path
            try:
                status = fetch_file(entry.url(pinned), pinned, target, opener)
            except ChecksumMismatch as error:
                failures[str(target)] = str(error)
                continue
            except OSError as error:  # URLError, HTTPError and disk errors are all OSErrors
                failures[str(target)] = f"download from {entry.url(pinned)} failed: {error}"
                continue
            results.append(FileStatus(entry.name, target, status))
    if failures:
        raise FetchError(failures)
    return results


def verify(
    root: Path, names: Iterable[str] | None = None, sources: Iterable[BenchmarkSource] | None = None
) -> list[FileStatus]:
    """Check the files under ``root/<benchmark>/`` against their pins without downloading."""
    chosen = list(sources) if sources is not None else _selected(names)
    results = []
    for entry in chosen:
        for pinned in entry.files:
            path = root / entry.name / pinned.local_path
            if not path.is_file():
                status: Status = "missing"
            else:
                status = "present" if sha256_of(path) == pinned.sha256 else "mismatch"
            results.append(FileStatus(entry.name, path, status))
    return results
