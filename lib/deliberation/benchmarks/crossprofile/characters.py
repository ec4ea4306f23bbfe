"""Character rules for template strings: names are NFKC-normalised, and invisible or
look-alike characters are refused (issue 9, item 7).

Why: the verifier decides whether a fact names an option by matching text. A zero-width
space (U+200B) inside "Ben Okafor", a right-to-left override, or a Cyrillic "e" (U+0435) in
"Ben Okafor" hides the name from that match while a reader (or a model) still sees it, so
such a fact could name a second option and pass. And two spellings that render the same ("Ana Ruiz" with a
no-break space, or full-width letters) must be one name.

- **Names** (options, the key, criteria, a fact's option, criterion and attribute) are
  normalised to NFKC, so compatibility variants become the plain characters.
- **Every string** (names and texts) is refused if it holds a zero-width or bidi-control
  character, any other invisible format character (Unicode category Cf), or a control
  character other than a line break or tab.
- **Confusables**: a word whose letters come from more than one script, one of them Latin,
  Cyrillic or Greek (the scripts with look-alike letters), is refused. Words entirely in one
  script ("Zoë", "Chen Wei", "北京") pass. Texts are checked after NFKC, so "µg" (micro sign,
  which is Greek mu) counts as mixed: write "micrograms".
"""

from __future__ import annotations

import re
import unicodedata

_ZERO_WIDTH = frozenset("\u200b\u200c\u200d\u2060\ufeff\u180e\u00ad")
_BIDI_CONTROLS = frozenset(
    "\u200e\u200f\u061c\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)
_CONFUSABLE_SCRIPTS = frozenset({"LATIN", "CYRILLIC", "GREEK"})
_ALLOWED_CONTROLS = frozenset("\n\t")
_WORD = re.compile(r"[^\W\d_]+")
_PLAIN_ASCII = re.compile(r"[\x20-\x7e\n\t]*")


def _describe(ch: str) -> str:
    return f"U+{ord(ch):04X} ({unicodedata.name(ch, 'unnamed')})"


def _invisible_character_problems(text: str) -> list[str]:
    """Zero-width, bidi-control, other format and control characters in ``text``."""
    problems = []
    for index, ch in enumerate(text):
        if ch in _ZERO_WIDTH:
            kind = "a zero-width character"
        elif ch in _BIDI_CONTROLS:
            kind = "a bidi-control character"
        elif unicodedata.category(ch) == "Cf":
            kind = "an invisible format character"
        elif unicodedata.category(ch) == "Cc" and ch not in _ALLOWED_CONTROLS:
            kind = "a control character"
        else:
            continue
        problems.append(f"contains {kind} {_describe(ch)} at position {index}")
    return problems


def _script(ch: str) -> str:
    """The script of a letter, from its Unicode name ("CYRILLIC SMALL LETTER A" -> CYRILLIC)."""
    return unicodedata.name(ch, "UNKNOWN").split(" ", 1)[0]


def _mixed_script_words(text: str) -> list[str]:
    """Words of ``text`` (after NFKC) mixing a Latin, Cyrillic or Greek letter with a letter
    of another script: the look-alike spellings of a name."""
    found = []
    for word in _WORD.findall(unicodedata.normalize("NFKC", text)):
        if word.isascii():
            continue
        scripts = {_script(ch) for ch in word if unicodedata.category(ch).startswith("L")}
        if len(scripts) > 1 and scripts & _CONFUSABLE_SCRIPTS:
            found.append(word)
    return found


def text_problems(text: str) -> list[str]:
    """Why ``text`` may not appear in a template (empty if it may)."""
    if _PLAIN_ASCII.fullmatch(text):  # the common case: nothing invisible, one script
        return []
    problems = _invisible_character_problems(text)
    for word in _mixed_script_words(text):
        scripts = sorted({_script(ch) for ch in word if unicodedata.category(ch).startswith("L")})
        problems.append(
            f"word {word!r} mixes scripts ({', '.join(scripts)}): a look-alike (confusable) "
            "spelling; write it in one script"
        )
    return problems


def clean_name(name: str) -> str:
    """``name`` in NFKC; raises ValueError (the message names the character) if it holds an
    invisible character or mixes scripts within a word."""
    problems = text_problems(name)
    if problems:
        raise ValueError("; ".join(problems))
    return unicodedata.normalize("NFKC", name)


def clean_text(text: str) -> str:
    """``text`` unchanged (authors' typography is kept); raises ValueError like
    :func:`clean_name`."""
    problems = text_problems(text)
    if problems:
        raise ValueError("; ".join(problems))
    return text
