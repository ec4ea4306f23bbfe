"""Pydantic models of one CrossProfile template file (the format in ``templates/README.md``).

The models check types, required fields, allowed values and unknown keys, so a malformed file
fails with field-path errors; the structural and scoring rules live in :mod:`.verifier`, which
needs a typed template to reason about.
"""

from __future__ import annotations

from typing import Annotated, Literal, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    field_validator,
)

from deliberation.benchmarks.crossprofile.characters import clean_name, clean_text

_Domain = Literal[
    "hiring",
    "procurement",
    "office-location",
    "investment",
    "event-venue",
    "software-tool",
    "home-care",
    "education",
    "logistics",
    "housing",
    "grant-funding",
    "marketing-agency",
]
# The 12 domains, in the order the bank and its reports list them.
DOMAINS: tuple[str, ...] = get_args(_Domain)

# Main templates per domain (ids <domain>-01 .. <domain>-05); the verifier checks the bank has them.
MAIN_PER_DOMAIN = 5


def main_slot(template_id: str, domain: str) -> int | None:
    """The main template's place in the full bank, 0..59: 5 x (domain index) + number - 1
    (``hiring-01`` -> 0, ``marketing-agency-05`` -> 59); None for pilots and other ids."""
    prefix = f"{domain}-0"
    if domain not in DOMAINS or not template_id.startswith(prefix):
        return None
    number = template_id.removeprefix(prefix)
    if not (number.isdigit() and 1 <= int(number) <= MAIN_PER_DOMAIN):
        return None
    return MAIN_PER_DOMAIN * DOMAINS.index(domain) + int(number) - 1


Role = Literal["support", "decoy", "irrelevant"]
ROLES: tuple[str, ...] = get_args(Role)
# Facts per role in every template (the verifier checks it).
ROLE_COUNTS: dict[str, int] = {"support": 5, "decoy": 3, "irrelevant": 4}
_Sign = Literal[1, -1]

_NonEmpty = Annotated[str, StringConstraints(min_length=1)]
# Names are compared by the verifier, so they are NFKC-normalised; names and texts refuse
# invisible and look-alike characters (see :mod:`.characters`).
Name = Annotated[_NonEmpty, AfterValidator(clean_name)]
Text = Annotated[_NonEmpty, AfterValidator(clean_text)]
# YAML gives lists; the tuple itself is validated leniently (list -> tuple), its items strictly.
_NameList = Annotated[tuple[Name, ...], Field(strict=False)]


def _exact_sign(value: object) -> object:
    """Reject ``true`` and ``1.0``, which a plain Literal[1, -1] would accept as equal to 1."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError("must be the integer 1 or -1")
    return value


class _Record(BaseModel):
    """Immutable, strict (no type coercion), and closed (unknown keys are errors)."""

    model_config = ConfigDict(frozen=True, strict=True, extra="forbid")


class EvidenceFact(_Record):
    """A support or decoy fact: bears on ``option`` along a stated ``criterion``."""

    id: _NonEmpty
    role: Literal["support", "decoy"]
    option: Name
    criterion: Name
    polarity: _Sign
    text: Text

    _check_polarity = field_validator("polarity", mode="before")(_exact_sign)


class IrrelevantFact(_Record):
    """A fact about ``option`` on an ``attribute`` outside the criteria; it only sounds good or bad."""

    id: _NonEmpty
    role: Literal["irrelevant"]
    option: Name
    attribute: Name
    tone: _Sign
    text: Text

    _check_tone = field_validator("tone", mode="before")(_exact_sign)


Fact = Annotated[EvidenceFact | IrrelevantFact, Field(discriminator="role")]


class Template(_Record):
    """One decision scenario: three options, stated criteria, twelve facts and the answer key."""

    id: _NonEmpty
    domain: _Domain
    pilot: bool
    title: Text
    description: Text
    criteria: _NameList
    options: _NameList
    correct: Name
    facts: Annotated[tuple[Fact, ...], Field(strict=False)]

    @property
    def wrong_options(self) -> tuple[str, ...]:
        return tuple(o for o in self.options if o != self.correct)

    @property
    def correct_position(self) -> int | None:
        """Index of the correct option in ``options`` (None if the key is not an option)."""
        return self.options.index(self.correct) if self.correct in self.options else None
