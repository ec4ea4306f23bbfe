"""Reading a model's answer: which single option a reply chooses (or None: invalid).

The answer is requested as structured output (a choice among the options) where the backend
can enforce it; :func:`parse_choice` also reads free text as real models write it when no
structure was enforced (JSON objects, "Final answer: X", "I would choose X", option letters,
negations and hedges), counting an option only where the reply names it as its answer (a small
model's free replies mostly restate a note, which names an option without choosing it; precision
and recall on hand-labelled real replies: ``tests/fixtures/choice_replies/``). An answer that
names no single option is invalid: recorded with
``valid = 0`` and counted as wrong, never dropped. :func:`mentioned_options` lists the options a
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
    r"\b(not|never|cannot|can't|cant|won't|wouldn't|shouldn't|unable|impossible|hard)\b"
    r"|n't\b",
    re.IGNORECASE,
)
_HYPOTHETICAL = re.compile(r"\b(might|could|may|one|someone|some)\b", re.IGNORECASE)
# Strong markers announce the answer itself; the last one with an option after it wins.
_STRONG = re.compile(
    r"(?:\bfinal\s+(?:answer|choice|decision|recommendation|verdict|vote)\b"
    r"|\b(?:answer|choice|decision|recommendation|verdict|selection|vote|pick|conclusion)\b"
    r"|\b(?:best|right|correct|optimal|safest|strongest|most\s+suitable|preferred|recommended)"
    r"\s+(?:option|choice|candidate|answer|pick|site|location|destination)\b)"
    r"(?:\s*(?:is|would\s+be|:|-|–|—))+"
    r"|\b(?:therefore|thus|hence|so|overall|in\s+conclusion|in\s+summary)\s*:",
    re.IGNORECASE,
)
# Weak markers: verbs of choosing, said by the writer.
_WEAK = re.compile(
    r"\b(?:choose|choosing|select|selecting|pick|picking|go\s+with|going\s+with|opt\s+for"
    r"|recommend|recommending|vote\s+for|lean(?:ing)?\s+(?:towards?|to)|favou?r|prefer"
    r"|hire|fund|award\s+(?:the\s+contract\s+)?to|evacuate\s+to)\b",
    re.IGNORECASE,
)
# What may stand before an option named as an answer: list marks, an agent tag, a letter label,
# "the", "option", a hedge, and one capitalised word (a misspelt first word of the name).
_ANSWER_LEAD = re.compile(
    r"""^[\s*•>"'“‘(\[-]*
    (?:\d+[.)]\s*)?
    (?:\[[^\]\n]*\]\s*)?
    (?:(?-i:[A-Z])[.)]\s+)?
    (?:(?:probably|likely|definitely|clearly|certainly|indeed|actually|simply|obviously
        |i\s+think|i\s+believe)\s*,?\s+)?
    (?:(?:the|option|candidate|choice)\s+)*
    (?P<misspelt>(?-i:[A-Z])[\w'’-]*\s+)?
    [\s"'“‘*]*$""",
    re.IGNORECASE | re.VERBOSE,
)
# An evaluation that makes the option before it a choice: "is the best option", "is the only
# one that meets ...", "should be chosen" (never "is not ...": a negation breaks the match).
_VERDICT = (
    r"(?:is|seems|appears|remains|looks|would\s+be|will\s+be|should\s+be|must\s+be)\s+"
    r"(?:to\s+be\s+)?(?:clearly\s+|probably\s+|likely\s+|therefore\s+|thus\s+|indeed\s+"
    r"|definitely\s+|also\s+)?(?:(?:the|a|an|our|my|your)\s+)?(?:most\s+|more\s+|clear\s+"
    r"|obvious\s+|only\s+|very\s+)?(?:best|better|right|correct|ideal|optimal|good|great|strong"
    r"|stronger|strongest|safest|safer|wisest|preferred|recommended|suitable|appropriate|top"
    r"|winner|option|choice|pick|answer|candidate|one|fit|chosen|selected|hired|picked|funded"
    r"|awarded)\b"
    r"|(?:is|would\s+be)\s+(?:the\s+)?most\s+\w+\s+(?:option|choice|candidate|answer|pick)\b"
    r"|(?:should|must|would|will|ought\s+to)\s+(?:be\s+)?(?:chosen|selected|picked|hired"
    r"|preferred|funded|recommended|appointed|awarded)\b"
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


def _clause_choice(
    text: str,
    start: int,
    end: int,
    mentions: list[_Mention],
    options: Sequence[str],
    letters_shown: bool,
) -> str | None | Literal[False]:
    """The option a clause gives as an answer: one option named as an answer (see
    :func:`_names_as_answer`), ``False`` for two options joined as one answer ("A or B"), None
    for no option or an option only mentioned in a restated fact."""
    inside = [m for m in mentions if start <= m.start and m.end <= end]
    if not inside:
        return _bare_letter(text[start:end], options, letters_shown)
    distinct = list(dict.fromkeys(m.option for m in inside))
    if len(distinct) > 1:
        second = next(m for m in inside if m.option != inside[0].option)
        between = text[inside[0].end : second.start]
        # "Priya or Bartosz", "Priya, Bartosz": two answers; "Priya over Bartosz": Priya.
        if _LIST_JOIN.match(re.sub(r"\b(either|both)\b", "", between, flags=re.I)):
            return False
    if not _names_as_answer(text, start, end, inside):
        return None
    return inside[0].option


def _names_as_answer(
    text: str, start: int, end: int, inside: list[_Mention], tail: re.Pattern[str] = _ANSWER_TAIL
) -> bool:
    """Whether the clause ``text[start:end]`` names its first option as an answer: only list
    marks, a tag or a hedge before it, and after it (and the rest of its name) nothing, a
    reason or a verdict. "Kwabena Asante's debut novel was longlisted" restates a fact."""
    first = inside[0]
    lead = _ANSWER_LEAD.match(text[start : first.start])
    if not lead or not _respelt(lead.group("misspelt"), text[first.start : first.end], first):
        return False
    name_end = first.end
    for mention in inside[1:]:  # "World Equity ETF": one name read as several name words
        if mention.option != first.option or text[name_end : mention.start].strip(" -"):
            break
        name_end = mention.end
    return bool(tail.match(text[name_end:end]))


def _respelt(word: str | None, named: str, mention: _Mention) -> bool:
    """Whether a capitalised ``word`` before a mention by one name word ("Fernald Analytics"
    for "Ferrowind Analytics") is that name's own previous word misspelt: it must begin like
    it. "Tamberlall Global Index Fund" names no option (a blend of two names)."""
    if word is None:
        return True
    words = mention.option.split()
    spoken = named.split()
    if spoken == words or spoken[0] not in words:
        return True  # the full name ("Answer Burley Mews"), or a letter reference
    index = words.index(spoken[0])
    return index > 0 and word[:3].casefold() == words[index - 1][:3].casefold()


def _skip_marks(text: str, start: int) -> int:
    """Past the whitespace, list marks and letter label that open an answer ("\n- X", "A. X"),
    so the clause after a marker is the answer's line, not an empty one."""
    match = re.match(r"[\s*•>-]*(?:\d+[.)]\s+|[A-Z][.)]\s+)?", text[start:])
    return start + (match.end() if match else 0)


def _segment_start(text: str, position: int) -> int:
    """Start of the clause holding ``position``: after the last sentence end, comma, colon or
    line break before it."""
    return max(text.rfind(mark, 0, position) for mark in (".", "!", "?", ";", ",", ":", "\n")) + 1


def _negated(text: str, start: int, *, weak: bool) -> bool:
    window = text[max(0, start - 30) : start]
    window = window[max(window.rfind("."), window.rfind("\n")) + 1 :]
    if _NEGATION.search(window):
        return True
    return weak and bool(_HYPOTHETICAL.search(window))


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
    JSON that does not parse: they decide); a bare option or letter; the clause after the last
    explicit answer marker ("Final answer:", "The correct answer is:") or choice subject ("The
    option that should be chosen is"), else after the last first-person choice verb ("I would
    choose", not negated or hypothetical) or before a verdict ("X is the best choice", "X should
    be chosen"); else an answer-first reply ("East Town, since ...", "1. X"). An option counts
    only where it is named as the answer (see :func:`_names_as_answer`): a mention in a restated
    fact, an option said not to be meant, an agent tag and a list of several options choose
    nothing. Two options given as the final answer ("A or B") are invalid. A letter ("B",
    "Option B", "(B)") names the option whose name holds it ("Candidate B"), else, only when
    ``letters_shown`` (the prompt labelled its options with letters), the option at that
    position. Measured on real replies: ``tests/fixtures/choice_replies/README.md``.
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
    bare = clean.strip(" .!\"'")
    for option in options:
        if bare.casefold() == option.casefold():
            return option
    if re.fullmatch(r"\(?[A-Z]\)?\.?", bare):
        return _bare_letter(bare, options, letters_shown)
    field = _field_choice(clean, options, letters_shown)
    if field is not False:
        return field  # type: ignore[return-value]
    mentions = _mentions(clean, options, letters_shown)

    strong = _marked_choices(clean, _STRONG, mentions, options, letters_shown, weak=False)
    strong += _copular_choices(clean, mentions, options, letters_shown)
    weak = _marked_choices(clean, _WEAK, mentions, options, letters_shown, weak=True)
    for mention in mentions:  # "<option> is the best choice", "<option> should be chosen"
        start = _segment_start(clean, mention.start)
        end = _clause_end(clean, mention.start, mentions)
        inside = [m for m in mentions if mention.start <= m.start and m.end <= end]
        if _names_as_answer(clean, start, end, inside, _VERDICT_ONLY):
            weak.append((mention.start, mention.option))
    for found in (strong, weak):
        if found:
            choice = max(found, key=lambda pair: pair[0])[1]
            return None if choice is False else choice

    if mentions:
        # Answer first: the reply opens with an option named as an answer ("East Town, since
        # the tunnel is open."), or its first mention stands alone on its line ("**Priya**").
        start = _skip_marks(clean, 0)
        first_clause = _clause_choice(
            clean, start, _clause_end(clean, start, mentions), mentions, options, letters_shown
        )
        if len(_listed_options(clean, mentions)) > 1:
            return None
        if first_clause:
            return first_clause
        first = mentions[0]
        line_start = clean.rfind("\n", 0, first.start) + 1
        line_end = clean.find("\n", first.end)
        line = clean[line_start : len(clean) if line_end < 0 else line_end]
        before = clean[:line_start].strip().rsplit("\n", 1)[-1]
        alone = line.strip(" .!:-*\t") == clean[first.start : first.end]
        # A line that introduces it decides ("The only option that is not mentioned is:\n- X",
        # "The first option is:\n- X"); an answer's introduction was read above.
        introduced = before.endswith(":") or _NEGATION.search(before)
        return first.option if alone and not introduced else None
    first_line = clean.splitlines()[0].strip(" .!:")
    if re.fullmatch(r"\(?[A-Z]\)?", first_line):
        return _bare_letter(first_line, options, letters_shown)
    return None


def _listed_options(text: str, mentions: list[_Mention]) -> set[str]:
    """The options that open list items ("1. X", "- X"): a list of several options ranks or
    restates them, it does not choose one."""
    items = [m.end() for m in re.finditer(r"(?m)^[ \t]*(?:\d+[.)]|[-*•])[ \t]*", text)]
    return {m.option for m in mentions if m.start in items}


def _copular_choices(
    text: str, mentions: list[_Mention], options: Sequence[str], letters_shown: bool
) -> list[tuple[int, str | Literal[False]]]:
    """(position, choice) for "<subject about the choice> is <option>" ("The option that should
    be chosen is X", "The most suitable landing zone is X"); a negated subject ("The only option
    that is not mentioned is X") or one naming an option gives nothing."""
    found: list[tuple[int, str | Literal[False]]] = []
    for match in _COPULA.finditer(text):
        sentence = max(text.rfind(mark, 0, match.start()) for mark in (".", "!", "?", "\n")) + 1
        subject = text[sentence : match.start()]
        if not _CHOICE_SUBJECT.search(subject) or _NEGATION.search(subject):
            continue
        if _ORDINAL_OPTION.search(subject):  # "The first option is X" describes the list
            continue
        if any(sentence <= m.start < match.start() for m in mentions):
            continue
        start = _skip_marks(text, match.end())
        end = _clause_end(text, start, mentions)
        choice = _clause_choice(text, start, end, mentions, options, letters_shown)
        if choice is not None:
            found.append((match.start(), choice))
    return found


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


def _marked_choices(
    text: str,
    marker: re.Pattern[str],
    mentions: list[_Mention],
    options: Sequence[str],
    letters_shown: bool,
    *,
    weak: bool,
) -> list[tuple[int, str | Literal[False]]]:
    """(position, choice) for every non-negated ``marker`` whose clause names an option
    (``False`` when it names two as one answer)."""
    found: list[tuple[int, str | Literal[False]]] = []
    for match in marker.finditer(text):
        if _negated(text, match.start(), weak=weak):
            continue
        start = _skip_marks(text, match.end())
        end = _clause_end(text, start, mentions)
        choice = _clause_choice(text, start, end, mentions, options, letters_shown)
        if choice is not None:
            found.append((match.start(), choice))
    return found


def mentioned_options(
    text: str, options: Sequence[str], *, letters_shown: bool = False
) -> list[str]:
    """The distinct options ``text`` names (full names, unique name words, "Option B" where
    the letter names an option), in order of first mention."""
    return list(dict.fromkeys(m.option for m in _mentions(text, list(options), letters_shown)))
