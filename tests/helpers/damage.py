"""Damaging a response cache on purpose, as a failing disk or a bad copy would (imported, not
collected): the checks on open must find it (tests) and the probes show what a run does."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

LEAF_TABLE, LEAF_INDEX = 0x0D, 0x0A  # the first byte of a b-tree leaf page of each kind


def _settled(path: Path) -> tuple[int, bytearray]:
    """The page size and bytes of a cache with its write-ahead log checkpointed into it."""
    with contextlib.closing(sqlite3.connect(path)) as conn:
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return page_size, bytearray(path.read_bytes())


def damage_page(path: Path, kind: int, *, at: str = "header", which: str = "middle") -> None:
    """Overwrite 64 bytes of one b-tree leaf page of ``kind`` (``LEAF_TABLE``: a data page of
    the responses table; ``LEAF_INDEX``: a page of its key index): its header and cell pointers
    (``at="header"``) or its last cells (``"cells"``: cells fill a page from its end); the
    middle such page or the last one (``which="last"``: where new rows go)."""
    page_size, data = _settled(path)
    pages = [n for n in range(2, len(data) // page_size) if data[n * page_size] == kind]
    page = pages[-1 if which == "last" else len(pages) // 2] * page_size
    start = page if at == "header" else page + page_size - 64
    data[start : start + 64] = b"\xa5" * 64
    path.write_bytes(bytes(data))


def change_an_indexed_key(path: Path, offset: int = 3) -> None:
    """Change one character of one key in the key index only: every page still parses, but the
    index no longer matches its table (a lookup of that key misses)."""
    page_size, data = _settled(path)
    with contextlib.closing(sqlite3.connect(path)) as conn:
        key = conn.execute(
            "SELECT key FROM responses ORDER BY key LIMIT 1 OFFSET ?", (offset,)
        ).fetchone()[0]
    start = 0
    while (at := data.find(key.encode(), start)) >= 0:
        if data[at // page_size * page_size] == LEAF_INDEX:
            data[at + 63] = ord("0" if key[63] != "0" else "1")
            break
        start = at + 1
    path.write_bytes(bytes(data))
