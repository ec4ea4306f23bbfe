"""Disclosure diagnostics: was each fact stated in a free discussion, in full, in part or not?

For one fact and the messages of one discussion:

- **full**: the fact's normalised text (:func:`.statements.normalize`) occurs, on word
  boundaries, inside the normalised text of some message (a verbatim statement, whatever the
  case, punctuation or spacing);
- **partial**: not full, but some sentence of some message contains at least
  :data:`PARTIAL_COVERAGE` (half) of the fact's content tokens
  (:func:`.statements.content_tokens`: normalised words minus function words). Coverage is
  ``|fact tokens & sentence tokens| / |fact tokens|``, so a paraphrase that keeps the numbers
  and names but rewords the rest is partial, and a sentence that only names the option is not;
- **none**: neither.

``overlap`` reports the best sentence coverage (1.0 for a full statement), and ``stated_by`` the
agents whose messages gave the full (or, failing that, the best partial) statement.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from deliberation.discussion.statements import content_tokens, normalize, sentences

PARTIAL_COVERAGE = 0.5
_Label = Literal["full", "partial", "none"]
LABELS: tuple[_Label, ...] = ("full", "partial", "none")


@dataclass(frozen=True)
class _Disclosure:
    label: _Label
    overlap: float
    stated_by: tuple[str, ...]


def coverage(fact: str, sentence: str) -> float:
    """Share of the fact's content tokens that ``sentence`` contains (0 for a fact with none)."""
    wanted = content_tokens(fact)
    if not wanted:
        return 0.0
    return len(wanted & content_tokens(sentence)) / len(wanted)


def disclosure(
    fact: str, messages: Sequence[tuple[str, str]], threshold: float = PARTIAL_COVERAGE
) -> _Disclosure:
    """The label of ``fact`` in ``messages`` ((agent, text) pairs), as the module defines it."""
    needle = f" {normalize(fact)} "
    full = tuple(
        dict.fromkeys(agent for agent, text in messages if needle in f" {normalize(text)} ")
    )
    if full and needle.strip():
        return _Disclosure("full", 1.0, full)
    best, by = 0.0, []
    for agent, text in messages:
        for sentence in sentences(text):
            value = coverage(fact, sentence)
            if value > best + 1e-12:
                best, by = value, [agent]
            elif value > 0 and abs(value - best) <= 1e-12 and agent not in by:
                by.append(agent)
    if best >= threshold:
        return _Disclosure("partial", best, tuple(by))
    return _Disclosure("none", best, ())
