"""The plumbing experiment behind ``notebooks/00_smoke.ipynb``: add two numbers.

It exercises every layer (params -> requests -> backend -> cache -> parsed answers -> table
with provenance) with a task whose right answer is known, and counts invalid answers. The items
(the two numbers and their sum) are data; scoring reads the truth from them, never from prompts.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from deliberation.inference.base import ChatRequest, StructuredOutput
from deliberation.inference.batch import run_requests
from deliberation.inference.generation import StageSettings, stage_request
from deliberation.inference.structured_answers import parse_structured_text

if TYPE_CHECKING:
    from deliberation.inference.client import Client
    from deliberation.profiles.profile import Profile

PROMPT = 'What is {a} + {b}? Reply with JSON: {{"answer": N}}.'
# The answer is constrained to this schema (structured output, in the profile's mode): a real
# model without the constraint replies "85 + 63 = 149" instead of the asked format.
ANSWER_SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "integer"}},
    "required": ["answer"],
    "additionalProperties": False,
}
# The answer is a few tokens: the stage caps max_tokens; the profile sets everything else.
STAGE = StageSettings(
    "smoke.arithmetic", max_tokens=24, structured=StructuredOutput(json_schema=ANSWER_SCHEMA)
)
# A server that ignores the constraint may still answer in the old plain form.
_ANSWER = re.compile(r"Answer:\s*(-?\d+)\s*$")


def arithmetic_items(n: int, *, seed: int) -> pd.DataFrame:
    """``n`` questions: columns ``a``, ``b`` and ``truth`` (= a + b), drawn from ``seed``."""
    pairs = np.random.default_rng(seed).integers(0, 100, size=(n, 2))
    items = pd.DataFrame({"a": pairs[:, 0], "b": pairs[:, 1]}).astype(int)
    items["truth"] = items["a"] + items["b"]
    return items


def arithmetic_requests(profile: Profile, items: pd.DataFrame) -> list[ChatRequest]:
    """One request per item, with the profile's sampling merged under :data:`STAGE`."""
    return [
        stage_request(profile, STAGE, PROMPT.format(a=int(a), b=int(b)))
        for a, b in zip(items["a"], items["b"], strict=True)
    ]


def parse_answer(text: str) -> int | None:
    """The integer of ``{"answer": N}`` (read from the JSON), or after 'Answer:'; None when the
    reply has neither form."""
    parsed = parse_structured_text(STAGE.structured, text)
    if isinstance(parsed, dict):
        return int(parsed["answer"])
    match = _ANSWER.search(text.strip())
    return None if match is None else int(match.group(1))


def score(items: pd.DataFrame, results: pd.DataFrame) -> pd.DataFrame:
    """One row per call (``results`` in item order): the item's true sum, the parsed answer,
    validity and correctness."""
    if len(items) != len(results):
        raise ValueError(f"{len(items)} items but {len(results)} results")
    answers = [
        None if pd.notna(err) else parse_answer(text)
        for text, err in zip(results["text"], results["error"], strict=True)
    ]
    frame = pd.DataFrame(
        {
            "key": results["key"].to_numpy(),
            "truth": items["truth"].to_numpy(),
            "answer": pd.array(answers, dtype="Int64"),
            "failed": results["error"].notna().to_numpy(),
        }
    )
    frame["valid"] = frame["answer"].notna()
    frame["correct"] = (frame["answer"] == frame["truth"]).fillna(False).astype(bool)
    return frame


def run_profile(profile: Profile, client: Client) -> pd.DataFrame:
    """The notebook's experiment (``notebooks/manifest.yaml``): the profile's items through the
    client, scored (one row per call)."""
    items = arithmetic_items(profile.experiments.smoke_items, seed=profile.seed)
    _, results = run_requests(client, arithmetic_requests(profile, items), desc="smoke")
    return score(items, results)


def summary(scored: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "calls": [len(scored)],
            "failed": [int(scored["failed"].sum())],
            "invalid": [int((~scored["valid"] & ~scored["failed"]).sum())],
            "accuracy": [float(scored["correct"].mean()) if len(scored) else float("nan")],
        }
    )
