"""The kernel ``make paper`` runs notebooks in: quiet on the terminal, for two reasons.

- IPC transport (Unix sockets in a private folder) instead of TCP on loopback: the kernel then
  has no reason to warn that it "is running over TCP without encryption" on every notebook,
  and no port is opened at all.
- No interrupt at shutdown: jupyter_client interrupts a kernel before shutting it down (to stop
  a running cell), but the build shuts a kernel down only after its last cell finished, and the
  SIGINT then lands in whatever handler the notebook's libraries left installed, which ipykernel
  reports as ``KeyboardInterrupt caught in kernel`` after a notebook that succeeded.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile

from jupyter_client.manager import AsyncKernelManager
from traitlets import CaselessStrEnum

# Unix sockets: Linux and macOS. Elsewhere (Windows) the default TCP transport stays.
_IPC = os.name == "posix" and sys.platform != "cygwin"


class QuietKernelManager(AsyncKernelManager):
    """An :class:`AsyncKernelManager` on IPC sockets that does not interrupt at shutdown."""

    transport = CaselessStrEnum(["tcp", "ipc"], default_value="ipc" if _IPC else "tcp", config=True)

    def _ip_default(self) -> str:
        if self.transport != "ipc":
            return super()._ip_default()
        # A short private path: Unix socket paths are limited to about 100 characters.
        self._socket_dir = tempfile.mkdtemp(prefix="dlb-kernel-")
        return os.path.join(self._socket_dir, "k")

    async def _async_interrupt_kernel(self) -> None:
        if self.shutting_down:
            return  # the cells are done: nothing to interrupt
        await super()._async_interrupt_kernel()

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        await super()._async_cleanup_resources(restart=restart)
        folder = getattr(self, "_socket_dir", None)
        if folder and not restart:
            shutil.rmtree(folder, ignore_errors=True)
