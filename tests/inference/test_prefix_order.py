"""A batch's misses go out in prefix order (consecutive prompts share the longest prefix, for
llama.cpp's and vLLM's prompt caches); only the wire order changes, never a result or a key."""

from __future__ import annotations

import contextlib
import itertools
import os
import sqlite3
from collections.abc import Sequence

from deliberation.experiments.memory import run_from_profile
from deliberation.inference.base import (
    Backend,
    BackendIdentity,
    ChatRequest,
    ChatResponse,
    Message,
)
from deliberation.inference.cache import ResponseCache
from deliberation.inference.client import CachedClient, prefix_order
from deliberation.inference.sim import SimBackend
from deliberation.profiles.profile import load_profile


def _rendered(request: ChatRequest) -> str:
    """The prompt as a chat template lays it out: what a prompt cache matches on."""
    return "".join(f"<{m.role}>{m.content}</{m.role}>" for m in request.messages)


def _shared_prefixes(requests: Sequence[ChatRequest]) -> int:
    """Characters each prompt shares with the one sent before it, summed."""
    texts = [_rendered(r) for r in requests]
    return sum(len(os.path.commonprefix(pair)) for pair in itertools.pairwise(texts))


class RecordingBackend(Backend):
    """Answers each prompt with its reverse and records the order it was sent in."""

    name = "recording"

    def __init__(self) -> None:
        self.sent: list[ChatRequest] = []

    @property
    def identity(self) -> BackendIdentity:
        return BackendIdentity(backend="recording", model="reverse")

    def request_payload(self, request: ChatRequest) -> dict:
        return {"messages": request.messages_as_dicts()}

    def generate(self, requests, on_response=None):
        out = []
        for index, request in enumerate(requests):
            self.sent.append(request)
            response = ChatResponse(text=request.messages[-1].content[::-1], prompt_tokens=1)
            if on_response is not None:
                on_response(index, response)
            out.append(response)
        return out


def _request(system: str, user: str) -> ChatRequest:
    return ChatRequest(messages=(Message("system", system), Message("user", user)), stage="t")


# Interleaved as experiments build them: item by item, each with a long shared context.
ARRIVAL = [
    _request("You are agent B.", "Facts: rain. Which option?"),
    _request("You are agent A.", "Facts: sun and wind. Which option?"),
    _request("You are agent B.", "Facts: sun and wind. Which option?"),
    _request("You are agent A.", "Facts: rain. Which option?"),
    _request("You are agent A.", "Facts: sun. Which option?"),
    _request("You are agent B.", "Facts: sun. Which option?"),
]


def test_the_prefix_order_shares_the_most_prefix_of_every_order():
    order = prefix_order(ARRIVAL)
    assert sorted(order) == list(range(len(ARRIVAL)))
    best = max(_shared_prefixes(p) for p in itertools.permutations(ARRIVAL))
    assert _shared_prefixes([ARRIVAL[i] for i in order]) == best
    assert _shared_prefixes(ARRIVAL) < best


def test_the_client_sends_in_prefix_order_and_returns_in_the_callers_order(tmp_path):
    backend = RecordingBackend()
    client = CachedClient(
        backend, ResponseCache(tmp_path / "c.sqlite"), profile="p", progress=False
    )
    responses = client.generate([*ARRIVAL, ARRIVAL[0]])
    assert backend.sent == [ARRIVAL[i] for i in prefix_order(ARRIVAL)]
    assert [r.text for r in responses] == [
        r.messages[-1].content[::-1] for r in [*ARRIVAL, ARRIVAL[0]]
    ]


def test_the_switch_off_sends_in_the_callers_order(tmp_path):
    backend = RecordingBackend()
    client = CachedClient(
        backend, ResponseCache(tmp_path / "c.sqlite"), profile="p", progress=False
    )
    client.send_in_prefix_order = False
    client.generate(ARRIVAL)
    assert backend.sent == ARRIVAL


def _run(tmp_path, name: str, prefix: bool):
    profile = load_profile("smoke")
    cache = ResponseCache(tmp_path / f"{name}.sqlite")
    client = CachedClient(SimBackend.from_profile(profile), cache, profile="smoke", progress=False)
    client.send_in_prefix_order = prefix
    result = run_from_profile("crossprofile", profile, limit=2, client=client, progress=False)
    cache.close()
    with contextlib.closing(sqlite3.connect(tmp_path / f"{name}.sqlite")) as db:
        keys = sorted(db.execute("SELECT key FROM responses").fetchall())
    return result.frame, keys


def test_rows_and_cache_keys_are_identical_in_either_sending_order(tmp_path):
    prefix_rows, prefix_keys = _run(tmp_path, "prefix", True)
    arrival_rows, arrival_keys = _run(tmp_path, "arrival", False)
    assert len(prefix_rows) and prefix_keys
    assert prefix_rows.equals(arrival_rows)
    assert prefix_keys == arrival_keys
