"""HiddenBench's sim: how the sim reads a statement (:func:`read_statement`), which the memory
experiment's sim behaviours (``hiddenbench.decision``, ``.relevance``, ``.balance``,
``.summary``; mechanism and parameters: :mod:`deliberation.experiments.memory.sim.mechanism`)
and the natural discussions' use.

HiddenBench has no fact bank, so the sim reads each statement with a documented word list,
never with ``correct_answer``:

1. The statement bears on an option if it names exactly one option of the prompt (full name,
   a word unique to one option's name, or "Option B"); naming none or several, it bears on
   nothing.
2. Its polarity is the sign of (favourable cues - unfavourable cues), counting the words in
   :data:`_FAVOURABLE` and :data:`_UNFAVOURABLE` (whole words with plain inflections,
   case-insensitive; a checklist ``(a) Y``/``(a) N`` mark counts as one cue). Balanced or no cues: polarity 0, tone 0.

The reading is crude on purpose (a "blocked road" is bad for the option it names); tasks whose
facts need inference (who is guilty) read mostly as noise.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from deliberation.benchmarks.memory_benchmark import Reading
from deliberation.inference.answer_parsing import mentioned_options

_UNFAVOURABLE = (
    "block", "close", "closure", "collapse", "fail", "failure", "lack", "shortage", "flood",
    "fire", "damage", "unsafe", "delay", "suspend", "cancel", "cancelled", "not", "no",
    "never", "cannot", "can't", "unable", "unavailable", "stuck", "mudslide", "landslide",
    "hazard", "hazardous", "danger", "dangerous", "risk", "risky", "accident", "contaminated",
    "outbreak", "broken", "injured", "injury", "crash", "leak", "toxic", "spill", "warn",
    "warning", "alert", "impassable", "inaccessible", "overcrowded", "limited", "problem",
    "poor", "weak", "difficult", "difficulty", "arrogant", "egocentric", "unfriendly",
    "grumpy", "uncooperative", "moody", "loner", "show-off", "temper", "abrasive", "tension",
    "discourage", "accused", "aloof", "turnover", "nasty", "pretentious", "unorganised",
    "unhealthily", "drunk", "drinking", "alcohol", "speeding", "inexperience", "inattentive",
    "guilty", "outage", "shut", "halt", "expired", "violation", "error", "threat", "severe",
    "lost", "unstable", "insufficient", "incomplete", "rerouted", "collapsed", "hostile",
)  # fmt: skip
_FAVOURABLE = (
    "safe", "open", "clear", "cleared", "available", "stocked", "reliable", "excellent", "good",
    "great", "upgrade", "upgraded", "confirm", "operational", "ready", "accessible", "well",
    "strong", "calm", "positive", "success", "successful", "successfully", "best", "secure",
    "functional", "restored", "stable", "improve", "repaired", "capable", "conscientious",
    "fast", "quick", "quickly", "efficient", "uninterrupted", "working", "sound", "thoughtful",
    "collaborative", "recognized", "increased", "instrumental", "respected", "skilled",
    "experienced", "trusted", "verified", "approved", "fully",
)  # fmt: skip


def _cue_pattern(words: Sequence[str]) -> re.Pattern[str]:
    """Whole words, with plain inflections (blocks, blocked, blocking, blockage)."""
    alternatives = "|".join(map(re.escape, sorted(words, key=len, reverse=True)))
    return re.compile(rf"\b(?:{alternatives})(?:s|es|ed|d|ing|age)?\b", re.IGNORECASE)


_UNFAVOURABLE = _cue_pattern(_UNFAVOURABLE)
_FAVOURABLE = _cue_pattern(_FAVOURABLE)
_CHECK = re.compile(r"\(\w\)\s*([YN])\b")


def read_statement(text: str, options: Sequence[str]) -> Reading | None:
    named = mentioned_options(text, options)
    if len(named) != 1:
        return None
    score = len(_FAVOURABLE.findall(text)) - len(_UNFAVOURABLE.findall(text))
    score += sum(1 if mark == "Y" else -1 for mark in _CHECK.findall(text))
    polarity = (score > 0) - (score < 0)
    return Reading(option=named[0], polarity=polarity)
