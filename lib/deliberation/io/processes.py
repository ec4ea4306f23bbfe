"""Is the process that left something behind (a cache lease, a temporary file) still running?

Both the response cache and the file writers record their writer's host and process id, so a
crash (kill -9, out of memory) never blocks the next run: what a gone process left is taken
over or removed at once, while a live writer's work is left alone.
"""

from __future__ import annotations

import hashlib
import os
import socket

HOST = socket.gethostname()
# A short, filename-safe tag of this host (hostnames may contain dots).
HOST_TAG = hashlib.sha256(HOST.encode()).hexdigest()[:8]


def process_alive(pid: int) -> bool:
    """Whether a process with this id runs on this host (signal 0 probes without signalling)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, under another user
        return True
    return True
