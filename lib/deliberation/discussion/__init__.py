"""Discussions among agents and the transcript model memory policies read.

- :mod:`.transcript`: statements, turns, transcripts and the memory candidates (unique
  statements with their holder tags, in first-mention order).
- :mod:`.scripted`: the scripted discussion of paper 1 (every agent states every fact it holds).
- The free discussion (votes, two speaking rounds) is the natural-discussion experiment's
  (:mod:`deliberation.experiments.natural.discussion`).
- :mod:`.statements`: statements of free text (sentences, near-duplicate groups, rarity).
- :mod:`.disclosure`: whether each fact was stated in full, in part or not at all.
"""

from deliberation.discussion.scripted import DiscussionFact, DiscussionTask, scripted_discussion
from deliberation.discussion.transcript import (
    MemoryCandidate,
    Statement,
    Transcript,
    Turn,
    holder_tag,
    memory_candidates,
)

__all__ = [
    "DiscussionFact",
    "DiscussionTask",
    "MemoryCandidate",
    "Statement",
    "Transcript",
    "Turn",
    "holder_tag",
    "memory_candidates",
    "scripted_discussion",
]
