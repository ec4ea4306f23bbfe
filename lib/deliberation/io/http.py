"""The one HTTP path: every request the project makes, bounded in total time and decoded size.

Model calls, the pre-flight, ``GET /models``, the vLLM version probe, a model server's readiness
check and file downloads all go through :func:`exchange`. A reply must arrive whole within
``deadline_s`` (connecting, headers and body together: a server that sends one byte every few
seconds is stopped there, not after each read) and decode to at most ``max_bytes`` (counted on
the decoded bytes of the whole body, so a small gzip body that inflates past the bound is cut off
while it inflates, never held in memory). Either bound, when crossed, raises an error whose
message names the bound (``what``: the profile key or rule it comes from). Bodies are asked for
in ``gzip`` or ``deflate`` only, and decoded here, by step; any other encoding is refused.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import zlib
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx2 as httpx

T = TypeVar("T")
ACCEPT_ENCODING = "gzip, deflate"
MIB = 2**20


class HttpLimitError(Exception):
    """A reply that crossed a bound; the message names the bound."""


class ReplyTimeout(HttpLimitError, TimeoutError):
    def __init__(self, deadline_s: float, what: str) -> None:
        super().__init__(f"no complete reply within {deadline_s:g} s ({what})")
        self.deadline_s = deadline_s


class ReplyTooLarge(HttpLimitError):
    def __init__(self, size: int, limit: int, what: str) -> None:
        shown = f"{limit / MIB:g} MiB" if limit >= MIB else f"{limit} bytes"
        super().__init__(f"reply larger than {shown} decoded ({what})")
        self.size, self.limit = size, limit


class UnsupportedEncoding(HttpLimitError):
    def __init__(self, encoding: str) -> None:
        super().__init__(
            f"reply in Content-Encoding {encoding!r}, not one asked for ({ACCEPT_ENCODING})"
        )


@dataclass(frozen=True)
class Reply:
    """A whole reply: status, headers, and the decoded body (empty when it went to a sink)."""

    status: int
    headers: Mapping[str, str]
    body: bytes


class _Decoder:
    """Decodes a body in steps that never make more than ``room`` bytes at once."""

    def __init__(self, encoding: str) -> None:
        codings = [c.strip().lower() for c in encoding.split(",") if c.strip()]
        codings = [c for c in codings if c != "identity"]
        if len(codings) > 1 or (codings and codings[0] not in ("gzip", "x-gzip", "deflate")):
            raise UnsupportedEncoding(encoding)
        self.coding = codings[0] if codings else None
        self._z: Any = None

    def feed(self, data: bytes, room: int) -> list[bytes]:
        if self.coding is None:
            return [data]
        if self._z is None:
            if self.coding == "deflate":  # zlib-wrapped as the RFC says, or raw as some send
                wrapped = (
                    len(data) > 1 and data[0] & 0x0F == 8 and (data[0] << 8 | data[1]) % 31 == 0
                )
                self._z = zlib.decompressobj(15 if wrapped else -15)
            else:
                self._z = zlib.decompressobj(31)
        out: list[bytes] = []
        made = 0
        try:
            piece = self._z.decompress(data, room + 1)
            while True:
                out.append(piece)
                made += len(piece)
                if made > room or not self._z.unconsumed_tail:
                    return out
                piece = self._z.decompress(self._z.unconsumed_tail, room + 1 - made)
        except zlib.error as exc:
            raise httpx.DecodingError(f"{self.coding} body does not decode ({exc})") from None


async def exchange(
    client: httpx.AsyncClient,
    method: str,
    url: str,
    *,
    deadline_s: float,
    max_bytes: int,
    deadline_what: str,
    size_what: str,
    json: Any = None,
    headers: Mapping[str, str] | None = None,
    sink: Callable[[bytes], None] | None = None,
) -> Reply:
    """One request and its whole reply within both bounds (see the module docstring). The
    body is returned, or handed to ``sink`` chunk by chunk (a download). Transport errors are
    the HTTP library's own; crossing a bound raises :class:`ReplyTimeout` or
    :class:`ReplyTooLarge`."""
    sent = {"Accept-Encoding": ACCEPT_ENCODING, **(headers or {})}
    try:
        async with asyncio.timeout(deadline_s):
            async with client.stream(method, url, json=json, headers=sent) as response:
                decoder = _Decoder(response.headers.get("content-encoding", ""))
                declared = response.headers.get("content-length", "")
                if decoder.coding is None and declared.isdigit() and int(declared) > max_bytes:
                    raise ReplyTooLarge(int(declared), max_bytes, size_what)
                size = 0
                chunks: list[bytes] = []
                async for raw in response.aiter_raw():
                    for piece in decoder.feed(raw, max_bytes - size):
                        size += len(piece)
                        if size > max_bytes:
                            raise ReplyTooLarge(size, max_bytes, size_what)
                        if sink is not None:
                            sink(piece)
                        else:
                            chunks.append(piece)
                return Reply(response.status_code, dict(response.headers), b"".join(chunks))
    except TimeoutError:
        raise ReplyTimeout(deadline_s, deadline_what) from None


def new_client(*, deadline_s: float, connections: int = 10, **options: Any) -> httpx.AsyncClient:
    """An async client for :func:`exchange`: its own timeouts no longer than the deadline (the
    deadline itself is enforced by :func:`exchange`), enough connections for ``connections``
    requests at once."""
    return httpx.AsyncClient(
        timeout=httpx.Timeout(deadline_s),
        limits=httpx.Limits(max_connections=connections, max_keepalive_connections=connections),
        **options,
    )


def run_now(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run ``coroutine`` to its end from synchronous code, also inside a running event loop
    (Jupyter): then on a worker thread's own loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="http") as pool:
        return pool.submit(asyncio.run, coroutine).result()


def request(method: str, url: str, **options: Any) -> Reply:
    """:func:`exchange` from synchronous code, on a client of its own (``options`` are
    :func:`exchange`'s keyword arguments: ``deadline_s`` and ``max_bytes`` are required)."""

    async def one() -> Reply:
        async with new_client(deadline_s=options["deadline_s"], connections=1) as client:
            return await exchange(client, method, url, **options)

    return run_now(one())
