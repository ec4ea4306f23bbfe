"""Mechanical scoring of a set of CrossProfile facts (the benchmark's answer key, and the
balance-of-evidence measures used to explain memory policies).

A support or decoy fact adds its polarity (+1 favourable, -1 unfavourable) to its option;
irrelevant facts add 0 but carry a tone (+1 sounds good, -1 sounds bad).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

EVIDENCE_ROLES = frozenset({"support", "decoy"})


class ScoredFact(Protocol):
    """Anything with a role and an option; evidence facts also have ``polarity``, irrelevant
    facts ``tone`` (template facts and task facts both qualify)."""

    role: str
    option: str


def evidence_value(fact: ScoredFact) -> int:
    """What the fact adds to its option's score: its polarity if support/decoy, else 0."""
    return int(getattr(fact, "polarity", 0)) if fact.role in EVIDENCE_ROLES else 0


def score_options(
    facts: Iterable[ScoredFact], options: Sequence[str] | None = None
) -> dict[str, int]:
    """Score of every option mentioned by ``facts`` (and every one of ``options``, at 0 if none)."""
    scores: dict[str, int] = {o: 0 for o in options or ()}
    for fact in facts:
        scores[fact.option] = scores.get(fact.option, 0) + evidence_value(fact)
    return scores


def net_evidence_lead(facts: Iterable[ScoredFact], correct: str, options: Sequence[str]) -> int:
    """Score of the correct option minus the best competitor's score (+2 with all facts)."""
    if correct not in options:
        raise ValueError(f"correct option {correct!r} is not among {list(options)}")
    if len(options) < 2:
        raise ValueError("need at least one competitor option")
    scores = score_options(facts, options)
    return scores[correct] - max(scores[o] for o in options if o != correct)


def irrelevant_tone(facts: Iterable[ScoredFact]) -> int:
    """Sum of the tones of the irrelevant facts among ``facts`` (how good the noise sounds)."""
    return sum(int(getattr(f, "tone", 0)) for f in facts if f.role == "irrelevant")
