"""A small hand-made task whose kept items can be worked out by hand (see test_memory.py).

Eight statements, options Alpha (correct), Beta, Gamma. Token counts (the project counter):
c1 5, c2 4, c3 8, c4 6, c5 7, c6 7, c7 5, c8 7; total 49, so r = 0.4 / 0.6 / 0.8 give 19 / 29 / 39.
"""

from __future__ import annotations

from dataclasses import dataclass

from deliberation.discussion.transcript import MemoryCandidate
from deliberation.memory_policies import MemoryPool

ALL = ("A1", "A2", "A3", "A4")
OPTIONS = ("Alpha", "Beta", "Gamma")


@dataclass(frozen=True)
class Truth:
    role: str
    option: str
    polarity: int = 0
    tone: int = 0


# fact id, text, holders, truth
ROWS = [
    ("c1", "Alpha passed the audit.", ALL, Truth("support", "Alpha", 1)),
    ("c2", "Beta won awards.", ALL, Truth("decoy", "Beta", 1)),
    ("c3", "Beta failed two safety inspections last year.", ("A2",), Truth("support", "Beta", -1)),
    ("c4", "Alpha has a blue logo.", ("A3",), Truth("irrelevant", "Alpha", tone=1)),
    ("c5", "Alpha cut costs by ten percent.", ("A1",), Truth("support", "Alpha", 1)),
    ("c6", "Gamma finished every project on time.", ("A1", "A4"), Truth("decoy", "Gamma", 1)),
    ("c7", "Gamma missed a deadline.", ("A4",), Truth("support", "Gamma", -1)),
    ("c8", "Gamma's office has plants.", ALL, Truth("irrelevant", "Gamma", tone=1)),
]
TOKENS = {"c1": 5, "c2": 4, "c3": 8, "c4": 6, "c5": 7, "c6": 7, "c7": 5, "c8": 7}

CANDIDATES = tuple(
    MemoryCandidate(fact_id=i, text=t, holders=h, first_mention=k)
    for k, (i, t, h, _) in enumerate(ROWS)
)
TRUTH = {i: truth for i, _, _, truth in ROWS}


def pool(**extra) -> MemoryPool:
    return MemoryPool(
        task_id="toy/SP-DS-IP", seed=0, candidates=CANDIDATES, options=OPTIONS, **extra
    )
