"""The plumbing experiment behind ``notebooks/00_smoke.ipynb``: add two numbers.

It exercises every layer (params -> requests -> backend -> cache -> parsed answers -> table
with provenance) with a task whose right answer is known, and counts invalid answers.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from deliberation.inference.base import ChatRequest

STAGE = "smoke.arithmetic"
PROMPT = "What is {a} + {b}? Reply in the form 'Answer: N'."
_ANSWER = re.compile(r"Answer:\s*(-?\d+)\s*$")


def arithmetic_requests(n: int, *, seed: int, max_tokens: int = 16) -> list[ChatRequest]:
    rng = np.random.default_rng(seed)
    pairs = rng.integers(0, 100, size=(n, 2))
    return [
        ChatRequest.from_prompt(
            PROMPT.format(a=int(a), b=int(b)), stage=STAGE, seed=seed, max_tokens=max_tokens
        )
        for a, b in pairs
    ]


def parse_answer(text: str) -> int | None:
    """The integer after 'Answer:', or None when the reply does not have that form."""
    match = _ANSWER.search(text.strip())
    return None if match is None else int(match.group(1))


def score(requests: list[ChatRequest], results: pd.DataFrame) -> pd.DataFrame:
    """One row per call: the question's true sum, the parsed answer, validity and correctness."""
    truths = []
    for request in requests:
        a, b = map(int, re.findall(r"-?\d+", request.messages[-1].content)[:2])
        truths.append(a + b)
    answers = [
        None if pd.notna(err) else parse_answer(text)
        for text, err in zip(results["text"], results["error"], strict=True)
    ]
    frame = pd.DataFrame(
        {
            "key": results["key"],
            "truth": truths,
            "answer": pd.array(answers, dtype="Int64"),
            "failed": results["error"].notna(),
        }
    )
    frame["valid"] = frame["answer"].notna()
    frame["correct"] = (frame["answer"] == frame["truth"]).fillna(False).astype(bool)
    return frame


def summary(scored: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "calls": [len(scored)],
            "failed": [int(scored["failed"].sum())],
            "invalid": [int((~scored["valid"] & ~scored["failed"]).sum())],
            "accuracy": [float(scored["correct"].mean()) if len(scored) else float("nan")],
        }
    )
