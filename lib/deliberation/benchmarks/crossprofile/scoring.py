"""Mechanical scoring of a set of CrossProfile facts (the benchmark's answer key, and the
balance-of-evidence measures used to explain memory policies).

A support or decoy fact adds its polarity (+1 favourable, -1 unfavourable) to its option;
irrelevant facts add 0 but carry a tone (+1 sounds good, -1 sounds bad).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

_EVIDENCE_ROLES = frozenset({"support", "decoy"})


class _ScoredFact(Protocol):
    """Anything with a role and an option; evidence facts also have ``polarity``, irrelevant
    facts ``tone`` (template facts and task facts both qualify)."""

    role: str
    option: str


def _evidence_value(fact: _ScoredFact) -> int:
    """What the fact adds to its option's score: its polarity if support/decoy, else 0."""
    return int(getattr(fact, "polarity", 0)) if fact.role in _EVIDENCE_ROLES else 0


def score_options(
    facts: Iterable[_ScoredFact], options: Sequence[str] | None = None
) -> dict[str, int]:
    """Score of every option mentioned by ``facts`` (and every one of ``options``, at 0 if none)."""
    scores: dict[str, int] = {o: 0 for o in options or ()}
    for fact in facts:
        scores[fact.option] = scores.get(fact.option, 0) + _evidence_value(fact)
    return scores


def net_evidence_lead(facts: Iterable[_ScoredFact], correct: str, options: Sequence[str]) -> int:
    """Score of the correct option minus the best competitor's score (+2 with all facts)."""
    if correct not in options:
        raise ValueError(f"correct option {correct!r} is not among {list(options)}")
    if len(options) < 2:
        raise ValueError("need at least one competitor option")
    scores = score_options(facts, options)
    return scores[correct] - max(scores[o] for o in options if o != correct)


def irrelevant_tone(facts: Iterable[_ScoredFact]) -> int:
    """Sum of the tones of the irrelevant facts among ``facts`` (how good the noise sounds).

    Unsigned: a good-sounding fact about a competitor counts like one about the correct option,
    so on a bank whose tones balance across options this sum cannot show a pull of tone on the
    choice; :func:`tone_lead` is the signed measure."""
    return sum(int(getattr(f, "tone", 0)) for f in facts if f.role == "irrelevant")


def option_tones(
    facts: Iterable[_ScoredFact], options: Sequence[str] | None = None
) -> dict[str, int]:
    """Summed tone of the irrelevant facts on every option (each of ``options`` at 0 if none)."""
    tones: dict[str, int] = {o: 0 for o in options or ()}
    for fact in facts:
        if fact.role == "irrelevant":
            tones[fact.option] = tones.get(fact.option, 0) + int(getattr(fact, "tone", 0))
    return tones


def tone_lead(facts: Iterable[_ScoredFact], correct: str, options: Sequence[str]) -> int:
    """Tone on the correct option minus the largest tone on a competitor: the tone analogue of
    :func:`net_evidence_lead`, positive when the kept noise makes the key sound best."""
    if correct not in options:
        raise ValueError(f"correct option {correct!r} is not among {list(options)}")
    if len(options) < 2:
        raise ValueError("need at least one competitor option")
    tones = option_tones(facts, options)
    return tones[correct] - max(tones[o] for o in options if o != correct)
