"""The bank-v3 balance design (issues 10 and 23): the rules that keep a template's structure
from giving its answer away. Why each rule exists, with the numbers, is in ``templates/README.md``.

Names: **C** the correct option, **X** the wrong option with two decoys, **Y** the wrong
option with one decoy. The format's score rule (+2 / 0 / 0) with decoys placed 2 + 1 forces
support facts 2 on C (+1), 2 on X (-1), 1 on Y (-1), so the evidence names C 2 times, X 4 and
Y 2. Bank v2 then put the irrelevant facts 2 on C, 0 on X, 2 on Y in every template, so every
option was named 4 times but the option without off-topic facts was never correct, and a text
classifier found the key by counting off-topic facts. Bank v3 varies the irrelevant placement
across templates (layouts C/X/Y 0/3/1, 1/3/0, 2/0/2, 3/0/1), so that no count of facts, of
names or of off-topic facts points at C.

Per template (checked only once the answer key holds, since C, X and Y are defined by it):
decoys 2 + 1; a decoy and a support fact on the same option never share a criterion (a support
fact there would rebut the decoy). Over the bank's main templates (:func:`check_bank_design`):
C carries a third of the irrelevant facts; the option with the most (fewest) irrelevant facts
is C in a third of the templates; the option whose irrelevant facts sum to the best (worst)
tone is C in a third of them (ties count 1/k, as in the cue audit).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from deliberation.benchmarks.crossprofile.errors import Violation
from deliberation.benchmarks.crossprofile.schema import ROLE_COUNTS, Template
from deliberation.benchmarks.crossprofile.scoring import score_options

DECOYS_ON_X, DECOYS_ON_Y = 2, 1
# Each bank-level share may be 1/3 +- this: an imbalance that small lets a rule built on it
# gain at most 5 points, half the cue audit's 10-point bar.
_SHARE_TOLERANCE = 1 / 20
# The option with the most / fewest irrelevant facts may be C in 1/3 +- this: a role-blind
# reader sees these counts only through the texts, so the bar is the audit's own.
_COUNT_TOLERANCE = 1 / 10


@dataclass(frozen=True)
class _OptionRoles:
    """Which option is C (correct), X (two decoys) and Y (one decoy) in one template."""

    correct: str
    two_decoy: str
    one_decoy: str

    def label(self, option: str) -> str:
        return {self.correct: "C", self.two_decoy: "X", self.one_decoy: "Y"}[option]


def _option_roles(t: Template) -> _OptionRoles | None:
    """C, X and Y of ``t``, or None when its decoys are not three facts placed 2 + 1 on the
    two wrong options (the key's own checks then report what is wrong)."""
    if t.correct not in t.options or len(t.options) != 3:
        return None
    decoys = Counter(f.option for f in t.facts if f.role == "decoy")
    wrong = t.wrong_options
    placed = sorted(wrong, key=lambda o: -decoys[o])
    if set(decoys) - set(wrong) or [decoys[o] for o in placed] != [DECOYS_ON_X, DECOYS_ON_Y]:
        return None
    return _OptionRoles(correct=t.correct, two_decoy=placed[0], one_decoy=placed[1])


def _key_holds(t: Template) -> bool:
    if t.correct not in t.options or any(f.option not in t.options for f in t.facts):
        return False
    if Counter(f.role for f in t.facts) != Counter(ROLE_COUNTS):
        return False
    scores = score_options(t.facts, t.options)
    return scores == {o: 2 if o == t.correct else 0 for o in t.options}


def check_design(t: Template, file: str) -> list[Violation]:
    """The per-template balance rules; empty until the format's 5/3/4 roles and the answer key
    (+2 / 0 / 0) hold, since they are defined relative to them and would only repeat a broken
    key."""
    if not _key_holds(t):
        return []
    if _option_roles(t) is None:
        decoys = Counter(f.option for f in t.facts if f.role == "decoy")
        found = " + ".join(f"{decoys[o]} on {o!r}" for o in t.wrong_options)
        return [
            Violation(
                file,
                "facts",
                f"decoys must be placed {DECOYS_ON_X} + {DECOYS_ON_Y} on the two wrong "
                f"options; found {found}",
            )
        ]
    return _check_rebuttal(t, file)


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


def _irrelevant_layout(t: Template) -> tuple[int, int, int] | None:
    """How many irrelevant facts sit on C, X and Y (None when C, X, Y are undefined)."""
    roles = _option_roles(t)
    if roles is None:
        return None
    on = Counter(f.option for f in t.facts if f.role == "irrelevant")
    return (on[roles.correct], on[roles.two_decoy], on[roles.one_decoy])


def layout_counts(templates: Sequence[Template]) -> dict[tuple[int, int, int], int]:
    """How many of ``templates`` use each irrelevant layout (C, X, Y)."""
    counts = Counter(x for t in templates if (x := _irrelevant_layout(t)) is not None)
    return dict(sorted(counts.items()))


def _credit(values: dict[str, float], correct: str) -> float:
    top = max(values.values())
    tied = [o for o, v in values.items() if v == top]
    return 1 / len(tied) if correct in tied else 0.0


def _irrelevant_sum(t: Template, value) -> dict[str, float]:
    out = dict.fromkeys(t.options, 0.0)
    for f in t.facts:
        if f.role == "irrelevant" and f.option in out:
            out[f.option] += value(f)
    return out


def bank_design_shares(templates: Sequence[Template]) -> dict[str, float]:
    """The bank-level shares :func:`check_bank_design` bounds (main templates whose key holds)."""
    main = [t for t in templates if not t.pilot and _key_holds(t)]
    if not main:
        return {}
    n = len(main)
    counts = [_irrelevant_sum(t, lambda f: 1) for t in main]
    tones = [_irrelevant_sum(t, lambda f: f.tone) for t in main]
    neg = lambda d: {o: -v for o, v in d.items()}  # noqa: E731
    total = sum(sum(c.values()) for c in counts)
    return {
        "irrelevant facts on the correct option": sum(
            c[t.correct] for c, t in zip(counts, main, strict=True)
        )
        / total,
        "most irrelevant facts on the correct option": sum(
            _credit(c, t.correct) for c, t in zip(counts, main, strict=True)
        )
        / n,
        "fewest irrelevant facts on the correct option": sum(
            _credit(neg(c), t.correct) for c, t in zip(counts, main, strict=True)
        )
        / n,
        "best irrelevant tone on the correct option": sum(
            _credit(s, t.correct) for s, t in zip(tones, main, strict=True)
        )
        / n,
        "worst irrelevant tone on the correct option": sum(
            _credit(neg(s), t.correct) for s, t in zip(tones, main, strict=True)
        )
        / n,
    }


def check_bank_design(templates: Sequence[Template], where: str) -> list[Violation]:
    """Across the main templates, the correct option carries a third of the irrelevant facts,
    is the option with the most (fewest) of them in a third of the templates, and the option
    whose irrelevant facts sound best (worst) in a third: neither the placement nor the tone
    of off-topic facts says which option is correct."""
    out = []
    for name, share in bank_design_shares(templates).items():
        tolerance = _COUNT_TOLERANCE if name.startswith(("most", "fewest")) else _SHARE_TOLERANCE
        if abs(share - 1 / 3) > tolerance + 1e-12:
            out.append(
                Violation(
                    where,
                    "bank.layout" if "facts" in name else "bank.tone",
                    f"{name}: {share:.1%} of the main templates; must be 1/3 +- "
                    f"{tolerance:.0%} so that it says nothing about the key",
                )
            )
    return out


def _correct_irrelevant_tone(t: Template) -> int:
    """Sum of the tones of the irrelevant facts on the correct option."""
    return sum(f.tone for f in t.facts if f.role == "irrelevant" and f.option == t.correct)


def tone_sum_counts(templates: Sequence[Template]) -> dict[int, int]:
    """How many of ``templates`` have each summed irrelevant tone on the correct option."""
    counts = Counter(_correct_irrelevant_tone(t) for t in templates)
    return dict(sorted(counts.items()))
