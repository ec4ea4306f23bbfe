"""A full disk, said plainly: whether an error means "no space left" and how much is free.

A write can fail for lack of space in two guises: ``OSError`` with ``ENOSPC`` (or a quota's
``EDQUOT``, a file-size limit's ``EFBIG``) from a plain file write, and SQLite's
``SQLITE_FULL`` ("database or disk is full") from the response cache. Messages about either
name the path and the space free on its disk, so the user knows what to free.
"""

from __future__ import annotations

import errno
import shutil
import sqlite3
from pathlib import Path

_NO_SPACE = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
_SQLITE_FULL = 13  # the primary result code; extended codes keep it in the low byte


def is_disk_full(error: BaseException | None) -> bool:
    """Whether ``error`` (or an error it was raised from) says the disk is full."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, OSError) and error.errno in _NO_SPACE:
            return True
        if isinstance(error, sqlite3.Error):
            code = getattr(error, "sqlite_errorcode", None)
            if (code is not None and code & 0xFF == _SQLITE_FULL) or "disk is full" in str(error):
                return True
        error = error.__cause__ or error.__context__
    return False


def _free_bytes(path: str | Path) -> int | None:
    """Bytes free on the disk holding ``path`` (its nearest existing folder); None if unknown."""
    folder = Path(path)
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        return shutil.disk_usage(folder if folder.is_dir() else folder.parent).free
    except OSError:
        return None


def mib(size: float) -> str:
    return f"{size / 2**20:.1f} MiB"


def free_space(path: str | Path) -> str:
    """``"0.3 MiB free on its disk"`` (or that the free space is unknown)."""
    free = _free_bytes(path)
    return "free space on its disk unknown" if free is None else f"{mib(free)} free on its disk"
