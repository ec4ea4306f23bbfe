"""Pull the final answer out of a model's reply: shared by every grader.

Order of precedence: the last ``\\boxed{...}`` (nested braces allowed) or the last "Proposed
final answer:" / "Final answer:" line, whichever comes later in the reply; else the last
"the answer is ..." phrase; else the whole reply (accepted only when it is short, i.e. the reply
*is* the answer). On that span, :func:`parse_letters` reads option letters ("(B)", "B.",
"Option B", "A, C", "ABD") and :func:`parse_number` reads numbers with units, thousands commas,
the unicode minus, ``a \\times 10^{b}`` and simple closed forms.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Source = Literal["boxed", "final_line", "answer_phrase", "whole", "none"]

# A reply that is the answer itself is short; longer unmarked text is not read as an answer.
MAX_BARE_CHARS = 60

_BOX_COMMANDS = ("\\boxed", "\\fbox")
_FINAL_LINE = re.compile(
    r"^[ \t>*_#\-]*(?:proposed\s+)?final\s+answer[ \t*_]*(?:[:：=]|is\b)[ \t*_]*(?P<answer>.*?)[ \t*_]*$",
    re.IGNORECASE | re.MULTILINE,
)
_ANSWER_PHRASE = re.compile(
    r"\b(?:the\s+)?(?:correct\s+|final\s+)?(?:answer|option|choice)s?\s+(?:is|are)\s*:?\s*"
    r"(?P<answer>[^\n]*?)\s*(?:\.(?:\s|$)|\n|$)",
    re.IGNORECASE,
)
_MINUS = str.maketrans({"\u2212": "-", "\u2013": "-", "\u2012": "-", "\u2010": "-", "\ufe63": "-"})


@dataclass(frozen=True)
class FinalAnswer:
    """The answer span and how it was found (``none`` when the reply is empty)."""

    text: str
    source: Source

    @property
    def explicit(self) -> bool:
        """True when the reply marked its answer (box, final-answer line or answer phrase)."""
        return self.source in ("boxed", "final_line", "answer_phrase")


def _box_spans(text: str) -> list[tuple[int, str]]:
    """Every balanced ``\\boxed{...}`` / ``\\fbox{...}`` as (start, content), in order."""
    spans = []
    for command in _BOX_COMMANDS:
        for match in re.finditer(re.escape(command), text):
            i = match.end()
            while i < len(text) and text[i] == " ":
                i += 1
            if i < len(text) and text[i] == "{":
                depth = 0
                for j in range(i, len(text)):
                    if text[j] == "{":
                        depth += 1
                    elif text[j] == "}":
                        depth -= 1
                        if depth == 0:
                            spans.append((match.start(), text[i + 1 : j]))
                            break
            elif command == "\\boxed" and i > match.end():  # "\boxed 5"
                token = re.match(r"[^\s$]+", text[i:])
                if token:
                    spans.append((match.start(), token.group(0)))
    return sorted(spans)


def last_boxed(text: str) -> str | None:
    """Content of the last complete ``\\boxed{...}`` (or ``\\fbox{...}``), braces balanced."""
    spans = _box_spans(text)
    return spans[-1][1].strip() if spans else None


def _clean_span(span: str) -> str:
    span = span.strip().strip("*_` ")
    if span.startswith("$") and span.endswith("$") and len(span) > 1:
        span = span.strip("$").strip()
    for wrapper in (r"\(", r"\)", r"\[", r"\]"):
        if span.startswith(wrapper) or span.endswith(wrapper):
            span = span.removeprefix(wrapper).removesuffix(wrapper).strip()
    return span.rstrip(".").strip()


def final_answer(reply: str) -> FinalAnswer:
    """The answer span of a reply (see the module docstring for the precedence)."""
    if not reply or not reply.strip():
        return FinalAnswer("", "none")
    boxes = _box_spans(reply)
    lines = list(_FINAL_LINE.finditer(reply))
    candidates: list[tuple[int, str, Source]] = []
    if boxes:
        start, content = boxes[-1]
        candidates.append((start, content, "boxed"))
    if lines and lines[-1].group("answer").strip():
        line = lines[-1]
        inner = last_boxed(line.group("answer"))
        candidates.append(
            (line.start(), inner if inner is not None else line.group("answer"), "final_line")
        )
    if candidates:
        _, text, source = max(candidates, key=lambda c: c[0])
        return FinalAnswer(_clean_span(text), source)
    phrases = list(_ANSWER_PHRASE.finditer(reply))
    if phrases and phrases[-1].group("answer").strip():
        return FinalAnswer(_clean_span(phrases[-1].group("answer")), "answer_phrase")
    return FinalAnswer(_clean_span(reply), "whole")


def answer_span(reply: str) -> str | None:
    """The answer text if the reply states one (explicitly, or by being short), else None."""
    found = final_answer(reply)
    if found.source == "none" or (found.source == "whole" and len(found.text) > MAX_BARE_CHARS):
        return None
    return found.text


# ---------------------------------------------------------------- letters

_LATEX_WRAPPERS = re.compile(
    r"\\(?:text|textbf|textit|mathrm|mathbf|mathit|operatorname)\s*\{([^{}]*)\}"
)
_LETTER = r"[\(\[]?([A-Z])[\)\]]?"
_LEAD_WORDS = r"(?:(?i:(?:the\s+)?(?:correct\s+)?(?:options?|choices?|answers?))\s*(?:(?i:is|are)\s*)?[:\-]?\s*)?"
_SEPARATOR = r"(?:\s*(?:,|;|/|&|\+|(?i:\band\b|\bor\b))\s*|\s+)"
_LETTER_LIST = re.compile(rf"^{_LEAD_WORDS}{_LETTER}(?:{_SEPARATOR}{_LETTER})*\s*[.)]?$")
_LEADING_LETTER = re.compile(
    rf"^{_LEAD_WORDS}(?:\(([A-Z])\)|\[([A-Z])\]|([A-Z])(?:[.):](?!\d)|\s+(?i:is|are)\b))"
)
_OPTION_WORD = re.compile(
    r"(?i:\b(?:option|choice)s?)\s+\(?([A-Z])\)?(?![A-Za-z])"
    r"(?:\s*(?:,|(?i:and)|&)\s*\(?([A-Z])\)?(?![A-Za-z]))*"
)


def _strip_latex(span: str) -> str:
    previous = None
    while previous != span:
        previous = span
        span = _LATEX_WRAPPERS.sub(r"\1", span)
    for token in ("$", "**", "__", "`", "\\(", "\\)", "\\[", "\\]", "\\{", "\\}", "{", "}"):
        span = span.replace(token, "")
    return span.strip()


def letters_in(span: str, valid: str) -> frozenset[str] | None:
    """Option letters named by an answer span, restricted to ``valid``; None if none named."""
    span = _strip_latex(span).rstrip(".").strip().replace(")(", "), (")
    if not span:
        return None
    found: list[str] = []
    if re.fullmatch(r"[A-Z]{2,}", span) and set(span) <= set(valid):  # "ABD"
        found = list(span)
    elif _LETTER_LIST.match(span):
        body = re.sub(_LEAD_WORDS, "", span, count=1)
        found = re.findall(r"(?<![A-Za-z])([A-Z])(?![A-Za-z])", body)
    else:
        leading = _LEADING_LETTER.match(span)
        if leading:
            found = [next(g for g in leading.groups() if g)]
        else:
            words = _OPTION_WORD.search(span)
            if words:
                found = re.findall(r"(?<![A-Za-z])([A-Z])(?![A-Za-z])", words.group(0))
    letters = frozenset(found) & frozenset(valid)
    return letters or None


def parse_letters(reply: str, valid: str = "ABCD") -> frozenset[str] | None:
    """The set of option letters a reply chooses (e.g. {"A", "C"}), or None if it names none."""
    span = answer_span(reply)
    return None if span is None else letters_in(span, valid)


# ---------------------------------------------------------------- numbers

_NUMBER = r"[+-]?\s*(?:\d+(?:\.\d*)?|\.\d+)"
_SCALED_NUMBER = re.compile(
    rf"(?P<mantissa>{_NUMBER})(?:\s*[eE]\s*(?P<e>[+-]?\d+))?"
    r"(?:\s*(?:\\times|\\cdot|\*|x|×|·)\s*10\s*\^\s*\{?\s*(?P<power>[+-]?\s*\d+(?:\.\d+)?)\s*\}?)?"
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


_DROPPED = ("\\!", "\\,", "\\;", "\\:", "\\$", "$", "\\left", "\\right", "\\displaystyle", "{,}")
_DROPPED_SPACES = ("\u2009", "\u202f")  # thin spaces used as digit-group separators
_AS_SPACE = ("\\ ", "~", "\u00a0")


def normalize_numeric_text(text: str) -> str:
    """Unicode minus and dashes to '-', LaTeX spacing and thousands separators removed."""
    text = text.translate(_MINUS)
    for token in _DROPPED + _DROPPED_SPACES:
        text = text.replace(token, "")
    for token in _AS_SPACE:
        text = text.replace(token, " ")
    text = re.sub(r"\\[dt]frac", r"\\frac", text)
    text = re.sub(r"(?<=\d),(?=\d{3}(?!\d))", "", text)
    return text.strip()


def _after_last_equals(text: str) -> str:
    parts = re.split(r"=|\\approx|≈|\\simeq|\\sim(?![a-z])", text)
    tail = parts[-1].strip()
    return tail if tail else text


def _scaled_value(match: re.Match[str]) -> float:
    value = float(match.group("mantissa").replace(" ", ""))
    if match.group("e"):
        value *= 10.0 ** int(match.group("e"))
    if match.group("power"):
        value *= 10.0 ** float(match.group("power").replace(" ", ""))
    return value


def parse_number(span: str) -> float | None:
    """The number an answer span states: "1.5 \\times 10^{-3} mol", "−2", "89,034.79", "\\frac{3}{4}"."""
    text = _after_last_equals(normalize_numeric_text(_LATEX_WRAPPERS.sub(r"\1", span)))
    text = text.lstrip("( ")
    fraction = _FRACTION.match(text)
    if fraction:
        sign = -1.0 if fraction.group("sign") == "-" else 1.0
        den = float(fraction.group("den").replace(" ", ""))
        if den != 0:
            return sign * float(fraction.group("num").replace(" ", "")) / den
    power = _POWER_OF_TEN.match(text)
    if power and not re.match(r"\s*\d", text[power.end() :]):
        return (-1.0 if power.group("sign") == "-" else 1.0) * 10.0 ** int(
            power.group("power").replace(" ", "")
        )
    leading = _SCALED_NUMBER.match(text)
    if leading:
        rest = _UNIT_DEGREE.sub("", text[leading.end() :], count=1)
        if not _CONTINUES.match(rest):
            return _scaled_value(leading)
    from deliberation.datasets.symbolic import numeric_value

    value = numeric_value(text)
    if value is not None:
        return value
    if leading:
        return _scaled_value(leading)
    anywhere = _SCALED_NUMBER.search(text)
    return _scaled_value(anywhere) if anywhere else None


def parse_reply_number(reply: str) -> float | None:
    """The number a reply gives as its final answer, or None."""
    span = answer_span(reply)
    return None if span is None else parse_number(span)
