"""Fetch and check the DHD problem sets' pinned files (what ``make data`` runs).

Each file is fetched by :func:`deliberation.io.fetch.fetch_file` (streamed beside its target,
hashed on the way, moved into place only when its sha256 matches the pin); ``fetch`` tries every
file of the chosen benchmarks and then names each one that failed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from deliberation.benchmarks.problems.sources import SOURCES, BenchmarkSource
from deliberation.io.fetch import (
    ChecksumMismatch,
    FetchError,
    Opener,
    Status,
    fetch_file,
    sha256_of,
)


@dataclass(frozen=True)
class _FileStatus:
    benchmark: str
    path: Path
    status: Status


def _selected(names: Iterable[str] | None) -> list[BenchmarkSource]:
    if not names:
        return list(SOURCES)
    wanted = list(names)
    known = {s.name for s in SOURCES}
    unknown = [n for n in wanted if n not in known]
    if unknown:
        raise KeyError(f"no pinned source for {unknown}; known: {sorted(known)}")
    return [s for s in SOURCES if s.name in wanted]


def fetch(
    dest: Path,
    names: Iterable[str] | None = None,
    *,
    opener: Opener | None = None,
    sources: Iterable[BenchmarkSource] | None = None,
) -> list[_FileStatus]:
    """Fetch every pinned file of the named benchmarks into ``dest/<benchmark>/``.

    Tries every file, then raises :class:`FetchError` naming each one that failed.
    """
    chosen = list(sources) if sources is not None else _selected(names)
    results: list[_FileStatus] = []
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
            results.append(_FileStatus(entry.name, target, status))
    if failures:
        raise FetchError(failures)
    return results


def verify(
    root: Path, names: Iterable[str] | None = None, sources: Iterable[BenchmarkSource] | None = None
) -> list[_FileStatus]:
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
            results.append(_FileStatus(entry.name, path, status))
    return results
