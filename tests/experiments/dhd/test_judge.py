"""The blind judge of Omni-MATH items no rule can check: the request it sends (the final answer
only, never the reasoning) and how its reply is read."""

from __future__ import annotations

import pytest

from deliberation.benchmarks.problems import load
from deliberation.experiments.dhd import judge, prompts
from deliberation.inference.base import ChatRequest
from deliberation.io.paths import shared_data_dir


@pytest.fixture(scope="module")
def omnimath_item():
    root = shared_data_dir()
    if root is None:
        pytest.skip("../shared/data (public benchmark copies) is absent; the judge test needs it")
    return load("omnimath", root / "omnimath")[887]


def test_omnimath_judge_request_is_a_structured_chat_request(omnimath_item):
    item = omnimath_item
    request = judge.judge_request(item, "Long reasoning...\nProposed final answer: 1/25")
    assert isinstance(request, ChatRequest)
    assert request.stage == "dhd.judge"
    assert request.structured is not None
    assert request.structured.choices == ("equivalent", "not equivalent")
    assert request.messages[0].content == prompts.JUDGE_SYSTEM  # the one home of DHD prompts
    user = request.messages[-1].content
    assert item.question in user and item.gold in user and "1/25" in user
    assert "Long reasoning" not in user  # the judge sees the final answer only


@pytest.mark.parametrize(
    ("reply", "score"),
    [
        ("equivalent", 1.0),
        ("Equivalent.", 1.0),
        ("not equivalent", 0.0),
        (" NOT EQUIVALENT\n", 0.0),
    ],
)
def test_omnimath_judge_reply_parsing(reply, score):
    assert judge.parse_judge_reply(reply) == score


def test_omnimath_unreadable_judge_reply_is_an_error():
    with pytest.raises(judge.JudgeReplyError, match="maybe"):
        judge.parse_judge_reply("maybe")
