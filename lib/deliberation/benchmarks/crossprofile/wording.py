"""Word lists for the evidence-strength rules of bank v2 (issue 10, item 4).

- :data:`_WEAK_WORDING` (a failure in support and decoy facts): promises, offers, plans,
  pitches, marketing and self-reported claims, and hedges. In the old bank decoys used such
  words in 18% of facts and support facts in 3%, so a reader could discount a decoy for its
  wording alone; every support and decoy fact must read as a verified observation.
- :data:`_SOURCE_WORDS` (reported by role, not failed): words citing a source (audit,
  inspection, records...). Old support facts cited one in 36%, decoys in 19%; the two roles
  should cite sources about equally often.
- :data:`_RISK_WORDS` (a warning in irrelevant facts): words that may make an "irrelevant" fact
  a red flag a risk-minded reader would count (lawsuits, delays, safety...). A word list
  cannot judge meaning, so it only points a reviewer at the fact.

The lists are the ones the template authors' checker uses, so a template that passes one
passes the other.
"""

from __future__ import annotations

import re

_WEAK_WORDING = re.compile(
    r"\b(says?|said|claims?|claimed|promis\w*|pledg\w*|offers? to|offered to|plans? to|planned|"
    r"expects?|expected|hopes?|pitch\w*|brochure|advertis\w*|boasts?|touts?|self-reported|"
    r"reportedly|guarantee\w*|according to (its|their|his|her) own|website|"
    r"marketing materials?)\b",
    re.IGNORECASE,
)
_SOURCE_WORDS = re.compile(
    r"\b(audit\w*|inspect\w*|trial\w*|verified|independent\w*|records?|certified|review\w*|"
    r"measured|tested|logs?)\b",
    re.IGNORECASE,
)
_RISK_WORDS = re.compile(
    r"\b(lawsuits?|sued|fined?|violations?|complaints?|broke|breakdowns?|broken|leak\w*|fire|"
    r"injur\w*|bankrupt\w*|debts?|loss(es)?|layoffs?|turnover|resign\w*|fraud|recall\w*|closed|"
    r"closure|delay\w*|late|theft|stolen|safety|risk\w*|scandal|investigat\w*|police|arrest\w*|"
    r"failed|failure|outage|crash\w*|unreliable|mold|pests?|rodents?)\b",
    re.IGNORECASE,
)


def weak_wording(text: str) -> str | None:
    """The first promise/offer/claim/hedge word in ``text``, or None."""
    match = _WEAK_WORDING.search(text)
    return match.group(0) if match else None


def risk_word(text: str) -> str | None:
    """The first possible risk signal in ``text``, or None."""
    match = _RISK_WORDS.search(text)
    return match.group(0) if match else None


def cites_source(text: str) -> bool:
    """Whether ``text`` cites a source (audit, inspection, records, ...)."""
    return _SOURCE_WORDS.search(text) is not None
