"""The blind judge of Omni-MATH items no rule can check (stage ``dhd.judge``).

:func:`deliberation.benchmarks.problems.omnimath.grade` raises ``JudgeRequired`` for such an item; the DHD
protocol then asks a judge model, which sees the problem, the reference answer and the
candidate's final answer, never the reasoning. The prompt is in
:mod:`deliberation.experiments.dhd.prompts`; the call is built here so the datasets import no
backend.
"""

from __future__ import annotations

import re

from deliberation.benchmarks.problems.extract import final_answer
from deliberation.benchmarks.problems.items import Item
from deliberation.experiments.dhd.prompts import (
    JUDGE_CHOICES,
    JUDGE_STAGE,
    JUDGE_SYSTEM,
    JUDGE_USER,
)
from deliberation.inference.base import ChatRequest, Message, StructuredOutput


class JudgeReplyError(ValueError):
    """A judge reply that is neither "equivalent" nor "not equivalent"."""


def judge_request(item: Item, prediction: str, *, max_tokens: int = 8) -> ChatRequest:
    """The judge-model call deciding whether a reply's final answer matches the gold."""
    candidate = final_answer(prediction).text or "(no answer)"
    user = JUDGE_USER.format(problem=item.question, reference=item.gold, candidate=candidate)
    return ChatRequest(
        messages=(Message("system", JUDGE_SYSTEM), Message("user", user)),
        stage=JUDGE_STAGE,
        temperature=0.0,
        max_tokens=max_tokens,
        structured=StructuredOutput(choices=JUDGE_CHOICES),
    )


def parse_judge_reply(reply: str) -> float:
    """1.0 for "equivalent", 0.0 for "not equivalent"; raises :class:`JudgeReplyError` otherwise."""
    text = re.sub(r"[^a-z ]", " ", reply.lower())
    text = re.sub(r"\s+", " ", text).strip()
    if text in ("not equivalent", "nonequivalent", "not equal"):
        return 0.0
    if text in ("equivalent", "equal"):
        return 1.0
    raise JudgeReplyError(
        f"judge reply is neither {JUDGE_CHOICES[0]!r} nor {JUDGE_CHOICES[1]!r}: {reply!r}"
    )
