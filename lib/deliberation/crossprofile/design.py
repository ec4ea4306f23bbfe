"""The bank-v2 balance design (issue 10): the rules that keep a template's surface from
giving its answer away. Why each rule exists, with the numbers, is in ``templates/README.md``.

Names: **C** the correct option, **X** the wrong option with two decoys, **Y** the wrong
option with one decoy. The format's score rule (+2 / 0 / 0) with decoys placed 2 + 1 forces
support facts 2 on C (+1), 2 on X (-1), 1 on Y (-1), so the evidence names C 2 times, X 4 and
Y 2; irrelevant facts placed **2 on C, 0 on X, 2 on Y** make every option named by exactly 4
of the 12 facts (balanced naming follows from the score rule plus this placement).

Per template (checked only once the answer key holds, since C, X and Y are defined by it):
decoys 2 + 1; irrelevant placement 2 / 0 / 2; a decoy and a support fact on the same option
never share a criterion (a support fact there would rebut the decoy); the options' total fact
tokens differ by at most 10% of their mean (longest minus shortest). Over the bank's main
templates: C's summed irrelevant tone is -2, 0 and +2 each in a third of them, within
:data:`TONE_SHARE_TOLERANCE`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from deliberation.crossprofile.errors import Violation
from deliberation.crossprofile.schema import ROLE_COUNTS, Template
from deliberation.crossprofile.scoring import score_options
from deliberation.tokens import count_tokens

DECOYS_ON_X, DECOYS_ON_Y = 2, 1
IRRELEVANT_ON = {"C": 2, "X": 0, "Y": 2}
# (longest - shortest) option token total, as a share of the mean of the three totals.
MAX_TOKEN_SPREAD = 0.10
TONE_SUMS = (-2, 0, 2)
# Each C tone sum may hold 1/3 +- 1/20 of the main templates (17-23 of 60): an imbalance that
# small lets a tone rule gain at most 5 points, half the cue audit's 10-point bar.
TONE_SHARE_TOLERANCE = (1, 20)


@dataclass(frozen=True)
class OptionRoles:
    """Which option is C (correct), X (two decoys) and Y (one decoy) in one template."""

    correct: str
    two_decoy: str
    one_decoy: str

    def label(self, option: str) -> str:
        return {self.correct: "C", self.two_decoy: "X", self.one_decoy: "Y"}[option]


def option_roles(t: Template) -> OptionRoles | None:
    """C, X and Y of ``t``, or None when its decoys are not three facts placed 2 + 1 on the
    two wrong options (the key's own checks then report what is wrong)."""
    if t.correct not in t.options or len(t.options) != 3:
        return None
    decoys = Counter(f.option for f in t.facts if f.role == "decoy")
    wrong = t.wrong_options
    placed = sorted(wrong, key=lambda o: -decoys[o])
    if set(decoys) - set(wrong) or [decoys[o] for o in placed] != [DECOYS_ON_X, DECOYS_ON_Y]:
        return None
    return OptionRoles(correct=t.correct, two_decoy=placed[0], one_decoy=placed[1])


def _key_holds(t: Template) -> bool:
    if t.correct not in t.options or any(f.option not in t.options for f in t.facts):
        return False
    if Counter(f.role for f in t.facts) != Counter(ROLE_COUNTS):
        return False
    scores = score_options(t.facts, t.options)
    return scores == {o: 2 if o == t.correct else 0 for o in t.options}


def option_tokens(t: Template) -> dict[str, int]:
    """Total tokens (``deliberation.tokens``) of the facts about each option."""
    totals = dict.fromkeys(t.options, 0)
    for f in t.facts:
        if f.option in totals:
            totals[f.option] += count_tokens(f.text)
    return totals


def check_design(t: Template, file: str) -> list[Violation]:
    """The per-template balance rules; empty until the format's 5/3/4 roles and the answer key
    (+2 / 0 / 0) hold, since they are defined relative to them and would only repeat a broken
    key. Token balance is checked once the placement gives every option 4 facts."""
    if not _key_holds(t):
        return []
    out: list[Violation] = []
    roles = option_roles(t)
    if roles is None:
        decoys = Counter(f.option for f in t.facts if f.role == "decoy")
        found = " + ".join(f"{decoys[o]} on {o!r}" for o in t.wrong_options)
        out.append(
            Violation(
                file,
                "facts",
                f"decoys must be placed {DECOYS_ON_X} + {DECOYS_ON_Y} on the two wrong "
                f"options; found {found}",
            )
        )
        return out
    placement = _check_irrelevant_placement(t, file, roles)
    out += placement + _check_rebuttal(t, file)
    if not placement:  # with 4 facts per option; otherwise the placement is the problem
        out += _check_token_balance(t, file)
    return out


def _check_irrelevant_placement(t: Template, file: str, roles: OptionRoles) -> list[Violation]:
    on = {o: [f.id for f in t.facts if f.role == "irrelevant" and f.option == o] for o in t.options}
    want = {o: IRRELEVANT_ON[roles.label(o)] for o in t.options}
    if all(len(on[o]) == want[o] for o in t.options):
        return []
    found = ", ".join(
        f"{roles.label(o)} {o!r} {len(on[o])} ({', '.join(on[o]) or 'none'})" for o in t.options
    )
    return [
        Violation(
            file,
            "facts",
            f"irrelevant facts must be placed 2 on the correct option {roles.correct!r}, 0 on "
            f"the two-decoy option {roles.two_decoy!r} and 2 on the one-decoy option "
            f"{roles.one_decoy!r}, so that every option is named by 4 facts; found {found}",
        )
    ]


def _check_rebuttal(t: Template, file: str) -> list[Violation]:
    out = []
    for decoy in (f for f in t.facts if f.role == "decoy"):
        rebuttals = [
            f.id
            for f in t.facts
            if f.role == "support" and f.option == decoy.option and f.criterion == decoy.criterion
        ]
        if rebuttals:
            out.append(
                Violation(
                    file,
                    f"{decoy.id}.criterion",
                    f"decoy and support fact {', '.join(rebuttals)} on {decoy.option!r} share "
                    f"the criterion {decoy.criterion!r}: the support fact can rebut the decoy; "
                    "put them on different criteria",
                )
            )
    return out


def token_spread(totals: dict[str, int]) -> float:
    """(longest - shortest) of the options' token totals, as a share of their mean."""
    mean = sum(totals.values()) / len(totals)
    return (max(totals.values()) - min(totals.values())) / mean if mean else 0.0


def _check_token_balance(t: Template, file: str) -> list[Violation]:
    totals = option_tokens(t)
    spread = token_spread(totals)
    if spread <= MAX_TOKEN_SPREAD:
        return []
    shown = ", ".join(f"{o} {n}" for o, n in totals.items())
    return [
        Violation(
            file,
            "facts",
            f"the options' total fact lengths differ by {spread:.1%} of their mean (limit "
            f"{MAX_TOKEN_SPREAD:.0%}), so length points at an option; tokens: {shown}",
        )
    ]


def correct_irrelevant_tone(t: Template) -> int:
    """Sum of the tones of the irrelevant facts on the correct option."""
    return sum(f.tone for f in t.facts if f.role == "irrelevant" and f.option == t.correct)


def tone_sum_counts(templates: Sequence[Template]) -> dict[int, int]:
    """How many of ``templates`` have each summed irrelevant tone on the correct option."""
    counts = Counter(correct_irrelevant_tone(t) for t in templates)
    return {s: counts[s] for s in sorted({*TONE_SUMS, *counts})}


def check_tone_balance(templates: Sequence[Template], where: str) -> list[Violation]:
    """Across the main templates, C's summed irrelevant tone is -2, 0 and +2 about equally
    often (each 1/3 +- 1/20 of them), so tone says nothing about which option is correct."""
    main = [t for t in templates if not t.pilot]
    n = len(main)
    if not n:
        return []
    counts = tone_sum_counts(main)
    num, den = TONE_SHARE_TOLERANCE
    # |count/n - 1/3| <= num/den, in integers: |3 den count - den n| <= 3 num n
    bad = {
        s: c
        for s, c in counts.items()
        if s not in TONE_SUMS or abs(3 * den * c - den * n) > 3 * num * n
    }
    if not bad:
        return []
    shown = ", ".join(f"{s:+d}: {c}" for s, c in counts.items())
    return [
        Violation(
            where,
            "bank.tone",
            f"the correct option's summed irrelevant tone must be -2, 0 and +2 each in a third "
            f"(+- {num}/{den}) of the {n} main templates; found {shown}",
        )
    ]
