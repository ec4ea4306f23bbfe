"""Reading a model's answer: which single option a reply chooses (or None: invalid).

The answer is requested as structured output (a choice among the options) where the backend
can enforce it; :func:`parse_choice` also reads free text as real models write it when no
structure was enforced (JSON objects, "Final answer: X", "I would choose X", option letters,
negations and hedges), counting an option only where the reply names it as its answer (a small
model's free replies mostly restate a note, which names an option without choosing it). A reply
reads as a careful reader reads it: an option it rejects ("Not X", "X is the one to avoid", "X?
No.") is no choice, and one it names and then takes back ("X. Wait, no: Y.") gives way to the
later choice, or to none. Precision and recall on hand-labelled replies, real and written:
``tests/fixtures/choice_replies/``. An answer that names no single option is invalid: recorded
with ``valid = 0`` and counted as wrong, never dropped. :func:`mentioned_options` lists the options a
text names (the sim reads votes with it).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

_JSON_KEYS = ("answer", "choice", "option", "decision", "final_answer", "selection", "vote")
_NEGATION = re.compile(
    r"\b(not|never|cannot|can't|cant|won't|wouldn't|shouldn't|unable|impossible|hard|avoid"
    r"|reject|against|refuse|nobody|neither|nor)\b|\bno\s+one\b|n't\b",
    re.IGNORECASE,
)
_HYPOTHETICAL = re.compile(r"\b(might|could|may|one|someone|some)\b", re.IGNORECASE)
_NOUNS = r"(?:answer|choice|decision|recommendation|verdict|selection|vote|pick|conclusion)"
# Strong markers announce the answer itself; the last one with an option after it wins.
_STRONG = re.compile(
    r"(?:\bfinal\s+(?:answer|choice|decision|recommendation|verdict|vote)\b"
    r"|\b" + _NOUNS + r"\b"
    r"|\b(?:best|right|correct|optimal|safest|strongest|most\s+suitable|preferred|recommended)"
    r"\s+(?:option|choice|candidate|answer|pick|site|location|destination)\b)"
    r"(?:\s*(?:is|would\s+be|:|-|–|—))+(?:\s*for\b)?"
    r"|\b(?:therefore|thus|hence|so|overall|in\s+conclusion|in\s+summary)\b\s*:?"
    # a correction that names the answer ("Actually, Y."), an elimination's conclusion
    r"|\b(?:actually|correction|instead|rather|i\s+mean|make\s+that)\s*[,:]"
    r"|\b(?:that|which|this)\s+leaves(?:\s+(?:us\s+with|only))?"
    # a heading alone on its line ("## Recommendation")
    r"|^[ \t]*(?:final\s+)?" + _NOUNS + r"[ \t]*$",
    re.IGNORECASE | re.MULTILINE,
)
# A marker that announces another choice than the answer ("second choice: Y").
_RUNNER_UP = re.compile(
    r"\b(?:second|third|other|backup|fallback|alternative|runner-up|next)\s*$", re.I
)
# Weak markers: verbs of choosing, and opinions, said by the writer.
_WEAK = re.compile(
    r"\b(?:choose|choosing|select|selecting|pick|picking|go\s+with|going\s+with|opt\s+for"
    r"|recommend|recommending|vote\s+for|lean(?:ing)?\s+(?:towards?|to)|favou?r|prefer"
    r"|hire|hiring|fund|funding|award\s+(?:the\s+contract\s+)?to|evacuate\s+to|take"
    r"|i\s+(?:think|believe|guess|suppose|would\s+say)|i'd\s+say)\b",
    re.IGNORECASE,
)
# What may stand before an option named as an answer: list marks, an agent tag, a letter label,
# a connective, a hedge, "the", "option", and a capitalised word that is the name's own first
# word misspelt (only before a name given by its later words: see :func:`_respelt`).
_ANSWER_LEAD = re.compile(
    r"""^[\s*•>"'“‘(\[-]*
    (?:\d+[.)]\s*)?
    (?:\[[^\]\n]*\]\s*)?
    (?:(?-i:[A-Z])[.)]\s+)?
    (?:(?:final\s+)?(?:answer|choice|vote|decision|pick)\s*[:–—-]?\s+)?
    (?:(?:but|and|so|yet|however|then|thus|hence|therefore)\s*,?\s+)?
    (?:(?:probably|likely|most\s+likely|definitely|clearly|certainly|indeed|actually|simply
        |obviously|maybe|perhaps|possibly|presumably|surely|i\s+think|i\s+believe|i\s+guess
        |i'd\s+say|i\s+would\s+say|in\s+my\s+(?:view|opinion))\s*,?\s+)?
    (?:(?:the|option|candidate|choice)\s+)*
    (?P<misspelt>(?-i:[A-Z])[\w'’-]*\s+)?
    [\s"'“‘*]*$""",
    re.IGNORECASE | re.VERBOSE,
)
# Words after an option that turn a verdict into its opposite ("is the one to avoid").
_AGAINST = (
    r"(?:\s+(?:to|we\s+should|you\s+should|i\s+would)\s+(?:avoid|drop|reject|exclude|eliminate"
    r"|skip|discard|dismiss|rule\s+out|steer\s+clear)"
    r"|\s+(?:that|which)\s+(?:should|must)\s+(?:not|never|be\s+(?:avoided|rejected|excluded)))"
)
# An evaluation that makes the option before it a choice: "is the best option", "is the only
# one that meets ...", "should be chosen" (never "is not ...": a negation breaks the match).
_VERDICT = (
    r"(?:(?:is|seems|appears|remains|looks|would\s+be|will\s+be|should\s+be|must\s+be)\s+"
    r"(?:to\s+be\s+)?(?:clearly\s+|probably\s+|likely\s+|therefore\s+|thus\s+|indeed\s+"
    r"|definitely\s+|also\s+)?(?:(?:the|a|an|our|my|your)\s+)?(?:most\s+|more\s+|clear\s+"
    r"|obvious\s+|only\s+|very\s+)?(?:best|better|right|correct|ideal|optimal|good|great|strong"
    r"|stronger|strongest|safest|safer|wisest|preferred|recommended|suitable|appropriate|top"
    r"|winner|option|choice|pick|answer|candidate|one|fit|chosen|selected|hired|picked|funded"
    r"|awarded|qualified|suited|promising)\b"
    r"|(?:is|would\s+be)\s+(?:the\s+)?most\s+\w+\s+(?:option|choice|candidate|answer|pick)\b"
    r"|(?:is|remains)\s+the\s+only\s+(?:\w+\s+)?(?:option|choice|candidate|one|site|venue"
    r"|location|place|route|team|fit)\b"
    r"|(?:should|must|would|will|ought\s+to)\s+(?:be\s+)?(?:chosen|selected|picked|hired"
    r"|preferred|funded|recommended|appointed|awarded)\b"
    r"|stands\s+out\b)(?!" + _AGAINST + r")"
)
# "Y it is.", and "Y is." after a rejected option ("X is not right; Y is."), said in full.
_ELLIPTIC = re.compile(r"^\s+(?:it\s+)?is\s*$", re.IGNORECASE)
# A sentence that only says no ("Definitely not.", "Not A.").
_SAYS_NO = re.compile(
    r"\W*(?:(?:definitely|certainly|absolutely|of\s+course)\s+)?(?:no|nope|not|never)\b"
    r"[^.!?\n]{0,40}[.!?]?\W*",
    re.IGNORECASE,
)
# What may follow an option named as an answer: nothing, punctuation, a reason, a contrast, or
# a verdict. Anything else ("'s debut novel", "requires in-person labs") restates a fact.
_ANSWER_TAIL = re.compile(
    r"^\s*(?:(?:option|candidate|choice)\b\s*)?"
    r"(?:$|(?!['’](?:s\b|\s+(?!is\b|was\b|should\b|would\b)[a-z]))[.,;:!?)\]\"'*”’(—–-]"
    r"|(?:because|since|as|given|due|over|rather|instead|but|though|although|while|whereas)\b"
    r"|" + _VERDICT + ")",
    re.IGNORECASE,
)
_VERDICT_ONLY = re.compile(r"^\s*(?:(?:option|candidate|choice)\b\s*)?(?:" + _VERDICT + ")", re.I)
# Nothing after the name but punctuation: a clause that is the option alone.
_BARE_TAIL = re.compile(r"^[\s.!)\]\"'*”’]*$")
# Rejections of the option next to them: before it ("Not X", "avoid X", "rather than X") ...
_REJECT_LEAD = re.compile(
    r"(?:^|[^\w'’])(?:(?:definitely|certainly|absolutely|surely|clearly|probably)\s+)?"
    r"(?:not|never|avoid|avoiding|reject|rejecting|against|except|excluding|exclude|eliminate"
    r"|rule\s+out|ruling\s+out|anything\s+but|neither|nor|instead\s+of|rather\s+than"
    r"|(?:don'?t|do\s+not|never|won'?t|will\s+not|wouldn'?t|would\s+not|shouldn'?t|should\s+not)"
    r"\s+(?:choose|pick|select|take|hire|fund|go\s+with|vote\s+for|recommend|prefer))"
    r"(?:\s+(?:the|option|candidate))*[\s\"'“‘*(]*$",
    re.IGNORECASE,
)
# ... or after it ("X is the one to avoid", "X isn't the best choice", "X should be avoided").
_REJECT_TAIL = re.compile(
    r"^\s*(?:(?:option|candidate|choice)\b\s*)?,?\s*(?:"
    r"(?:is|was|seems|looks|would\s+be|will\s+be)\s+(?:"
    r"(?:not|never|hardly)\s+(?:(?:the|a|an)\s+)?(?:very\s+)?(?:best|right|correct|good|great"
    r"|suitable|appropriate|ideal|answer|choice|option|one|fit|recommended|viable|safe|wise"
    r"|strongest|safest|preferred)\b"
    r"|(?:the\s+|a\s+|an\s+)?(?:(?:clear|obvious|very)\s+)?(?:worst|weakest|wrong|bad|poor"
    r"|riskiest|unsuitable|inappropriate|least\s+\w+)\b"
    r"|(?:(?:the|a|an)\s+)?(?:one|option|choice|candidate|site|pick)" + _AGAINST + r"|out\b"
    r"|(?:to\s+be\s+)?(?:avoided|rejected|excluded|eliminated|ruled\s+out|disqualified))"
    r"|(?:isn'?t|wasn'?t)\s+(?:(?:the|a|an)\s+)?(?:best|right|correct|good|suitable|ideal"
    r"|answer|choice|option|one|fit|recommended|viable)\b"
    r"|(?:should|must)\s+(?:not|never)\b|shouldn'?t\b"
    r"|(?:should|must)\s+be\s+(?:avoided|rejected|excluded|eliminated|ruled\s+out|dropped"
    r"|discarded|dismissed))",
    re.IGNORECASE,
)
# A question about an option, answered no ("Site B? Definitely not.").
_QUESTION_NO = re.compile(
    r"\?[\s*]*(?:no|nope|definitely\s+not|certainly\s+not|absolutely\s+not|of\s+course\s+not"
    r"|not\s+really)\b",
    re.IGNORECASE,
)
# The writer takes back what it said before: only what follows counts.
_RETRACTION = re.compile(
    r"\b(?:wait|hold\s+on|hmm+|oh)\b[\s,.!:;—–-]*no\b"
    r"|\bno\b[\s,.!]*wait\b"
    r"|\b(?:scratch|strike|forget)\s+that\b"
    r"|\bi\s+take\s+(?:that|it)\s+back\b"
    r"|\bon\s+second\s+thoughts?\b"
    r"|\bi(?:'ve|\s+have)?\s+changed?\s+my\s+mind\b"
    r"|\blet\s+me\s+(?:reconsider|rethink|correct\s+(?:that|myself))\b"
    r"|\b(?:i\s+was|that\s+was|that's|that\s+is)\s+wrong\b"
    r"|\bjust\s+kidding\b|\bmy\s+(?:mistake|bad)\b"
    r"|(?:^|[.!…;—–]|\.\.\.)[\s*]*no\b[\s]*[,!:;—–-]",
    re.IGNORECASE | re.MULTILINE,
)
# "<subject> is <option>": a subject about the choice ("the option that should be chosen", "the
# most suitable landing zone") makes the option after the copula the answer.
_COPULA = re.compile(r"\b(?:is|was|would\s+be|will\s+be|should\s+be|must\s+be)\b(?:\s*:)?", re.I)
_ORDINAL_OPTION = re.compile(
    r"\b(?:first|second|third|fourth|last|other|next|another)\s+(?:option|choice)\b", re.I
)
_CHOICE_SUBJECT = re.compile(
    r"\b(?:option|answer|choice|pick|decision|recommendation|verdict|best|suitable|appropriate"
    r"|correct|right|ideal|preferred|chosen|winner|safest|strongest|optimal|recommended"
    r"|choose|select|safe|viable|feasible|guilty|culprit|perpetrator|responsible|cause)\b",
    re.IGNORECASE,
)
_LIST_JOIN = re.compile(
    r"^[\s,;/&\"'“”‘’]*(?:(?:and|or|and/or|nor|vs\.?|versus)\b)?[\s,;/&\"'“”‘’]*$", re.I
)
_CLAUSE_END = re.compile(r"[.!?;](?=\s|$)|\n")
_MARKDOWN = re.compile(r"\*\*|__|`|^\s*#+\s*|^\s*>\s*", re.MULTILINE)
_ALIAS_STOP = {"The", "And", "Inc", "Ltd", "LLC", "Option", "Candidate", "Company", "Group"}


@dataclass(frozen=True)
class _Mention:
    start: int
    end: int
    option: str


def _name_pattern(name: str) -> str:
    return r"(?<![\w])" + r"\s+".join(re.escape(p) for p in name.split()) + r"(?![\w])"


def _letter_option(letter: str, options: Sequence[str], letters_shown: bool) -> str | None:
    """The option a bare letter names: the one whose name holds that letter as a label
    ("Candidate C", "Site A (Library)", "Deep Jungle Site (A)"), else, only when the prompt
    showed letters before the options, the option in that position (A = first). A prompt that
    showed none gives a letter no position: "Option A" there names nothing the model was shown."""
    labelled = [o for o in options if re.search(rf"(?<![\w'’.]){re.escape(letter)}(?![\w'’])", o)]
    if len(labelled) == 1:
        return labelled[0]
    if not letters_shown:
        return None
    position = ord(letter) - ord("A")
    return options[position] if 0 <= position < len(options) else None


def _aliases(options: Sequence[str]) -> dict[str, str]:
    """Capitalised words of three letters or more that belong to one option's name only
    ("Priya" for "Priya Raghunathan"), so "I recommend Priya" is read."""
    words: dict[str, set[str]] = {}
    for option in options:
        for word in re.findall(r"[A-Z][\w'-]{2,}", option):
            if word not in _ALIAS_STOP:
                words.setdefault(word, set()).add(option)
    full = {o.casefold() for o in options}
    return {
        w: next(iter(owners))
        for w, owners in words.items()
        if len(owners) == 1 and w.casefold() not in full
    }


def _short_names(options: Sequence[str]) -> dict[str, str]:
    """The part of a name before its description, when no other option shares it: "Site C"
    for "Site C (Hilltop park)", "Option A" for "Option A: Biomedical startup"."""
    shorts: dict[str, list[str]] = {}
    for option in options:
        short = re.split(r"\s*[(:]", option, maxsplit=1)[0].strip()
        if short and short != option:
            shorts.setdefault(short, []).append(option)
    full = {o.casefold() for o in options}
    return {s: o[0] for s, o in shorts.items() if len(o) == 1 and s.casefold() not in full}


def _mentions(text: str, options: Sequence[str], letters_shown: bool) -> list[_Mention]:
    """Every mention of an option in ``text`` (full names first, longest first; then short
    names; then unique name words; then "Option B" / "(B)" letter references),
    non-overlapping, in text order."""
    taken: list[_Mention] = []

    def free(start: int, end: int) -> bool:
        return all(end <= m.start or start >= m.end for m in taken)

    for option in sorted(options, key=len, reverse=True):
        for match in re.finditer(_name_pattern(option), text, re.IGNORECASE):
            if free(*match.span()):
                taken.append(_Mention(*match.span(), option))
    for short, option in _short_names(options).items():
        for match in re.finditer(_name_pattern(short), text, re.IGNORECASE):
            if free(*match.span()):
                taken.append(_Mention(*match.span(), option))
    for word, option in _aliases(options).items():
        for match in re.finditer(rf"(?<![\w]){re.escape(word)}(?![\w])", text):
            if free(*match.span()):
                taken.append(_Mention(*match.span(), option))
    for pattern in (r"(?i:\boption)\s*\(?([A-Z])\)?(?![\w])", r"\(([A-Z])\)"):
        for match in re.finditer(pattern, text):
            option = _letter_option(match.group(1), options, letters_shown)
            if option is not None and free(*match.span()):
                taken.append(_Mention(*match.span(), option))
    return sorted(taken, key=lambda m: m.start)


def _bare_letter(text: str, options: Sequence[str], letters_shown: bool) -> str | None:
    """A clause that is just a letter: "B", "(B)", "B.", "B) because ..."."""
    match = re.match(r"\s*\(?([A-Z])(?:\)|\.|:|,)?(?:\s|$)", text)
    if match is None:
        return None
    return _letter_option(match.group(1), options, letters_shown)


def _clause_end(text: str, start: int, mentions: list[_Mention]) -> int:
    """End of the clause starting at ``start``: the first sentence end or newline that is not
    inside an option's name ("Mr. X" does not end a clause)."""
    for match in _CLAUSE_END.finditer(text, start):
        if not any(m.start <= match.start() < m.end for m in mentions):
            return match.start()
    return len(text)


def _segment_start(text: str, position: int) -> int:
    """Start of the clause holding ``position``: after the last sentence end, comma, colon, dash
    or line break before it."""
    marks = (".", "!", "?", ";", ",", ":", "\n", "—", "–")
    return max(text.rfind(mark, 0, position) for mark in marks) + 1


def _name_end(text: str, first: _Mention, mentions: Sequence[_Mention]) -> int:
    """Where the name of ``first`` ends: "World Equity ETF" is one name read as several words."""
    end = first.end
    for mention in mentions:
        if mention.start < end:
            continue
        if mention.option != first.option or text[end : mention.start].strip(" -"):
            break
        end = mention.end
    return end


@dataclass
class _Reading:
    """One reply being read: its text, the options it names (``mentions``) and, apart, those it
    names only to reject them (``rejected``: never an answer)."""

    text: str
    options: list[str]
    letters_shown: bool
    every: list[_Mention]
    mentions: list[_Mention]
    rejected: list[_Mention]

    @classmethod
    def of(cls, text: str, options: list[str], letters_shown: bool) -> _Reading:
        every = _mentions(text, options, letters_shown)
        rejected = _rejections(text, every)
        kept = [m for m in every if m not in rejected]
        return cls(text, options, letters_shown, every, kept, rejected)

    def clause_end(self, start: int) -> int:
        return _clause_end(self.text, start, self.every)

    def clause_choice(self, start: int, end: int) -> str | None | Literal[False]:
        """The option clause ``text[start:end]`` gives as an answer: one option named as an
        answer (see :meth:`names_as_answer`), ``False`` for two options joined as one answer
        ("A or B"), None for no option or an option only mentioned in a restated fact."""
        text = self.text
        inside = [m for m in self.mentions if start <= m.start and m.end <= end]
        letter = re.match(
            r"\s*\(?([A-Z])\)?(?:[.,:;!]|\s+(?:because|since|as)\b|\s*$)", text[start:end]
        )
        if letter and (not inside or inside[0].start > start + letter.end()):
            labelled = _letter_option(letter.group(1), self.options, self.letters_shown)
            if labelled is not None:  # "C because Tessaro ...": the letter is the answer
                return labelled
        if not inside:
            if any(start <= m.start < end for m in self.rejected):
                return None  # "Not A": the letter check below would read "N" as a label
            return _bare_letter(text[start:end], self.options, self.letters_shown)
        if re.match(r"\s*between\b", text[start : inside[0].start], re.I):
            return None  # "choosing between X and Y" names the candidates, not an answer
        distinct = list(dict.fromkeys(m.option for m in inside))
        if len(distinct) > 1:
            second = next(m for m in inside if m.option != inside[0].option)
            between = text[inside[0].end : second.start]
            # "Priya or Bartosz", "Priya, Bartosz": two answers; "Priya over Bartosz": Priya.
            joined = re.sub(r"\b(either|both|maybe|perhaps|possibly)\b", "", between, flags=re.I)
            if _LIST_JOIN.match(joined):
                return False
            if re.fullmatch(r"\s+to\s+", between):  # "prefer X to Y"
                return inside[0].option
        if not self.names_as_answer(start, end, inside):
            return None
        return inside[0].option

    def names_as_answer(
        self, start: int, end: int, inside: list[_Mention], tail: re.Pattern[str] = _ANSWER_TAIL
    ) -> bool:
        """Whether the clause ``text[start:end]`` names its first option as an answer: only list
        marks, a tag, a connective or a hedge before it (or an option it rejected: "Not X but
        Y"), and after it (and the rest of its name) nothing, a reason or a verdict.
        "Kwabena Asante's debut novel was longlisted" restates a fact."""
        text = self.text
        first = inside[0]
        lead_start = max(
            [start] + [r.end for r in self.rejected if start <= r.start and r.end <= first.start]
        )
        lead_text = text[lead_start : first.start]
        if lead_start > start:  # past a rejected option: "Not X but Y", "X? No. Y"
            lead_text = re.sub(r"^[\s,;:!?.)\]\"'*”’—–-]*(?:(?:but|instead|rather)\b)?", "",
                               lead_text, flags=re.I)  # fmt: skip
        lead = _ANSWER_LEAD.match(lead_text)
        if not lead or not _respelt(lead.group("misspelt"), text[first.start : first.end], first):
            return False
        return bool(tail.match(text[_name_end(text, first, inside) : end]))

    def marked(
        self, marker: re.Pattern[str], *, weak: bool
    ) -> list[tuple[int, str | Literal[False]]]:
        """(position, choice) for every non-negated ``marker`` whose clause names an option
        (``False`` when it names two as one answer)."""
        found: list[tuple[int, str | Literal[False]]] = []
        for match in marker.finditer(self.text):
            if self.negated(match.start(), weak=weak):
                continue
            if not weak and _RUNNER_UP.search(
                self.text[max(0, match.start() - 20) : match.start()]
            ):
                continue  # "second choice: Y" names no answer
            start = _skip_marks(self.text, match.end())
            choice = self.clause_choice(start, self.clause_end(start))
            if choice is not None:
                found.append((match.start(), choice))
        return found

    def negated(self, start: int, *, weak: bool) -> bool:
        """Whether a negation (or, for a verb, a hypothetical) stands just before ``start``, in
        its sentence and after the last option named there ("I'd avoid X and choose Y": choose)."""
        text = self.text
        begin = max([start - 30] + [m.end for m in self.every if m.end <= start])
        window = text[max(0, begin) : start]
        window = window[max(window.rfind("."), window.rfind("\n")) + 1 :]
        window = re.split(r"\b(?:but|however|yet)\b", window, flags=re.I)[-1]  # "not sure, but"
        if _NEGATION.search(window):
            return True
        return weak and bool(_HYPOTHETICAL.search(window))

    def copular(self) -> list[tuple[int, str | Literal[False]]]:
        """(position, choice) for "<subject about the choice> is <option>" ("The option that
        should be chosen is X", "The most suitable landing zone is X"); a negated subject ("The
        only option that is not mentioned is X") or one naming an option gives nothing."""
        text = self.text
        found: list[tuple[int, str | Literal[False]]] = []
        for match in _COPULA.finditer(text):
            sentence = max(text.rfind(mark, 0, match.start()) for mark in (".", "!", "?", "\n")) + 1
            subject = text[sentence : match.start()]
            if not _CHOICE_SUBJECT.search(subject) or _NEGATION.search(subject):
                continue
            if _ORDINAL_OPTION.search(subject):  # "The first option is X" describes the list
                continue
            if any(sentence <= m.start < match.start() for m in self.every):
                continue
            start = _skip_marks(text, match.end())
            choice = self.clause_choice(start, self.clause_end(start))
            if choice is not None:
                found.append((match.start(), choice))
        return found

    def verdicts(self) -> list[tuple[int, str | Literal[False]]]:
        """(position, option) for "<option> is the best choice", "<option> should be chosen"."""
        found: list[tuple[int, str | Literal[False]]] = []
        for mention in self.mentions:
            start = _segment_start(self.text, mention.start)
            end = self.clause_end(mention.start)
            inside = [m for m in self.mentions if mention.start <= m.start and m.end <= end]
            said = self.text[end : end + 1] in (".", "!")
            if self.names_as_answer(start, end, inside, _VERDICT_ONLY) or (
                said and self.names_as_answer(start, end, inside, _ELLIPTIC)
            ):
                found.append((mention.start, mention.option))
        return found

    def answer_first(self) -> str | None:
        """An answer-first reply: it opens with an option named as an answer ("East Town, since
        the tunnel is open.", after any clauses that only reject options: "Not X. Y."), or its
        first mention stands alone on its line ("**Priya**"), or it closes on an option alone
        ("... I'm choosing between X and Y. Y.")."""
        text = self.text
        start = _skip_marks(text, 0)
        end = self.clause_end(start)
        while end < len(text) and (
            self._rejects_only(start, end)
            or (_SAYS_NO.fullmatch(text[start:end]) and not self._names_any(start, end))
        ):
            start = _skip_marks(text, end + 1)
            end = self.clause_end(start)
        first_clause = self.clause_choice(start, end)
        if len(_listed_options(text, self.mentions)) > 1:
            return None
        if first_clause:
            return first_clause
        if self.mentions:
            first = self.mentions[0]
            line_start = text.rfind("\n", 0, first.start) + 1
            line_end = text.find("\n", first.end)
            line = text[line_start : len(text) if line_end < 0 else line_end]
            before = text[:line_start].strip().rsplit("\n", 1)[-1]
            alone = line.strip(" .!:-*\t") == text[first.start : first.end]
            # A line that introduces it decides ("The only option that is not mentioned is:\n- X",
            # "The first option is:\n- X"); an answer's introduction was read above.
            introduced = before.endswith(":") or _NEGATION.search(before)
            if alone and not introduced:
                return first.option
        return self.closing()

    def _names_any(self, start: int, end: int) -> bool:
        return any(start <= m.start < end for m in self.mentions)

    def _rejects_only(self, start: int, end: int) -> bool:
        """Whether ``text[start:end]`` names options only to reject them ("Not X.")."""
        rejects = any(start <= m.start < end for m in self.rejected)
        return rejects and not self._names_any(start, end)

    def closing(self) -> str | None:
        """The option a reply's last sentence is, alone, after reasoning ("... I'm choosing
        between X and Y. Y."): said in full (a full stop, or a line of its own), and not
        introduced by a colon or a negation ("The option not mentioned is:\n- X")."""
        text = self.text.rstrip()
        bounds = [0] + [
            m.end()
            for m in _CLAUSE_END.finditer(text)
            if not any(x.start <= m.start() < x.end for x in self.every)
        ]
        begin = next((b for b in reversed(bounds) if text[b:].strip(" \t\n.!?;*\"'")), 0)
        if begin == 0 or self.clause_end(begin) < len(text.rstrip(" .!*\"'")):
            return None
        before = text[:begin].rstrip()
        said = re.search(r"[.!]\W*$", text) or text[begin - 1] == "\n"
        sentence = before[max(before[:-1].rfind(m) for m in ".!?\n") + 1 :]
        if not said or before.endswith(":"):
            return None
        if _NEGATION.search(sentence) and not _SAYS_NO.fullmatch(sentence):
            return None  # "The only option not mentioned here. X." (not "Not A. B.")
        inside = [m for m in self.mentions if begin <= m.start]
        if not inside:
            bare = text[begin:].strip(" \t\n.!?;*\"'")
            if re.fullmatch(r"\(?[A-Z]\)?", bare):
                return _bare_letter(bare, self.options, self.letters_shown)
            return None
        if len({m.option for m in inside}) > 1:
            return None
        start = _skip_marks(text, begin)
        return (
            inside[0].option if self.names_as_answer(start, len(text), inside, _BARE_TAIL) else None
        )


def _rejections(text: str, mentions: list[_Mention]) -> list[_Mention]:
    """The mentions of options the reply rejects: after "not", "never", "avoid", "rather
    than" ...; before "is the one to avoid", "isn't the best choice", "should be avoided" ...;
    or asked about and answered no ("Site B? Definitely not.")."""
    rejected: list[_Mention] = []
    for index, mention in enumerate(mentions):
        previous = mentions[index - 1].end if index else 0
        lead = text[max(previous, _segment_start(text, mention.start)) : mention.start]
        end = _clause_end(text, mention.start, mentions)
        tail = text[_name_end(text, mention, mentions[index:]) : end]
        if _REJECT_LEAD.search(lead) or _REJECT_TAIL.match(tail):
            rejected.append(mention)
    for answer in _QUESTION_NO.finditer(text):
        question = max(text.rfind(mark, 0, answer.start()) for mark in (".", "!", "?", "\n")) + 1
        rejected += [m for m in mentions if question <= m.start < answer.start()]
    return list(dict.fromkeys(rejected))


def _respelt(word: str | None, named: str, mention: _Mention) -> bool:
    """Whether a capitalised ``word`` before a mention by one of its name's later words
    ("Fernald Analytics" for "Ferrowind Analytics") is that name's own previous word misspelt: it
    must begin like it. Before a full name or a letter no word is a misspelling ("Not Ana Ruiz",
    "Avoid X"), and "Tamberlall Global Index Fund" names no option (a blend of two names)."""
    if word is None:
        return True
    words = mention.option.split()
    spoken = named.split()
    if spoken == words or spoken[0] not in words:
        return False  # the full name, or a letter reference: nothing to misspell
    index = words.index(spoken[0])
    return index > 0 and word[:3].casefold() == words[index - 1][:3].casefold()


def _skip_marks(text: str, start: int) -> int:
    """Past the whitespace, list marks and letter label that open an answer ("\n- X", "A. X"),
    so the clause after a marker is the answer's line, not an empty one."""
    match = re.match(r"[\s*•>-]*(?:\d+[.)]\s+|[A-Z][.)]\s+)?", text[start:])
    return start + (match.end() if match else 0)


def _from_json(
    text: str, options: Sequence[str], letters_shown: bool
) -> str | None | Literal[False]:
    stripped = text.strip()
    fenced = re.match(r"^```\w*\s*(.*?)\s*```$", stripped, re.DOTALL)
    try:
        value = json.loads(fenced.group(1) if fenced else stripped)
    except ValueError:
        return None
    if isinstance(value, dict):
        for key in _JSON_KEYS:
            if isinstance(value.get(key), str):
                return parse_choice(value[key], options, letters_shown=letters_shown) or False
        return False
    if isinstance(value, str):
        return parse_choice(value, options, letters_shown=letters_shown) or False
    return False


def parse_choice(
    text: str | None, options: Sequence[str], *, letters_shown: bool = False
) -> str | None:
    """The option a free-text answer chooses, or None when it chooses none or several.

    Reads, in order: a JSON object with an ``answer``/``choice``-like field (or such fields in
    JSON that does not parse: they decide); then only what follows the writer's last retraction
    ("Wait, no:", "scratch that", "on second thought": nothing after it is no choice); a bare
    option or letter; the clause after the last explicit answer marker ("Final answer:", "The
    correct answer is:", "Actually,") or choice subject ("The option that should be chosen
    is"), else after the last first-person choice verb ("I would choose", not negated or
    hypothetical) or before a verdict ("X is the best choice", "X should be chosen"); else an
    answer-first reply ("East Town, since ...", "1. X") or one that closes on an option alone.
    An option counts only where it is named as the answer: a mention in a restated fact, an
    option the reply rejects ("Not X", "X is the one to avoid", "X? No."), an agent tag and a
    list of several options choose nothing. Two options given as the final answer ("A or B")
    are invalid. A letter ("B", "Option B", "(B)") names the option whose name holds it
    ("Candidate B"), else, only when ``letters_shown`` (the prompt labelled its options with
    letters), the option at that position. Measured on labelled replies:
    ``tests/fixtures/choice_replies/README.md``.
    """
    if text is None or not text.strip() or not options:
        return None
    options = list(options)
    from_json = _from_json(text, options, letters_shown)
    if from_json is not False and from_json is not None:
        return from_json
    if from_json is False:
        return None
    clean = _MARKDOWN.sub("", text).strip()
    field = _field_choice(clean, options, letters_shown)
    if field is not False:
        return field  # type: ignore[return-value]
    return _read(clean, options, letters_shown)


def _read(clean: str, options: list[str], letters_shown: bool) -> str | None:
    """:func:`parse_choice` on a reply's plain text (no JSON, no answer fields)."""
    retractions = list(_RETRACTION.finditer(clean))
    if retractions:  # "X. Wait, no: Y." reads as "Y."; "I'd choose X. Wait, no." as nothing
        after = clean[retractions[-1].end() :].lstrip(" \t\n,.:;!?*—–-")
        if not after.strip(" .!?"):
            return None
        choice = _read(after, options, letters_shown)
        if choice is None:  # "I take that back: Y has the experience." names Y instead
            reading = _Reading.of(after, options, letters_shown)
            first = reading.mentions[:1]
            if first and reading.names_as_answer(0, first[0].end, first, re.compile("")):
                choice = first[0].option
        return choice
    bare = clean.strip(" .!\"'")
    for option in options:
        if bare.casefold() == option.casefold():
            return option
    if re.fullmatch(r"\(?[A-Z]\)?\.?", bare):
        return _bare_letter(bare, options, letters_shown)
    reading = _Reading.of(clean, options, letters_shown)
    strong = reading.marked(_STRONG, weak=False) + reading.copular()
    weak = reading.marked(_WEAK, weak=True) + reading.verdicts()
    for found in (strong, weak):
        if found:
            choice = max(found, key=lambda pair: pair[0])[1]
            return None if choice is False else choice
    if reading.mentions:
        return reading.answer_first()
    if reading.rejected:
        return reading.closing()
    first_line = clean.splitlines()[0].strip(" .!:")
    if re.fullmatch(r"\(?[A-Z]\)?", first_line):
        return _bare_letter(first_line, options, letters_shown)
    return reading.closing()


def _listed_options(text: str, mentions: list[_Mention]) -> set[str]:
    """The options that open list items ("1. X", "- X"): a list of several options ranks or
    restates them, it does not choose one."""
    items = [m.end() for m in re.finditer(r"(?m)^[ \t]*(?:\d+[.)]|[-*•])[ \t]*", text)]
    return {m.option for m in mentions if m.start in items}


def _field_choice(text: str, options: Sequence[str], letters_shown: bool) -> str | None | bool:
    """The answer of a reply that writes answer fields in JSON that does not parse (cut at the
    token limit, doubled braces): ``"vote": "X"`` chooses X; fields that name no option, or
    different ones, choose nothing (the rationale beside them is reasoning, not the vote).
    ``False`` when the reply writes no answer field."""
    keys = "|".join(_JSON_KEYS)
    values = re.findall(rf'"(?:{keys})"\s*:\s*"([^"\n]*)"', text, re.IGNORECASE)
    if not values:
        return False
    choices = {parse_choice(v, options, letters_shown=letters_shown) for v in values}
    return choices.pop() if len(choices) == 1 else None


def mentioned_options(
    text: str, options: Sequence[str], *, letters_shown: bool = False
) -> list[str]:
    """The distinct options ``text`` names (full names, unique name words, "Option B" where
    the letter names an option), in order of first mention."""
    return list(dict.fromkeys(m.option for m in _mentions(text, list(options), letters_shown)))
