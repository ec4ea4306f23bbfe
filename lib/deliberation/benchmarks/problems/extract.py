"""Pull the final answer out of a model's reply: shared by every grader.

In full: ``docs/benchmarks.md``, section "Reading the final answer".
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Literal, TypeVar

_Source = Literal[
    "boxed", "tagged", "final_line", "answer_phrase", "verdict", "last_line", "whole", "none"
]
T = TypeVar("T")

# A reply that is the answer itself is short; longer unmarked text is not read as an answer.
_MAX_BARE_CHARS = 60
# A last line this short that is not an option with its text ("(C) The third") may be the answer.
_MAX_LAST_LINE_CHARS = 30
# Longer spans are cut before parsing (an answer is short; this bounds the work per reply).
_MAX_SPAN_CHARS = 2000

_THINK_END = "</think>"
_BOX_COMMAND = re.compile(r"\\(?:boxed|fbox)\b")
_BOX_JOINER = re.compile(r"[\s$,;]*(?:(?:and|or|&)\b)?[\s$,;]*\Z", re.IGNORECASE)
_TAG = re.compile(
    r"\[ANSWER\](?P<answer>[^\[\]]{0,500}?)\[/ANSWER\]|<answer>(?P<xml>[^<>]{0,500}?)</answer>",
    re.IGNORECASE,
)
_MARKUP = r"[ \t>*_#`\-]*"
# "Final answer:", "**Answer:** B", "Correct option: B" (anywhere on a line, colon required).
# Patterns start with a literal word so the scan of a 100 KB reply stays fast (no lookbehind).
_ANSWER_LINE = re.compile(
    r"answer(?:\s+(?:choice|option)s?)?[ \t*_]*(?:[:：]|\bis\b\s*:)[ \t*_]*(?P<answer>[^\n]*)",
    re.IGNORECASE,
)
_CORRECT_OPTION_LINE = re.compile(
    r"(?:correct|selected|chosen|best)\s+(?:option|choice)s?[ \t*_]*[:：][ \t*_]*(?P<answer>[^\n]*)",
    re.IGNORECASE,
)
# A heading line "### Final Answer" / "**Final Answer**" / "Answer:" with nothing after it.
_ANSWER_HEADING = re.compile(
    rf"^{_MARKUP}(?:(?:proposed|the)\s+)?(?:final\s+)?answer[ \t*_:：]*$",
    re.IGNORECASE | re.MULTILINE,
)
_QUALIFIER = (
    r"(?:(?:then|therefore|thus|indeed|clearly|actually|definitely|likely|probably|"
    r"approximately|about|around|roughly|nearly|exactly|simply|just|given\s+by|equal\s+to|"
    r"option|choice)\b[\s:]*)*"
)
_ANSWER_PHRASE = re.compile(
    r"\b(?:(?:correct|right|final|best|true|valid)\s+(?:answers?|options?|choices?|statements?)"
    r"|answers?)"
    r"\s+(?:is|are|should\s+be|must\s+be|would\s+be|will\s+be|becomes)\b[\s:]*"
    rf"{_QUALIFIER}(?P<answer>(?=[*_$(\[\\{{\-+\u2212\d.A-Z]|[a-z](?![A-Za-z]))[^\n]{{0,300}})",
    re.IGNORECASE,
)
# "Hence options A, B and D are correct", "Both A and C are true", "Option (C) is the correct
# one" (a single "(C) is correct" is how options are weighed one by one: not a claim); searched
# only just before each "correct" / "right" / "true", which keeps the scan fast.
_CLAIM_LETTER = r"(?:[(\[][A-Za-z][)\]]|(?-i:[A-Z])\)?)"  # "(b)", "[B]", "B", "B)"; not "b"
_CORRECT_CLAIM = re.compile(
    r"(?:(?<![A-Za-z])(?:(?:options|choices|statements|both)\s+)?"
    rf"(?P<many>(?<![A-Za-z]){_CLAIM_LETTER}"
    rf"(?:\s*(?:,|and|&)\s*(?:and\s+)?{_CLAIM_LETTER})+)\s+are\s+(?:both\s+|all\s+)?"
    rf"|(?:option|choice)\s+(?P<one>{_CLAIM_LETTER})\s+is\s+the\s+)"
    r"(?:correct|right|true)\b"
    # A verdict: a conclusion word, then the options that hold ("... so option (B) is correct",
    # "Hence statement B is true", "Thus only (B) is correct"), unlike one option weighed alone.
    r"|\b(?:so|therefore|thus|hence|consequently|overall|conclusion|means|only|finally)\b"
    r"[*_:,]*\s+[*_]*"
    r"(?:(?:the\s+)?(?:only\s+)?(?:options?|choices?|statements?)\s+)?"
    rf"(?P<verdict>{_CLAIM_LETTER}(?:\s*(?:,|and|&)\s*(?:and\s+)?{_CLAIM_LETTER})*)"
    r"\s+(?:is|are)\s+(?:therefore\s+|thus\s+|hence\s+|clearly\s+|also\s+)?(?:the\s+)?"
    r"(?:only\s+)?(?:correct|right|true|valid)\b"
    rf"|(?:option|choice|statement)s?\s+(?P<adverb>{_CLAIM_LETTER}"
    rf"(?:\s*(?:,|and|&)\s*(?:and\s+)?{_CLAIM_LETTER})*)\s+(?:is|are)\s+"
    r"(?:therefore|thus|hence|clearly)\s+(?:the\s+)?(?:only\s+)?(?:correct|right|true|valid)\b"
    # "(B) is the correct answer", "Thus, B is the answer": a claim, not an option weighed.
    rf"|(?<![A-Za-z])(?P<the>{_CLAIM_LETTER}(?:\s*(?:,|and|&)\s*(?:and\s+)?{_CLAIM_LETTER})*)"
    r"\s+(?:is|are)\s+the\s+(?:correct\s+|right\s+|final\s+)?answers?\b"
    # "All options except C are correct", "Every statement but (C) is true".
    r"|(?P<except>\b(?:all|every(?:thing)?)\s+(?:[a-z]+\s+)?(?:except|but|other\s+than)\s+"
    rf"(?:(?:options?|choices?|statements?)\s+)?{_CLAIM_LETTER}"
    rf"(?:\s*(?:,|and|&)\s*(?:and\s+)?{_CLAIM_LETTER})*)\s+(?:is|are)\s+"
    r"(?:correct|right|true|valid)\b",
    re.IGNORECASE,
)
_CLAIM_WORD = re.compile(r"correct|right|true|answer", re.IGNORECASE)
_CLAIM_REACH = 80  # characters a claim may span before its "correct"
_SENTENCE_END = re.compile(r"\.(?:\s|$)")
_HYPOTHETICAL = re.compile(
    r"\b(?:if|whether|suppose|supposing|assume|assuming|unless|not)\s+"
    r"(?:the\s+)?(?:correct\s+|final\s+)?$",
    re.IGNORECASE,
)
_MINUS = str.maketrans({"\u2212": "-", "\u2013": "-", "\u2012": "-", "\u2010": "-", "\ufe63": "-"})


@dataclass(frozen=True)
class _FinalAnswer:
    """An answer span and how it was found (``none`` when the reply is empty)."""

    text: str
    source: _Source


# ---------------------------------------------------------------- spans


def _brace_partners(text: str) -> dict[int, int]:
    """Opening-brace index -> matching closing-brace index, in one pass (unclosed ones absent)."""
    partners: dict[int, int] = {}
    stack: list[int] = []
    for match in re.finditer(r"[{}]", text):
        if match.group() == "{":
            stack.append(match.start())
        elif stack:
            partners[stack.pop()] = match.start()
    return partners


def _box_spans(text: str) -> list[tuple[int, int, str]]:
    """Every balanced ``\\boxed{...}`` / ``\\fbox{...}`` as (start, end, content), in order."""
    partners: dict[int, int] | None = None
    spans = []
    for match in _BOX_COMMAND.finditer(text):
        i = match.end()
        while i < len(text) and text[i] == " ":
            i += 1
        if i < len(text) and text[i] == "{":
            if partners is None:
                partners = _brace_partners(text)
            close = partners.get(i)
            if close is not None:
                spans.append((match.start(), close + 1, text[i + 1 : close]))
        elif match.group() == "\\boxed" and i > match.end():  # "\boxed 5"
            token = re.match(r"[^\s$]{1,200}", text[i : i + 200])
            if token:
                spans.append((match.start(), i + token.end(), token.group(0)))
    return spans


def last_boxed(text: str) -> str | None:
    """Content of the last complete ``\\boxed{...}`` (or ``\\fbox{...}``), braces balanced."""
    spans = _box_spans(text)
    return spans[-1][2].strip() if spans else None


def _joined_boxes(text: str) -> Iterator[tuple[int, str]]:
    """Boxes as (start, content), adjacent boxes joined into one comma-separated list."""
    group: list[tuple[int, int, str]] = []
    for span in _box_spans(text):
        gap = text[group[-1][1] : span[0]] if group else ""
        if group and span[0] >= group[-1][1] and len(gap) <= 40 and _BOX_JOINER.match(gap):
            group.append(span)
            continue
        if group:
            yield group[0][0], ", ".join(s[2] for s in group)
        group = [span]
    if group:
        yield group[0][0], ", ".join(s[2] for s in group)


def _clean_span(span: str) -> str:
    span = span[:_MAX_SPAN_CHARS].strip().strip("*_` ")
    if span.startswith("$") and span.endswith("$") and len(span) > 1:
        span = span.strip("$").strip()
    for wrapper in (r"\(", r"\)", r"\[", r"\]"):
        if span.startswith(wrapper) or span.endswith(wrapper):
            span = span.removeprefix(wrapper).removesuffix(wrapper).strip()
    return span.rstrip(".").strip()


def _next_line(text: str, start: int) -> str:
    """The first non-empty line at or after ``start`` (markup-only lines skipped)."""
    for line in text[start : start + _MAX_SPAN_CHARS].splitlines():
        if line.strip(" \t*_#>-`"):
            return line
    return ""


def _candidates(reply: str) -> list[tuple[int, str, _Source]]:
    found: list[tuple[int, str, _Source]] = []
    for start, content in _joined_boxes(reply):
        found.append((start, content, "boxed"))
    for match in _TAG.finditer(reply):
        found.append((match.start(), match.group("answer") or match.group("xml") or "", "tagged"))
    lines = [*_ANSWER_LINE.finditer(reply), *_CORRECT_OPTION_LINE.finditer(reply)]
    for match in lines:
        if match.start() and reply[match.start() - 1].isalpha():  # "unanswered:", "reanswer"
            continue
        answer = match.group("answer")
        if not answer.strip(" \t*_"):
            answer = _next_line(reply, match.end() + 1)
        found.append((match.start(), answer, "final_line"))
    for match in _ANSWER_HEADING.finditer(reply):
        found.append((match.start(), _next_line(reply, match.end() + 1), "final_line"))
    for match in _ANSWER_PHRASE.finditer(reply):
        if _HYPOTHETICAL.search(reply[max(0, match.start() - 30) : match.start()]):
            continue
        answer = match.group("answer")
        end = _SENTENCE_END.search(answer)
        found.append((match.start(), answer[: end.start()] if end else answer, "answer_phrase"))
    for word in _CLAIM_WORD.finditer(reply):
        match = _CORRECT_CLAIM.search(reply, max(0, word.start() - _CLAIM_REACH), word.end() + 1)
        if match and not _HYPOTHETICAL.search(reply[max(0, match.start() - 30) : match.start()]):
            groups = match.group("many", "one", "verdict", "adverb", "except", "the")
            letters = next(g for g in groups if g)
            found.append((match.start(), letters, "verdict"))
    found.sort(key=lambda c: c[0])
    return found


_FUNCTION_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "get",
        "has",
        "in",
        "is",
        "it",
        "of",
        "on",
        "or",
        "so",
        "that",
        "the",
        "then",
        "this",
        "thus",
        "to",
        "we",
        "with",
    ]
)


def _ends_like_an_answer(line: str) -> bool:
    """True when a line ends in a number or a unit-like token ("4.47", "J", "m/s", "B").

    A reply cut off by the token limit ends mid-phrase ("... and the energy", "... of the").
    """
    tokens = line.split()
    last = tokens[-1].strip(",;:") if tokens else ""
    if any(c.isdigit() for c in last):
        return True
    return 0 < len(last) <= 4 and last.lower() not in _FUNCTION_WORDS


def candidates(reply: str) -> list[_FinalAnswer]:
    """Every answer the reply states, latest first; then the whole reply if it is short."""
    if not reply or not reply.strip():
        return []
    if _THINK_END in reply:
        reply = reply.rsplit(_THINK_END, 1)[1]
    marked = _candidates(reply)
    found = [_FinalAnswer(_clean_span(text), source) for _, text, source in reversed(marked)]
    found = [c for c in found if c.text]
    body = reply.rstrip()
    last_start = body.rfind("\n") + 1
    raw_last = body[last_start:].strip()
    last = _clean_span(raw_last)
    emphasised = raw_last.startswith(("**", "__", "$", "\\"))  # "**C. Increases**"
    # A complete line, not where a truncated reply stopped ("v = 2.5 m/s and the energy").
    complete = raw_last.endswith((".", "!", ")", "*", "$", "}")) or _ends_like_an_answer(raw_last)
    if (
        last_start > 0
        and complete
        and 0 < len(last) <= _MAX_LAST_LINE_CHARS
        and (emphasised or not _OPTION_LABEL.match(last))
        and not any(start >= last_start for start, _, _ in marked)  # already a candidate
    ):
        found.append(_FinalAnswer(last, "last_line"))
    whole = _clean_span(reply)
    if whole and len(whole) <= _MAX_BARE_CHARS and not _restates_options(whole):
        found.append(_FinalAnswer(whole, "whole"))
    return found


def read_answer(reply: str, reader: Callable[[str], T | None]) -> tuple[T, _FinalAnswer] | None:
    """The first candidate (latest first) that ``reader`` can read, with what it read."""
    for candidate in candidates(reply):
        value = reader(candidate.text)
        if value is not None:
            return value, candidate
    return None


# The head of one option's paragraph in a one-by-one analysis: "**(A)** ...", "Option B: ...",
# "Statement (C) -- ...", "d) ..." at the start of a line.
_OPTION_SECTION = re.compile(
    r"^[ \t>*_#\-]*(?:(?:option|statement|choice)\s+[(\[]?(?P<named>[A-Za-z])[)\]]?(?![A-Za-z])"
    r"|[(\[]?(?P<letter>[A-Za-z])[)\]]?[ \t*_]*[:.)\u2013\u2014-])",
    re.IGNORECASE | re.MULTILINE,
)
# A verdict on the option ("is correct", "this is false", ": Correct", "→ wrong", "**True**").
_VERDICT_WORD = re.compile(
    r"(?:\b(?:is|are|be|so|thus|hence|therefore)\s+|[:\u2192\u2013\u2014-][ \t]*|\*\*[ \t]*)"
    r"(?:(?P<negative>incorrect|false|wrong|invalid|not\s+(?:correct|true|valid))|correct|true|valid)\b",
    re.IGNORECASE,
)


def _option_verdicts(reply: str, valid: str) -> frozenset[str] | None:
    """The options a one-by-one analysis ends up calling correct ("(A) ... so (A) is correct.
    (B) ... (B) is false. (C) ..."): each option's own paragraph, judged by its last verdict word
    (a later paragraph on the same option overrides). None unless two or more options are judged.

    For multi-select questions, whose answer a careful reader collects from such an analysis
    when the reply states no answer after it (see :func:`collected_choice`).
    """
    if _THINK_END in reply:
        reply = reply.rsplit(_THINK_END, 1)[1]
    heads = [
        (m.start(), m.end(), (m.group("named") or m.group("letter")).upper())
        for m in _OPTION_SECTION.finditer(reply)
    ]
    heads = [h for h in heads if h[2] in valid]
    if len(heads) < 2:
        return None
    judged: dict[str, bool] = {}
    for (_, end, letter), following in zip(heads, [*heads[1:], (len(reply), 0, "")], strict=True):
        words = list(_VERDICT_WORD.finditer(reply, end, min(following[0], end + 3000)))
        if words:
            judged[letter] = words[-1].group("negative") is None
    if len(judged) < 2:
        return None
    chosen = frozenset(letter for letter, holds in judged.items() if holds)
    return chosen or None


def collected_choice(
    reply: str, valid: str, found: tuple[frozenset[str], _FinalAnswer] | None
) -> tuple[frozenset[str], _FinalAnswer] | None:
    """A multi-select answer read whole: the options a one-by-one analysis calls correct, when the
    reply states nothing after it but one of those verdicts (or nothing at all); else ``found``."""
    if found is not None and found[1].source not in ("verdict", "last_line", "whole"):
        return found
    collected = _option_verdicts(reply, valid)
    if collected is None or (found is not None and not found[0] <= collected):
        return found
    return collected, _FinalAnswer(", ".join(sorted(collected)), "verdict")


def final_answer(reply: str) -> _FinalAnswer:
    """The latest answer a reply states, whatever its form (``none`` when it states none)."""
    found = candidates(reply)
    if found:
        return found[0]
    return _FinalAnswer(_clean_span(reply or ""), "none" if not (reply or "").strip() else "whole")


def answer_span(reply: str) -> str | None:
    """The latest answer text a reply states (explicitly, or by being short), else None."""
    found = candidates(reply)
    return found[0].text if found else None


# ---------------------------------------------------------------- letters

_LATEX_WRAPPERS = re.compile(
    r"\\(?:text|textbf|textit|mathrm|mathbf|mathit|operatorname|mathbb|num|SI|qty)\s*\{([^{}]*)\}"
)
# One option letter: delimited ("(B)", "[b]", "B)", "B.", "B:") or bare capital ("B").
_ONE_LETTER = (
    r"(?:\(\s*(?P<p>[A-Za-z])\s*\)|\[(?P<s>[A-Za-z])\]|(?P<d>[A-Za-z])[).:](?![\dA-Za-z])"
    r"|(?P<b>[A-Z])(?![A-Za-z0-9'’]))"
)
_LETTER = re.compile(_ONE_LETTER)
_LEAD_WORDS = re.compile(
    r"^(?:(?:the\s+)?(?:correct\s+|right\s+|final\s+|best\s+)?(?:options?|choices?|answers?)"
    r"(?:\s+(?:is|are))?\s*[:\-]?\s*)?",
    re.IGNORECASE,
)
_LIST_SEPARATOR = re.compile(
    r"\s*(?:(?:,|;|/|&|\+)\s*(?:(?:and|or)\b\s*)?|(?:and|or)\b\s*)|\s+", re.IGNORECASE
)
# What may follow a bare letter that is an answer (not the article "A" of "A metal").
_AFTER_BARE = re.compile(
    r"\s*(?:$|[.,;:!?)\]\-\u2013\u2014=]|(?:is|are|was|were|since|because|as|which|would|"
    r"should|must|only|both|all|together|respectively|correct|right|true|holds?|for|"
    r"option|choice|answer|and|or|so|therefore|thus|hence)\b)",
    re.IGNORECASE,
)
_CONCLUSION = re.compile(
    r"\b(?:so|therefore|thus|hence|that\s+is|which\s+means|meaning|leaving|leaves)\b"
    r"|\bi\.e\.|→|=>|⇒",
    re.IGNORECASE,
)
_BRACKETED_LIST = re.compile(
    r"[(\[]\s*([A-Za-z](?:\s*(?:,|;|&|\band\b)\s*(?:and\s+)?[A-Za-z])+)\s*[)\]]"
)
_OPTION_WORD = re.compile(r"\b(?:option|choice)s?\s+", re.IGNORECASE)
_OPTION_LABEL = re.compile(
    r"(?:^|(?<=\s))(?:\(\s*[A-Za-z]\s*\)|[A-Z][.)])\s+"
    r"(?!(?:and|or|since|because|as|is|are|so|both|only)\b)[^\s,;]"
)


# A clause that is nothing but option letters, in any case, separated by commas, spaces, "&",
# "and": "A B D", "a, b, d", "(a) & (d)" (letters alone, so "a" cannot be the article here).
_SEQUENCE_LETTER = r"(?:\([A-Za-z]\)|[A-Za-z](?![A-Za-z'’]))"
_LETTER_SEQUENCE = re.compile(
    rf"{_SEQUENCE_LETTER}(?:(?:\s*(?:,|;|&|\+|\band\b)\s*(?:and\s+)?|\s+){_SEQUENCE_LETTER})+"
)
# "all except C", "all options but C", "every option other than (C)": the complement of C.
_ALL_EXCEPT = re.compile(
    r"(?:all|every(?:thing)?|each)(?:\s+(?:of\s+them|(?:the\s+)?(?:options?|choices?|"
    r"statements?)))?\s*,?\s+(?:except(?:\s+for)?|but|other\s+than|save|excluding|apart\s+from)"
    r"\s+(?:(?:option|choice|statement)s?\s+)?(?P<excluded>.+)$",
    re.IGNORECASE,
)
# A remark after the letters: "ABD — all except C", "ABD; C is wrong" (not "B; D", a list).
_REMARK_TAIL = re.compile(
    r"(?:\s+(?:\u2014|\u2013|--)\s+|\s*;\s*(?=[A-Za-z]\s+[a-z]{2,}|[A-Za-z]{2,})).*$"
)
# A lower-case letter then its reason: no article is followed by "since" or "because".
_EXPLAINED_LOWER = re.compile(r"([a-z])(?:\s*[,;:\u2013\u2014-]\s*|\s+)(?:since|because|as)\b")
# Letters that the clause rules out ("So A is incorrect", "(B) and (C) are not correct").
_REJECTED = re.compile(
    r"(?:(?:options?|choices?|statements?)\s+)?[(\[]?[A-Za-z][)\]]?"
    r"(?:\s*(?:,|and|&)\s*(?:and\s+)?[(\[]?[A-Za-z][)\]]?)*\s+(?:is|are)\s+(?:also\s+)?"
    r"(?:not\b|incorrect|wrong|false|invalid|ruled\s+out|eliminated)",
    re.IGNORECASE,
)
# A remark in parentheses after the letters: "ABD (all except C)", "E (the pUC19 backbone)".
_REMARK = re.compile(r"\s*\((?!\s*(?:[A-Za-z]\s*\)|(?:and|also|plus)\b|&))[^()]+\)")


def _strip_latex(span: str) -> str:
    previous = None
    while previous != span:
        previous = span
        span = _LATEX_WRAPPERS.sub(r"\1", span)
    span = span.replace("\\&", "&")
    for token in ("$", "**", "__", "`", "\\(", "\\)", "\\[", "\\]", "\\{", "\\}", "{", "}"):
        span = span.replace(token, "")
    return span.strip()


def _restates_options(text: str) -> bool:
    """True for text that lists two or more labelled options ("(A) 2 m/s (B) 4 m/s")."""
    return len(_OPTION_LABEL.findall(text)) >= 2


def _letter_list(text: str) -> list[str] | None:
    """Letters listed at the start of ``text`` ("(A), (B) and (D) since ..."), else None."""
    letters: list[str] = []
    position = 0
    while True:
        match = _LETTER.match(text, position)
        if match is None:
            break
        bare = match.group("b")
        if bare is not None and not _AFTER_BARE.match(text, match.end()):
            break
        letters.append(next(g for g in match.groups() if g).upper())
        separator = _LIST_SEPARATOR.match(text, match.end())
        if separator is None:
            return letters
        following = _LETTER.match(text, separator.end())
        if following is None or (
            following.group("b") is not None and not _AFTER_BARE.match(text, following.end())
        ):
            return letters
        position = separator.end()
    return letters or None


def _letters_in_clause(clause: str, valid: str) -> list[str] | None:
    clause = clause.strip(" \t\n,;:.")
    if not clause or _REJECTED.match(clause):
        return None
    if re.fullmatch(r"[A-Z]{2,}", clause) and set(clause) <= set(valid):  # "ABD"
        return list(clause)
    run = clause.upper()  # "abd": distinct letters in order, unlike the words "bad" or "cab"
    if (
        re.fullmatch(r"[a-z]{2,}", clause)
        and set(run) <= set(valid)
        and list(run) == sorted(set(run))
    ):
        return list(run)
    if re.fullmatch(r"[a-z]", clause):  # a lone lower-case letter: "b"
        return [clause.upper()]
    explained = _EXPLAINED_LOWER.match(clause)  # "a since both conditions hold"
    if explained and explained.group(1).upper() in valid:
        return [explained.group(1).upper()]
    body = clause[_LEAD_WORDS.match(clause).end() :]
    words = _OPTION_WORD.search(clause)
    for part in (body, clause[words.end() :] if words else None):
        if part is None:
            continue
        excluded = _ALL_EXCEPT.match(part)
        if excluded:
            named = _letters_in_clause(excluded.group("excluded"), valid)
            return [c for c in valid if c not in named] if named else None
        sequence = _LETTER_SEQUENCE.match(part)
        if sequence and _AFTER_BARE.match(part, sequence.end()):  # "a, c, d since ..."
            named = re.findall(r"(?<![A-Za-z])[A-Za-z](?![A-Za-z])", sequence.group())
            letters = [c.upper() for c in named]
            if set(letters) <= set(valid):
                return letters
        found = _letter_list(part)
        if found:
            return found
    trailing = re.search(r"(?:^|[\s:])\(?([A-Z])\)?[.!]?$", clause)  # "I think it is B"
    return [trailing.group(1)] if trailing else None


def letters_in(span: str, valid: str) -> frozenset[str] | None:
    """Option letters named by an answer span, restricted to ``valid``; None if none named.

    The clause after the last conclusion word is read first ("A is wrong, so B" reads B).
    """
    span = _strip_latex(span[:_MAX_SPAN_CHARS]).rstrip(".").strip().replace(")(", "), (")
    span = _BRACKETED_LIST.sub(r"\1", span)  # "(A, B, D)" -> "A, B, D"
    if not span:
        return None
    # The letters with their remarks set aside first ("ABD (all except C)" is A, B, D), then
    # the span as written ("The answer is 5 (option C)" names C only in its remark).
    head = _REMARK.sub("", span).strip()
    if not _CONCLUSION.search(head):  # "A ...; therefore C" concludes, it does not remark
        head = _REMARK_TAIL.sub("", head).strip()
    for text in dict.fromkeys((head, span)):
        cuts = [m.end() for m in _CONCLUSION.finditer(text)]
        for clause in [text[cut:] for cut in reversed(cuts)] + [text]:
            found = _letters_in_clause(clause, valid)
            if found:
                letters = frozenset(found) & frozenset(valid)
                return letters or None
    return None


def parse_letters(reply: str, valid: str = "ABCD") -> frozenset[str] | None:
    """The set of option letters a reply chooses (e.g. {"A", "C"}), or None if it names none."""
    found = read_answer(reply, lambda span: letters_in(span, valid))
    return None if found is None else found[0]


# ---------------------------------------------------------------- numbers

_NUMBER = r"[+-]?\s*(?:\d+(?:\.\d*)?|\.\d+)"
_SCALED_NUMBER = re.compile(
    rf"(?P<mantissa>{_NUMBER})(?:\s*[eE]\s*(?P<e>[+-]?\d+))?"
    r"(?:\s*(?:\\times|\\cdot|\*|x|X|×|·|⋅|∙)\s*10\s*\^\s*\{?\s*(?P<power>[+-]?\s*\d+(?:\.\d+)?)\s*\}?)?"
)
_POWER_OF_TEN = re.compile(r"(?P<sign>[+-]?)\s*10\s*\^\s*\{?\s*(?P<power>[+-]?\s*\d+)\s*\}?")
_FRACTION = re.compile(
    rf"(?P<sign>[+-]?)\s*\\frac\s*\{{\s*(?P<num>{_NUMBER})\s*\}}\s*\{{\s*(?P<den>{_NUMBER})\s*\}}"
)
# After a number, these mean the expression goes on (so the leading number is not the value).
_CONTINUES = re.compile(
    r"^\s*(?:\^(?!\s*\{?\s*\\circ)|_|/\s*\d|\\(?:frac|sqrt|pi|cdot|times)|\(|\d|[+\-*]\s*[\d\\(])"
)
_UNIT_DEGREE = re.compile(r"\^\s*\{?\s*\\circ\s*\}?")
_SUPERSCRIPTS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺", "0123456789-+")
_SUPERSCRIPT_RUN = re.compile(r"[⁻⁺]?[⁰¹²³⁴⁵⁶⁷⁸⁹]+")
# Digit groups: "18 900", "840 000", "115\,440", "1{,}000", "89,034.79" (3-digit groups only).
_GROUP_SEPARATOR = r"(?:,|\{,\}|\\[,;: !]|[ \u00a0\u2009\u202f])"
# Spacing between two digits: "29\\,40", "0.000\\,123", "2\u2009940" (LaTeX or thin spaces).
_SPACED_DIGITS = re.compile(r"(?<=\d)(?:[ \t]*(?:\\[,;:!>]|\\ |~|[\u2009\u202f])[ \t]*)+(?=\d)")
_BRACED_COMMA = re.compile(r"(?<=\d)\{,\}(?=\d)")  # left after the groups of three: decimal
_PYTHON_POWER = re.compile(
    r"(?<=[\w)}])\*\*(?=\s*[\w({+\-\u2212])|(?<=\d)[ \t]+\*\*[ \t]*(?=[(+\-\u2212]?[ \t]*\d)"
)
_PAREN_EXPONENT = re.compile(r"\^\s*\(\s*([+\-\u2212]?\s*\d+(?:\.\d+)?)\s*\)")
# Only where LaTeX would read less than a person does ("10^-19", "2^10"; "x^2" is already fine).
_BARE_EXPONENT = re.compile(r"\^[ \t]*([+\-\u2212][ \t]*\d+(?:\.\d+)?|\d{2,}(?:\.\d+)?)")
_GROUPED = re.compile(rf"(?<![\d.,])\d{{1,3}}(?:{_GROUP_SEPARATOR}\d{{3}})+(?![\d]|\{{,\}}\d)")
# A range: two numbers joined by an en/em dash, "--" or "to" (a hyphen is a minus sign).
_RANGE = re.compile(
    rf"^(?:from\s+|between\s+)?(?P<low>{_NUMBER})\s*(?:\u2013|\u2014|--|\\text\{{\s*--?\s*\}}|"
    rf"\bto\b)\s*(?P<high>{_NUMBER})(?![\d.])",
    re.IGNORECASE,
)
_DROPPED = ("\\!", "\\$", "$", "\\left", "\\right", "\\displaystyle")
_AS_SPACE = ("\\,", "\\;", "\\:", "\\ ", "~", "\u00a0", "\u2009", "\u202f")
_MAX_EXPONENT = 400  # beyond float range either way: the value is 0 or infinity


def _superscripts(text: str) -> str:
    return _SUPERSCRIPT_RUN.sub(lambda m: "^{" + m.group().translate(_SUPERSCRIPTS) + "}", text)


def join_digit_groups(text: str) -> str:
    """Digits of one number written apart, joined: a LaTeX or thin space between digits is always
    inside a number (``29\\,40`` is 2940, ``3.141\\,59`` is 3.14159, whatever the group size);
    a plain space, comma or ``{,}`` only before groups of three (``18 900``, ``1{,}000``,
    ``89,034``); a ``{,}`` before anything else is a decimal comma (``2{,}5`` is 2.5)."""
    text = _SPACED_DIGITS.sub("", text)
    text = _GROUPED.sub(lambda m: re.sub(r"\D", "", m.group()), text)
    return _BRACED_COMMA.sub(".", text)


def plain_powers(text: str) -> str:
    """Python and plain-text powers in LaTeX form: ``10**-19``, ``10^-19``, ``10^(-19)`` ->
    ``10^{-19}`` (so ``2^10`` is 2 to the tenth, as a reader means it)."""
    text = _PYTHON_POWER.sub("^", text)
    text = _PAREN_EXPONENT.sub(r"^{\1}", text)
    return _BARE_EXPONENT.sub(r"^{\1}", text)


def normalize_numeric_text(text: str) -> str:
    """Unicode minus, superscripts, powers, LaTeX spacing and digit-group separators normalised."""
    text = plain_powers(join_digit_groups(_superscripts(text[:_MAX_SPAN_CHARS])))
    text = text.translate(_MINUS)
    for token in _DROPPED:
        text = text.replace(token, "")
    for token in _AS_SPACE:
        text = text.replace(token, " ")
    text = re.sub(r"\\[dt]frac", r"\\frac", text)
    return text.strip()


def _after_last_equals(text: str) -> str:
    parts = re.split(r"=|\\approx|≈|\\simeq|\\sim(?![a-z])", text)
    tail = parts[-1].strip()
    return tail if tail else text


def _power_of_ten(exponent: str) -> float:
    """10**exponent without OverflowError: 0.0 or inf past the float range."""
    exponent = exponent.replace(" ", "")
    digits = exponent.lstrip("+-").split(".")[0]
    if len(digits) > 4 or abs(float(exponent)) > _MAX_EXPONENT:
        return 0.0 if exponent.startswith("-") else float("inf")
    try:
        return 10.0 ** float(exponent)
    except OverflowError:
        return float("inf")


def _scaled_value(match: re.Match[str]) -> float:
    value = float(match.group("mantissa").replace(" ", ""))
    for exponent in (match.group("e"), match.group("power")):
        if exponent:
            scale = _power_of_ten(exponent)
            value = value * scale if value else 0.0
    return value


def _prepared(span: str) -> str:
    text = normalize_numeric_text(_LATEX_WRAPPERS.sub(r"\1", span))
    return _after_last_equals(text).lstrip("( ")


def parse_range(span: str) -> tuple[float, float] | None:
    """The (low, high) of a range answer, "0.85–0.89" / "0.85 to 0.89", else None."""
    text = _after_last_equals(_superscripts(join_digit_groups(span[:_MAX_SPAN_CHARS])))
    text = text.replace("\u2212", "-").replace("$", "").strip().lstrip("( ")
    match = _RANGE.match(text)
    if not match:
        return None
    low, high = (float(match.group(g).replace(" ", "")) for g in ("low", "high"))
    return (min(low, high), max(low, high))


def parse_number(span: str) -> float | None:
    """The number an answer span states: "1.5 \\times 10^{-3} mol", "−2", "18 900", "\\frac{3}{4}".

    A range ("0.85–0.89") is not a single number (None). May raise
    :class:`~deliberation.benchmarks.problems.symbolic.SymbolicTimeout` for a closed form that takes too long.
    """
    if parse_range(span) is not None:
        return None
    text = _prepared(span)
    fraction = _FRACTION.match(text)
    if fraction:
        sign = -1.0 if fraction.group("sign") == "-" else 1.0
        den = float(fraction.group("den").replace(" ", ""))
        if den != 0:
            return sign * float(fraction.group("num").replace(" ", "")) / den
    power = _POWER_OF_TEN.match(text)
    if power and not re.match(r"\s*\d", text[power.end() :]):
        return (-1.0 if power.group("sign") == "-" else 1.0) * _power_of_ten(power.group("power"))
    leading = _SCALED_NUMBER.match(text)
    if leading:
        rest = _UNIT_DEGREE.sub("", text[leading.end() :], count=1)
        if not _CONTINUES.match(rest):
            return _scaled_value(leading)
    from deliberation.benchmarks.problems.symbolic import numeric_value

    value = numeric_value(text)
    if value is not None:
        return value
    if leading:
        return _scaled_value(leading)
    anywhere = _SCALED_NUMBER.search(text)
    return _scaled_value(anywhere) if anywhere else None


def parse_reply_number(reply: str) -> float | None:
    """The number a reply gives as its final answer, or None."""
    found = read_answer(reply, parse_number)
    return None if found is None else found[0]
