"""A hypothesizer's message: its fixed, parseable format, the parser, and how the integrator sees it.

In full: ``docs/experiments.md``, section "The hypothesizer's message format
(experiments/dhd/messages.py)".
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection
from dataclasses import asdict, dataclass, fields

# Field name -> the label written in replies, in reply order.
LABELS: dict[str, str] = {
    "role_name": "Role",
    "proposed_answer": "Proposed final answer",
    "reasoning_direction": "Reasoning direction",
    "key_idea": "Key idea",
    "critical_assumption": "Critical assumption",
    "what_to_check": "What to check",
    "confidence": "Confidence",
}
COMPONENTS: dict[str, tuple[str, ...]] = {
    "answer": ("proposed_answer",),
    "reasoning": ("reasoning_direction", "key_idea", "critical_assumption", "what_to_check"),
}
# What a masked field shows: neutral, and carries no answer.
MASK_PLACEHOLDER = "[withheld]"

_LABEL_LINE = re.compile(
    r"^[ \t>*_#-]*(" + "|".join(re.escape(label) for label in LABELS.values()) + r")[ \t*_]*:"
    r"[ \t*_]*",
    re.IGNORECASE | re.MULTILINE,
)
_BY_LABEL = {label.lower(): name for name, label in LABELS.items()}


@dataclass(frozen=True)
class Hypothesis:
    """One parsed hypothesizer reply (every field a non-empty string)."""

    role_name: str
    proposed_answer: str
    reasoning_direction: str
    key_idea: str
    critical_assumption: str
    what_to_check: str
    confidence: str

    def to_dict(self) -> dict[str, str]:
        return asdict(self)

    @classmethod
    def from_dict(cls, record: dict[str, str]) -> Hypothesis:
        return cls(**{f.name: str(record[f.name]) for f in fields(cls)})

    def render(self) -> str:
        """The reply format itself (what a well-behaved hypothesizer writes)."""
        return "\n".join(f"{label}: {getattr(self, name)}" for name, label in LABELS.items())


@dataclass(frozen=True)
class _ParseResult:
    hypothesis: Hypothesis | None
    error: str | None  # why it did not parse (None when it did)


@functools.lru_cache(maxsize=8192)  # a pool's replies are re-read by every replay of it
def parse_hypothesis(text: str) -> _ParseResult:
    """Read the seven labelled fields (markdown bold, bullets and any letter case accepted; the
    first occurrence of a label wins; a value runs until the next label)."""
    matches = list(_LABEL_LINE.finditer(text))
    values: dict[str, str] = {}
    for position, match in enumerate(matches):
        name = _BY_LABEL[match.group(1).lower()]
        end = matches[position + 1].start() if position + 1 < len(matches) else len(text)
        value = " ".join(text[match.end() : end].split()).strip(" *_")
        if name not in values and value:
            values[name] = value
    missing = [LABELS[name] for name in LABELS if name not in values]
    if missing:
        return _ParseResult(None, "missing or empty fields: " + ", ".join(missing))
    return _ParseResult(Hypothesis(**values), None)


def render_for_integrator(
    index: int, role: str, hypothesis: Hypothesis | None, raw: str, mask: Collection[str] = ()
) -> str:
    """One message as the integrator reads it, with the ``mask``ed components replaced by
    :data:`MASK_PLACEHOLDER`. A message that did not parse is shown as it came back (it cannot
    be masked, and masking it is an error)."""
    unknown = set(mask) - set(COMPONENTS)
    if unknown:
        raise ValueError(f"unknown message components to mask: {sorted(unknown)}")
    header = f"Message {index} (role: {role})"
    if hypothesis is None:
        if mask:
            raise ValueError(f"message {index} did not parse, so its components cannot be masked")
        return f"{header}\n{raw.strip()}"
    hidden = {name for component in mask for name in COMPONENTS[component]}
    lines = [header]
    for name, label in LABELS.items():
        if name == "role_name":
            continue
        value = MASK_PLACEHOLDER if name in hidden else getattr(hypothesis, name)
        lines.append(f"{label}: {value}")
    return "\n".join(lines)
