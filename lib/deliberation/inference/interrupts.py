"""Ctrl-C during a batch: stop sending at once, keep every answer that is paid for.

An asyncio batch runs on its own event loop in a worker thread while the calling thread waits,
so the same code works from a script and from inside a running event loop (Jupyter, or any
``asyncio.run``). The first interrupt sets :class:`BatchStop`: no request is sent after it and
no failed request is retried, while the requests already sent run to the end, so their answers
(the server is computing, and billing, them anyway) reach ``on_response`` and the cache. Then
``KeyboardInterrupt`` propagates. A second interrupt abandons the requests in flight.

While it waits, the calling thread (when it is the main thread) uses Python's default SIGINT
handler: an ``asyncio.run`` around the call would otherwise only schedule a cancellation that
the blocked thread never sees, and the whole batch would be sent before the interrupt landed.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import signal
import threading
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, TypeVar

log = logging.getLogger(__name__)
T = TypeVar("T")


class BatchStop:
    """A stop flag set from any thread and awaited on the batch's loop."""

    def __init__(self) -> None:
        self._flag = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._event: asyncio.Event | None = None
        self._task: asyncio.Task[Any] | None = None

    def _bind(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._event = asyncio.Event()
        self._task = asyncio.current_task()
        if self._flag.is_set():
            self._event.set()

    def set(self) -> None:
        self._flag.set()
        if self._loop is not None and self._event is not None:
            self._loop.call_soon_threadsafe(self._event.set)

    def abandon(self) -> None:
        """Cancel the batch, requests in flight included."""
        self.set()
        if self._loop is not None and self._task is not None:
            self._loop.call_soon_threadsafe(self._task.cancel)

    def is_set(self) -> bool:
        return self._flag.is_set()

    async def sleep(self, seconds: float) -> bool:
        """Sleep up to ``seconds``; True when the stop came first."""
        if self._event is None:
            await asyncio.sleep(seconds)
            return self.is_set()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await self._event.wait()
        return self.is_set()


@contextlib.contextmanager
def _default_sigint() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def run_batch(make: Callable[[BatchStop], Coroutine[Any, Any, T]]) -> T:
    """Run ``make(stop)`` to completion on a worker thread's event loop (see the module doc)."""
    stop = BatchStop()

    async def main() -> T:
        stop._bind()
        return await make(stop)

    pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="batch")
    future = pool.submit(asyncio.run, main())
    try:
        with _default_sigint():
            try:
                return future.result()
            except BaseException:
                if future.done():
                    raise  # the batch itself failed
                stop.set()
                log.warning(
                    "interrupted: sending stopped; waiting for the requests already sent so"
                    " their answers are cached (interrupt again to abandon them)"
                )
                try:
                    future.result()
                except BaseException:
                    if not future.done():
                        stop.abandon()
                        concurrent.futures.wait([future])
                raise
    finally:
        pool.shutdown(wait=True)
