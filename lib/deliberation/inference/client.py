"""A backend behind the response cache: the one way experiments send model calls.

:class:`Client` is the interface experiment code is written against; :class:`CachedClient`
sends, ``deliberation.paper.plan.PlanningClient`` counts what would be sent, so the same code
plans and runs. ``CachedClient.generate`` serves what the cache holds, sends each distinct
missing request once and commits every answer as it arrives, so no paid answer is lost to a
crash, an interrupt, another process sharing the cache, or a full disk (docs/cache.md,
docs/failed-calls.md#a-full-disk).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

from deliberation.inference import served_models
from deliberation.inference.base import (
    NO_SEND_ENV,
    Backend,
    ChatRequest,
    ChatResponse,
    InvalidRequestError,
    SendingForbiddenError,
    sending_forbidden,
)
from deliberation.inference.cache import (
    CacheDamagedError,
    CacheWriteError,
    ResponseCache,
    request_key,
)
from deliberation.inference.call_progress import calls_done, progress_bar
from deliberation.inference.failures import FailedCall, FailedCalls
from deliberation.io import disk

log = logging.getLogger(__name__)


def keys_or_failures(
    key: Callable[[ChatRequest], str], requests: Sequence[ChatRequest]
) -> tuple[list[str | None], dict[int, ChatResponse]]:
    """Each request's cache key, or None with a failed response for a request that cannot be
    sent (e.g. a lone surrogate in a message): that request fails alone, the others go on."""
    keys: list[str | None] = []
    invalid: dict[int, ChatResponse] = {}
    for index, request in enumerate(requests):
        try:
            keys.append(key(request))
        except InvalidRequestError as exc:
            keys.append(None)
            invalid[index] = ChatResponse(text="", error=str(exc), attempts=0)
            log.warning("request %d (stage %s) not sent: %s", index, request.stage, exc)
    return keys, invalid


def remembered_key(
    keys: dict[int, tuple[ChatRequest, str]], backend: Backend, request: ChatRequest
) -> str:
    """``request_key``, hashed once per batch: a stage keys its requests for its counts and then
    again in ``generate``, so a client remembers them in ``keys`` (by identity) until it sends
    the batch and clears them."""
    known = keys.get(id(request))
    if known is not None and known[0] is request:
        return known[1]
    key = request_key(backend, request)
    keys[id(request)] = (request, key)
    return key


@runtime_checkable
class Client(Protocol):
    """What experiment code may use of a client: its backend (for the cache key and its
    capabilities), its response cache, the profile name, a request's cache key, and
    ``generate`` (one response per request, in order; a request that cannot be sent comes
    back failed, never raised)."""

    backend: Backend
    cache: ResponseCache
    profile: str

    def key(self, request: ChatRequest) -> str: ...

    def generate(
        self, requests: Sequence[ChatRequest], *, desc: str = ""
    ) -> list[ChatResponse]: ...


def prefix_order(requests: Sequence[ChatRequest]) -> list[int]:
    """Indices of ``requests`` sorted by their messages (role, then text, message by message).

    Sending in this order puts prompts that share a prefix next to each other, so the llama.cpp
    server reuses the previous prompt's KV cache for the shared part (and vLLM's prefix cache
    hits more): sorted order maximises the sum of the prefixes consecutive prompts share (it is
    the depth-first order of their trie). The sort is stable, so equal prompts keep their order.
    """
    return sorted(
        range(len(requests)),
        key=lambda index: [(m.role, m.content) for m in requests[index].messages],
    )


class CachedClient:
    """The :class:`Client` that sends: cache hits served, each distinct miss sent once."""

    # Send each batch's misses in :func:`prefix_order` (False: in the caller's order). Only the
    # order on the wire changes: answers are keyed and returned in the caller's order.
    send_in_prefix_order = True

    def __init__(
        self,
        backend: Backend,
        cache: ResponseCache,
        *,
        profile: str,
        progress: bool = True,
        write_attempts: int = 3,
        write_wait_s: float = 1.0,
        poll_s: float = 0.2,
    ) -> None:
        self.backend = backend
        self.cache = cache
        self.profile = profile
        self.progress = progress
        self.write_attempts = write_attempts
        self.write_wait_s = write_wait_s
        self.poll_s = poll_s
        self.failed = FailedCalls()  # every call of this client that got no usable reply
        self.served_as: set[str] = set()  # other model names its answers were given as
        self._keys: dict[int, tuple[ChatRequest, str]] = {}  # remembered_key's, per batch

    @property
    def server(self) -> str:
        """Where requests go, as messages show it: the URL without credentials, or the
        backend's name for in-process backends."""
        server = getattr(self.backend, "server", None)
        return str(server) if server else self.backend.identity.base_url or self.backend.name

    def key(self, request: ChatRequest) -> str:
        return remembered_key(self._keys, self.backend, request)

    def generate(self, requests: Sequence[ChatRequest], *, desc: str = "") -> list[ChatResponse]:
        keys, invalid = keys_or_failures(self.key, requests)
        self._keys.clear()
        results: dict[str, ChatResponse] = self.cache.get_many([k for k in keys if k is not None])
        pending: dict[str, ChatRequest] = {}
        for key, request in zip(keys, requests, strict=True):
            if key is not None and key not in results and key not in pending:
                pending[key] = request
        miss_requests = list(pending.values())
        # Counted as the stage's summary counts them (runs.StageCounts): distinct prompts, so the
        # "already cached" here and there is one number.
        log.info(
            "%s: %d requests, %d unique prompts, %d already cached, %d to send",
            desc or "generate",
            len(requests),
            len(results) + len(miss_requests),
            len(results),
            len(miss_requests),
        )
        calls_done(results)  # the cached prompts; the others count as they are answered
        if miss_requests:
            if sending_forbidden():
                stages = sorted({r.stage for r in miss_requests})
                raise SendingForbiddenError(
                    f"{len(miss_requests)} of {len(requests)} requests ({desc or 'generate'};"
                    f" stages {', '.join(stages)}) are not in the response cache"
                    f" {self.cache.path}, and {NO_SEND_ENV} is set: a replay sends nothing, so"
                    " the published answers do not cover this run"
                )
            if self.cache.read_only:
                raise CacheWriteError(
                    self.cache.path,
                    f"{len(miss_requests)} of {len(requests)} requests ({desc or 'generate'}) are"
                    " not in this read-only cache; sending them needs write access",
                )
            self._send_once_across_processes(pending, results, desc)
        calls_done(flush=True)
        out: list[ChatResponse] = []
        seen: set[str] = set()
        for index, key in enumerate(keys):
            if key is None:
                out.append(invalid[index])
                self._note_failure(requests[index], invalid[index])
                continue
            response = results[key]
            if key not in seen and not response.ok:
                self._note_failure(requests[index], response)
            # A repeat of a key inside one batch was paid for once: flag the copies as hits.
            if key in seen and not response.cached:
                response = dataclasses.replace(response, cached=True)
            seen.add(key)
            if response.served_model is not None:  # sent now or cached: the outputs say so
                self.served_as.add(response.served_model)
                served_models.note(self.backend.identity.model, response.served_model)
            out.append(response)
        return out

    def _note_failure(self, request: ChatRequest, response: ChatResponse) -> None:
        self.failed.add(FailedCall(request.stage, response.error or "no reply", self.server))

    def _send_once_across_processes(
        self, pending: dict[str, ChatRequest], results: dict[str, ChatResponse], desc: str
    ) -> None:
        """Send the requests no other process is sending; wait for the others' answers."""
        todo = dict(pending)
        started = time.time()
        delay = self.poll_s
        with _LeaseKeeper(self.cache):
            while todo:
                mine = self.cache.claim(todo, failed_since=started)
                if mine:
                    self._send(mine, [todo.pop(key) for key in mine], results, desc)
                    delay = self.poll_s
                if not todo:
                    break
                # The rest is (or was) leased by another process: take its answers or failures.
                arrived = self.cache.get_many(todo)
                failed = self.cache.failures_since(set(todo) - set(arrived), started)
                for key, response in (*arrived.items(), *failed.items()):
                    results[key] = response
                    del todo[key]
                calls_done([*arrived, *failed])
                if todo and not mine:
                    if delay == self.poll_s:  # once per wait, not per poll
                        log.info(
                            "%d requests are being sent by another process using %s; waiting",
                            len(todo),
                            self.cache.path,
                        )
                    time.sleep(delay)
                    delay = min(delay * 1.5, 2.0)

    def _send(
        self,
        keys: list[str],
        requests: list[ChatRequest],
        results: dict[str, ChatResponse],
        desc: str,
    ) -> None:
        if self.send_in_prefix_order:
            order = prefix_order(requests)
            keys, requests = [keys[i] for i in order], [requests[i] for i in order]
        done: set[int] = set()
        held: dict[int, ChatResponse] = {}  # received, not yet in the cache (a write failed)
        bar = progress_bar(
            total=len(requests), desc=desc or "model calls", disable=not self.progress
        )

        def write_held() -> None:
            for index in sorted(held):
                self._write(keys[index], requests[index], held[index])
                del held[index]

        def commit(index: int, response: ChatResponse) -> None:
            if index in done:
                return
            done.add(index)
            held[index] = response
            bar.update(1)
            calls_done((keys[index],))
            write_held()  # a failed write raises: the backend stops sending at once

        try:
            responses = self.backend.generate(requests, on_response=commit)
        except BaseException as exc:
            # Interrupted, crashed or out of space: what arrived is stored (or spilled) first.
            self._store_or_spill(held, write_held, keys, requests, exc)
            raise
        finally:
            bar.close()
        if len(responses) != len(requests):
            raise RuntimeError(
                f"backend {self.backend.name} returned {len(responses)} responses"
                f" for {len(requests)} requests"
            )
        try:
            for index, response in enumerate(responses):
                commit(index, response)  # backends that do not stream get every row written too
                results[keys[index]] = response
        except CacheWriteError as exc:
            # Every reply of the batch was received: the ones not yet committed are held too.
            held.update((i, r) for i, r in enumerate(responses) if i not in done)
            self._store_or_spill(held, write_held, keys, requests, exc)
            raise
        failed = sum(not r.ok for r in responses)
        if failed:
            log.warning(
                "%d of %d requests (%s) to %s failed (recorded in the cache's failures table;"
                " the next run retries them)",
                failed,
                len(requests),
                desc or "generate",
                self.server,
            )

    def _write(self, key: str, request: ChatRequest, response: ChatResponse) -> None:
        if response.ok:
            self.cache.put(
                key, request, response, profile=self.profile, identity=self.backend.identity
            )
        else:
            self.cache.record_failure(key, request, response, profile=self.profile)

    def _store_or_spill(
        self,
        held: dict[int, ChatResponse],
        write_held: Callable[[], None],
        keys: list[str],
        requests: list[ChatRequest],
        cause: BaseException,
    ) -> None:
        """Store the held answers (a few tries), else spill them; after a failed write, raise
        one line saying where the answers are, what to do and what the rerun will send.
        Returns quietly when ``cause`` is no write error (an interrupt, a crash) and every held
        answer is stored. A damaged cache is said to be damaged, never a full disk."""
        unwritable = (CacheWriteError, CacheDamagedError)
        last = cause if isinstance(cause, unwritable) else None
        received = len(held)
        for attempt in range(self.write_attempts):
            if not held or isinstance(last, CacheDamagedError):
                break
            if attempt:
                time.sleep(self.write_wait_s * 2 ** (attempt - 1))
            try:
                write_held()
            except unwritable as exc:
                last = exc
                log.debug("%s; attempt %d of %d", exc, attempt + 1, self.write_attempts)
        if last is None:
            return
        answers = [(keys[i], requests[i], held[i]) for i in sorted(held) if held[i].ok]
        spilled, problems = None, []
        if answers:
            spilled, problems = self.cache.spill(
                answers, profile=self.profile, identity=self.backend.identity
            )
        rerun = "rerun the same command: it sends only the calls never answered"
        if not held:
            where = f"the {received} replies held are stored now (space was freed)"
        elif spilled is not None:
            where = (
                f"{len(answers)} received answers saved in {spilled}: the next run of profile"
                f" {self.profile} imports them first, wherever its cache is (or `deliberation"
                f" cache import {spilled}`)"
            )
        elif answers:
            where = (
                f"{len(answers)} received answers could not be saved anywhere"
                f" ({'; '.join(problems)}) and are lost when this process ends"
            )
            rerun = (
                f"rerun the same command: it sends those {len(answers)} calls again, with the"
                " calls never answered"
            )
        else:
            where = "no answer is lost (only failed calls, which the next run retries)"
        if isinstance(
            last, CacheDamagedError
        ):  # the rerun starts a new cache: "rerun" is said there
            error: CacheWriteError | CacheDamagedError = CacheDamagedError(
                last.path, last.detail, kept=f"stopped; {where}"
            )
        else:
            needed = _space_needed(last.path, [held[i] for i in sorted(held)], requests)
            error = CacheWriteError(
                last.path,
                f"stopped, {'its disk is full' if last.disk_full else last.problem}; {where};"
                f" {needed}; free space, then {rerun}",
                disk_full=last.disk_full,
            )
        error.unwritten = [
            (requests[i], held[i]) for i in sorted(held) if spilled is None or not held[i].ok
        ]
        raise error from last


# SQLite writes each answer's row to the -wal journal first, then to the file at a checkpoint:
# room for twice the row, plus a page of overhead per answer.
_PAGE_BYTES = 4096


def _space_needed(
    path: Path, responses: Sequence[ChatResponse], requests: Sequence[ChatRequest]
) -> str:
    """What a disk-full error tells the user: the free space on the cache's disk now and about
    how much storing the held answers takes (so they know what to free)."""
    rows = sum(len(r.to_json()) for r in responses) + sum(
        len(m.content) for q in requests for m in q.messages
    )
    needed = 2 * rows + _PAGE_BYTES * max(1, len(responses))
    return f"{disk.free_space(path)}, storing them needs about {disk.mib(needed)} more"


class _LeaseKeeper:
    """Renews this cache object's leases while a batch is sent; releases them on exit."""

    def __init__(self, cache: ResponseCache) -> None:
        self.cache = cache
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="cache-leases", daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(self.cache.lease_ttl_s / 4):
            try:
                self.cache.renew_leases()
            except CacheWriteError as exc:
                log.warning("%s (leases expire on their own)", exc)

    def __enter__(self) -> _LeaseKeeper:
        self._thread.start()
        return self

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        self._stop.set()
        self._thread.join()
        try:
            self.cache.release()
        except CacheWriteError as failed:
            # Leaving on a full disk: the error on its way out already says so, in one line.
            quiet = isinstance(error, CacheWriteError) and failed.disk_full
            log.log(logging.DEBUG if quiet else logging.WARNING,
                    "%s (leases expire on their own)", failed)  # fmt: skip
