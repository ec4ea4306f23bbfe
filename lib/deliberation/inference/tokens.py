"""The one deterministic token counter used for every budget and length check.

Budgets must not depend on which model's tokenizer happens to be installed, so a token here is
a maximal run of word characters or a single other non-space character (``"don't"`` -> 3).
It over-counts slightly against BPE tokenizers but ranks texts by length the same way.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(r"\w+|[^\w\s]", re.UNICODE)


def tokenize(text: str) -> list[str]:
    return _TOKEN.findall(text)


def count_tokens(text: str) -> int:
    return len(_TOKEN.findall(text))  # faster than counting finditer matches


def truncate_tokens(text: str, limit: int) -> tuple[str, bool]:
    """The text cut after its first ``limit`` tokens (original spacing kept), and whether it
    was cut."""
    for index, match in enumerate(_TOKEN.finditer(text)):
        if index == limit:
            return text[: match.start()].rstrip(), True
    return text, False
