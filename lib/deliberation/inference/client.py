"""A backend behind the response cache: the one way experiments send model calls.

``CachedClient.generate(requests)`` serves what the cache holds, sends each distinct missing
request once, commits every answer the moment it arrives, records failures with their reason,
and returns one response per request in the order given.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence

from tqdm.auto import tqdm

from deliberation.inference.base import Backend, ChatRequest, ChatResponse
from deliberation.inference.cache import ResponseCache, request_key

log = logging.getLogger(__name__)


class CachedClient:
    def __init__(
        self, backend: Backend, cache: ResponseCache, *, profile: str, progress: bool = True
    ) -> None:
        self.backend = backend
        self.cache = cache
        self.profile = profile
        self.progress = progress

    def key(self, request: ChatRequest) -> str:
        return request_key(self.backend, request)

    def generate(self, requests: Sequence[ChatRequest], *, desc: str = "") -> list[ChatResponse]:
        keys = [self.key(r) for r in requests]
        results: dict[str, ChatResponse] = self.cache.get_many(keys)
        pending: dict[str, ChatRequest] = {}
        for key, request in zip(keys, requests, strict=True):
            if key not in results and key not in pending:
                pending[key] = request
        miss_keys = list(pending)
        miss_requests = list(pending.values())
        log.info(
            "%s: %d requests, %d cached, %d to send",
            desc or "generate",
            len(requests),
            len(requests) - sum(k in pending for k in keys),
            len(miss_requests),
        )
        if miss_requests:
            self._send(miss_keys, miss_requests, results, desc)
        out: list[ChatResponse] = []
        seen: set[str] = set()
        for key in keys:
            response = results[key]
            # A repeat of a key inside one batch was paid for once: flag the copies as hits.
            if key in seen and not response.cached:
                response = dataclasses.replace(response, cached=True)
            seen.add(key)
            out.append(response)
        return out

    def _send(
        self,
        keys: list[str],
        requests: list[ChatRequest],
        results: dict[str, ChatResponse],
        desc: str,
    ) -> None:
        written: set[int] = set()
        bar = tqdm(total=len(requests), desc=desc or "model calls", disable=not self.progress)

        def commit(index: int, response: ChatResponse) -> None:
            if index in written:
                return
            if response.ok:
                self.cache.put(
                    keys[index],
                    requests[index],
                    response,
                    profile=self.profile,
                    identity=self.backend.identity,
                )
            else:
                self.cache.record_failure(
                    keys[index], requests[index], response, profile=self.profile
                )
            written.add(index)
            bar.update(1)

        try:
            responses = self.backend.generate(requests, on_response=commit)
        finally:
            bar.close()
        if len(responses) != len(requests):
            raise RuntimeError(
                f"backend {self.backend.name} returned {len(responses)} responses"
                f" for {len(requests)} requests"
            )
        for index, response in enumerate(responses):
            commit(index, response)  # backends that do not stream still get every row written
            results[keys[index]] = response
        failed = sum(not r.ok for r in responses)
        if failed:
            log.warning(
                "%d of %d requests failed (recorded in the cache's failures table)",
                failed,
                len(requests),
            )
