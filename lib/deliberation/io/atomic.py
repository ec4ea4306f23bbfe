"""Write files so that nothing half-written is ever left behind: write beside, then rename.

* One file: :func:`atomic_path` yields a temporary path in the target's folder and renames it
  into place only when the block succeeds.
* A set of files that belong together (a table's CSV, Markdown, LaTeX and provenance sidecar; a
  figure's PNG, PDF and sidecar): :func:`write_file_set` writes them all or none. Every file is
  written to a temporary path first, then the sidecar (with the hashes of the others); then a
  small *journal* listing the renames is put in place, the renames are done, the sidecar last,
  and the journal is removed. A run killed before the journal exists leaves the old set whole;
  a run killed after it is completed by the next write into that folder (roll forward), so a
  reader never keeps a new CSV beside an old sidecar.
* Temporary files carry the writer's host and process id; the next write into the folder
  removes those whose process is gone (or, from another host, that are older than a day).
* A target that cannot be written (no space, a read-only disk, no permission) raises
  :class:`OutputUnwritableError`: one line naming the file and the space free on its disk, which
  the CLI prints without a traceback (exit code ``OUTPUT_UNWRITABLE``).
* Files are created with mode ``0o666`` minus the umask, as ``open()`` would (0644 under the
  usual umask 022), not ``mkstemp``'s 0600 that co-workers cannot read.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import secrets
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from deliberation import exit_codes
from deliberation.io import disk
from deliberation.io.processes import HOST_TAG, process_alive

# .<target name>.<host>-<pid>-<token>.tmp (a file) or .set (a journal of renames)
_TEMP = re.compile(r"^\..+\.(?P<host>[0-9a-f]{8})-(?P<pid>\d+)-[0-9a-f]{8}\.(?P<kind>tmp|set)$")
# Temporary files of older versions (tempfile.mkstemp names, no process id).
_LEGACY_TEMP = re.compile(r"^\..+\.[A-Za-z0-9_]{8}\.tmp$")
_STALE_AFTER_S = 24 * 3600.0


class OutputUnwritableError(OSError):
    """An output file could not be written; the message names it (and the free space)."""

    exit_code = exit_codes.OUTPUT_UNWRITABLE

    def __init__(self, target: Path, cause: OSError) -> None:
        why = cause.strerror or str(cause)
        if disk.is_disk_full(cause):
            why = f"its disk is full ({disk.free_space(target)}); free space and run again"
        super().__init__(cause.errno, f"cannot write {target}: {why}")
        self.target = target

    def __str__(self) -> str:
        return str(self.strerror)


# Errors of the caller's own writing that mean the target's disk or folder refuses the file.
_WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS})


@contextlib.contextmanager
def _unwritable_as_error(target: Path, *, any_error: bool) -> Iterator[None]:
    """Turn an OSError into :class:`OutputUnwritableError` naming ``target``: any OSError of
    this module's own steps (``any_error``), only write errors from the caller's block."""
    try:
        yield
    except OutputUnwritableError:
        raise
    except OSError as exc:
        if any_error or exc.errno in _WRITE_ERRNOS:
            raise OutputUnwritableError(target, exc) from exc
        raise


def _temp_name(target: Path, kind: str = "tmp") -> Path:
    token = secrets.token_hex(4)
    return target.with_name(f".{target.name}.{HOST_TAG}-{os.getpid()}-{token}.{kind}")


def _create(path: Path) -> None:
    """Create an empty file as ``open()`` would (0o666 minus the umask), failing if it exists."""
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))


def _abandoned(path: Path, match: re.Match[str] | None) -> bool:
    """A temporary file or journal whose writer is no longer running."""
    try:
        age = time.time() - path.stat().st_mtime
    except FileNotFoundError:
        return False
    if match is None or match["host"] != HOST_TAG:
        return age > _STALE_AFTER_S
    return int(match["pid"]) != os.getpid() and not process_alive(int(match["pid"]))


def _finish_journal(journal: Path) -> None:
    """Do (or finish) the renames a journal lists, then remove it; safe to repeat."""
    try:
        moves = json.loads(journal.read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        journal.unlink(missing_ok=True)
        return
    folder = journal.parent
    for temp_name, target_name in moves:
        temp = folder / temp_name
        if temp.exists():  # else it was moved before the interruption
            os.replace(temp, folder / target_name)
    journal.unlink(missing_ok=True)


def recover_folder(folder: str | Path) -> None:
    """Complete file sets whose writer was killed after committing to them, and remove
    temporary files that no running writer owns (see the module docstring)."""
    folder = Path(folder)
    if not folder.is_dir():
        return
    entries = [p for p in folder.iterdir() if p.name.startswith(".")]
    for journal in entries:
        match = _TEMP.match(journal.name)
        if match and match["kind"] == "set" and _abandoned(journal, match):
            _finish_journal(journal)
    for temp in entries:
        match = _TEMP.match(temp.name)
        if match is None and not _LEGACY_TEMP.match(temp.name):
            continue
        if (match is None or match["kind"] == "tmp") and _abandoned(temp, match):
            temp.unlink(missing_ok=True)


@contextlib.contextmanager
def atomic_path(target: str | Path) -> Iterator[Path]:
    """Yield a temporary path in the target's folder; move it into place only on success."""
    target = Path(target)
    with _unwritable_as_error(target, any_error=True):
        target.parent.mkdir(parents=True, exist_ok=True)
        recover_folder(target.parent)
        tmp = _temp_name(target)
        _create(tmp)
    try:
        with _unwritable_as_error(target, any_error=False):
            yield tmp
        with _unwritable_as_error(target, any_error=True):
            os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def atomic_write_text(target: str | Path, text: str) -> Path:
    with atomic_path(target) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(target)


def write_file_set(
    writers: Mapping[Path, Callable[[Path], object]],
    *,
    sidecar: Path,
    make_sidecar: Callable[[Mapping[str, Path]], str],
) -> list[Path]:
    """Write a set of files in one folder, all or none (see the module docstring).

    ``writers`` maps each target to a function that writes its content to the path it is
    given. ``make_sidecar`` gets ``{target name: written temporary path}`` (to hash) and returns
    the sidecar's text. Returns the targets, the sidecar last.
    """
    targets = [Path(t) for t in writers]
    folder = sidecar.parent
    if any(t.parent != folder for t in targets):
        raise ValueError(f"a file set must live in one folder ({folder})")
    with _unwritable_as_error(sidecar, any_error=True):
        folder.mkdir(parents=True, exist_ok=True)
        recover_folder(folder)
    temps: dict[Path, Path] = {}
    journal = _temp_name(sidecar, "set")
    try:
        for target, write in zip(targets, writers.values(), strict=True):
            with _unwritable_as_error(target, any_error=False):
                temps[target] = _temp_name(target)
                _create(temps[target])
                write(temps[target])
        with _unwritable_as_error(sidecar, any_error=False):
            temps[sidecar] = _temp_name(sidecar)
            _create(temps[sidecar])
            text = make_sidecar({t.name: temps[t] for t in targets})
            temps[sidecar].write_text(text, encoding="utf-8")
            moves = [[temps[t].name, t.name] for t in [*targets, sidecar]]
            temps[journal] = staged = _temp_name(journal)
            _create(staged)
            staged.write_text(json.dumps(moves), encoding="utf-8")
            os.replace(staged, journal)  # from here on the set is committed
    except BaseException:
        for temp in temps.values():
            temp.unlink(missing_ok=True)
        raise
    sidecar.unlink(missing_ok=True)  # the old set is no longer whole: no sidecar vouches for it
    _finish_journal(journal)
    return [*targets, sidecar]
