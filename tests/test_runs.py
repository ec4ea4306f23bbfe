"""One count of cached and sent per stage: the client's line before sending and the stage's
summary after it say the same "already cached" (distinct prompts, repeats not counted twice)."""

from __future__ import annotations

import logging
import re

from helpers.serve_sim import arithmetic_prompt

from deliberation.inference import make_client
from deliberation.inference.base import ChatRequest
from deliberation.params import load_profile
from deliberation.runs import send


def _requests(n: int) -> list[ChatRequest]:
    return [
        ChatRequest.from_prompt(arithmetic_prompt(i), stage="smoke.arithmetic") for i in range(n)
    ]


def test_the_client_and_the_stage_summary_count_cached_prompts_alike(tmp_path, caplog) -> None:
    client = make_client(load_profile("smoke"), cache_file=tmp_path / "c.sqlite", progress=False)
    send(client, _requests(25), "smoke.arithmetic")  # 25 answered and cached
    again = _requests(28) + _requests(3)  # 25 cached, 3 new, 3 repeats of cached prompts
    caplog.clear()
    with caplog.at_level(logging.INFO):
        _, _ = send(client, again, "smoke.arithmetic")
    before = next(r.getMessage() for r in caplog.records if "to send" in r.getMessage())
    after = next(r.getMessage() for r in caplog.records if " sent" in r.getMessage())
    assert "31 requests, 28 unique prompts, 25 already cached, 3 to send" in before
    assert re.search(r"28 unique prompts, 25 already cached, 3 sent", after), after
