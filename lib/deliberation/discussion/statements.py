"""Statements of a free-text transcript: sentences, normalisation, near-duplicate groups.

Memory policies read *memory candidates* (unique statements with the agents who made them).
In a scripted discussion a statement is a fact id; in a free discussion it is a sentence, and
the same point is rarely worded twice the same way. The rules, applied to every message:

1. **Sentences**: a message is split with HiddenBench's sentence rule
   (:func:`deliberation.benchmarks.hiddenbench.tasks.split_sentences`: ``.``, ``!`` or ``?`` before a capital,
   digit or quote, not after a title or abbreviation); line breaks also end a sentence.
2. **Normalised text**: Unicode NFKC, case-folded, every run of characters that are not letters
   or digits replaced by one space, trimmed. Two texts are *the same* when their normalised
   texts are equal.
3. **Content tokens**: the words of the normalised text minus a short list of function words
   (:data:`STOPWORDS`); numbers are kept (they carry the evidence).
4. **Near-duplicates**: a sentence joins the first earlier group whose *first* sentence has the
   same normalised text, or whose content-token set has Jaccard similarity at least
   :data:`_NEAR_DUPLICATE_JACCARD` (0.6) with its own (both non-empty). Otherwise it opens a new
   group. Groups never chain: similarity is always to the group's first sentence, so the
   result does not depend on later sentences. A group's text is its first sentence verbatim;
   its *holders* (rarity) are the distinct agents with a sentence in it.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from deliberation.discussion.transcript import MemoryCandidate

_NEAR_DUPLICATE_JACCARD = 0.6
STOPWORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "of",
        "to",
        "in",
        "on",
        "at",
        "by",
        "for",
        "with",
        "from",
        "as",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "has",
        "have",
        "had",
        "do",
        "does",
        "did",
        "i",
        "we",
        "you",
        "they",
        "he",
        "she",
        "our",
        "your",
        "their",
        "my",
        "me",
        "us",
        "them",
        "so",
        "than",
        "then",
        "there",
        "here",
        "which",
        "who",
        "whom",
        "what",
        "will",
        "would",
        "can",
        "could",
        "should",
        "also",
        "very",
        "just",
        "not",
        "no",
    ]
)
_NON_WORD = re.compile(r"[^\w]+|_+")


def normalize(text: str) -> str:
    """Rule 2: NFKC, case-folded, non-alphanumeric runs -> one space, trimmed."""
    return _NON_WORD.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def content_tokens(text: str) -> frozenset[str]:
    """Rule 3: the normalised words that are not function words."""
    return frozenset(w for w in normalize(text).split() if w not in STOPWORDS)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """|a & b| / |a | b|; 0 when either set is empty."""
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def sentences(message: str) -> list[str]:
    """Rule 1: the sentences of one message (empty pieces dropped)."""
    from deliberation.benchmarks.hiddenbench.tasks import split_sentences

    out: list[str] = []
    for line in message.splitlines():
        out.extend(s for s in split_sentences(line) if normalize(s))
    return out


@dataclass(frozen=True)
class _SpokenSentence:
    """One sentence of one message: who said it, in which message (0-based, speaking order)."""

    agent: str
    message: int
    text: str


@dataclass(frozen=True)
class _StatementGroup:
    """Near-duplicate sentences (rule 4): its id, first text, and every member sentence."""

    id: str
    text: str
    members: tuple[_SpokenSentence, ...]

    def holders(self, agent_order: Sequence[str]) -> tuple[str, ...]:
        """Distinct agents with a sentence in the group, in ``agent_order``."""
        said = {m.agent for m in self.members}
        order = {a: k for k, a in enumerate(agent_order)}
        return tuple(sorted(said, key=lambda a: (order.get(a, len(order)), a)))


def spoken_sentences(messages: Iterable[tuple[str, str]]) -> list[_SpokenSentence]:
    """Every sentence of ``messages`` ((agent, text) in speaking order)."""
    return [
        _SpokenSentence(agent, index, text)
        for index, (agent, message) in enumerate(messages)
        for text in sentences(message)
    ]


def group_statements(
    spoken: Sequence[_SpokenSentence], threshold: float = _NEAR_DUPLICATE_JACCARD
) -> list[_StatementGroup]:
    """Rule 4, in first-mention order; group ids are ``g1``, ``g2``, ..."""
    if not 0 < threshold <= 1:
        raise ValueError(f"near-duplicate threshold must be in (0, 1], got {threshold}")
    heads: list[tuple[str, frozenset[str]]] = []
    members: list[list[_SpokenSentence]] = []
    for sentence in spoken:
        norm, tokens = normalize(sentence.text), content_tokens(sentence.text)
        for k, (head_norm, head_tokens) in enumerate(heads):
            if norm == head_norm or jaccard(tokens, head_tokens) >= threshold:
                members[k].append(sentence)
                break
        else:
            heads.append((norm, tokens))
            members.append([sentence])
    return [
        _StatementGroup(id=f"g{k}", text=group[0].text, members=tuple(group))
        for k, group in enumerate(members, start=1)
    ]


def statement_candidates(
    messages: Sequence[tuple[str, str]],
    agents: Sequence[str],
    threshold: float = _NEAR_DUPLICATE_JACCARD,
) -> tuple[MemoryCandidate, ...]:
    """Memory candidates of a free transcript: one per statement group, holders = the distinct
    agents who made it (rarity), in first-mention order."""
    groups = group_statements(spoken_sentences(messages), threshold)
    return tuple(
        MemoryCandidate(fact_id=g.id, text=g.text, holders=g.holders(agents), first_mention=k)
        for k, g in enumerate(groups)
    )
