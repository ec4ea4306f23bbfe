"""The bank-v5 design (issue 42): one layout for every template, the key's place in it
counterbalanced across the bank, so that no reader of structure finds the key. Why, with the
numbers, is in ``templates/README.md``.

**The principle.** For every role-blind structural signature of a template (the multiset of
per-option statistics a reader can see without knowing the key: how many facts name each
option, how many are on topic and off topic, how the off-topic ones sound, ...), the key
occupies each slot of the signature as often as that slot's share of the options.

**The layout.** Each option's (on-topic facts, off-topic facts, summed tone of its off-topic
facts) is one of three *slots*, one option each:

- **E** (4, 0, 0): evidence only, four on-topic facts;
- **P** (2, 2, +2): two on-topic facts and two off-topic facts that sound good;
- **N** (2, 2, -2): two on-topic facts and two off-topic facts that sound bad.

Every option is named by four facts, and the signature is the same in every template, so only
the key's slot could leak; the bank puts the key in E, P and N in a third of the main templates
each (and of each domain's, and of the templates listing the slots in each order, as evenly as
the counts allow). What the format's scores (+2 / 0 / 0, every fact +-1 or 0) then force:

- key in E: the key has 3 support facts (+1) and 1 decoy against it (-1); each wrong option one
  decoy (+1) and one support fact (-1). No single wrong option is "the decoy option".
- key in P or N: the key has 2 support facts (+1); the wrong option in E two decoys and two
  support facts (-1) (it is the decoy option); the other wrong option one of each.

Per template (checked once the 5/3/4 roles and the answer key hold, since the slots are defined
relative to them): the layout, and no decoy sharing a criterion with a support fact on its
option (a support fact there would rebut the decoy). Bank v4's layouts were accepted with a
warning while issue 42 rewrote the bank (:data:`V4_LAYOUT_ACCEPTED`, now False). Over the
bank (:func:`check_bank_design`, with the composition): the counterbalance above, for the main
templates and for the pilots apart.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

from deliberation.benchmarks.crossprofile.errors import Violation
from deliberation.benchmarks.crossprofile.schema import ROLE_COUNTS, Template
from deliberation.benchmarks.crossprofile.scoring import score_options

# Per option: (on-topic facts, off-topic facts, summed tone of the off-topic facts).
SLOTS: dict[str, tuple[int, int, int]] = {"E": (4, 0, 0), "P": (2, 2, 2), "N": (2, 2, -2)}
SLOT_NAMES = {
    "E": "evidence only",
    "P": "off-topic facts sound good",
    "N": "off-topic facts sound bad",
}
# Bank v4 (issue 32) placed decoys 2 + 1 and its irrelevant facts in four layouts (C/X/Y).
# Accepted, with a warning, while issue 42 rewrote the bank; every template is now in the
# bank-v5 layout, so a v4 layout fails like any other.
V4_LAYOUT_ACCEPTED = False
V4_LAYOUTS = ((0, 3, 1), (1, 3, 0), (2, 0, 2), (3, 0, 1))


def option_profile(t: Template, option: str) -> tuple[int, int, int]:
    """(on-topic facts, off-topic facts, summed off-topic tone) of ``option``: what a reader
    who knows which facts are on topic and how trivia sounds, but not the key, sees of it."""
    facts = [f for f in t.facts if f.option == option]
    off = [f for f in facts if f.role == "irrelevant"]
    return (len(facts) - len(off), len(off), sum(f.tone for f in off))


def option_slots(t: Template) -> dict[str, str] | None:
    """Every option's slot (E, P, N), or None when the options do not fill the three slots
    one each."""
    by_profile = {profile: slot for slot, profile in SLOTS.items()}
    slots = {o: by_profile.get(option_profile(t, o)) for o in t.options}
    if len(t.options) != len(SLOTS) or sorted(map(str, slots.values())) != sorted(SLOTS):
        return None
    return slots


def key_slot(t: Template) -> str | None:
    """The key's slot (E, P or N), None when the template is not in the v5 layout."""
    slots = option_slots(t)
    return None if slots is None or t.correct not in slots else slots[t.correct]


def slot_order(t: Template) -> str | None:
    """The slots in the order ``options`` lists them, e.g. ``"PEN"`` (None off the layout)."""
    slots = option_slots(t)
    return None if slots is None else "".join(slots[o] for o in t.options)


def decoy_option(facts: Sequence, correct: str) -> str | None:
    """The wrong option the decoys favour most, if one does (key in P or N: the option in E
    with two decoys); None when they favour the two wrong options equally (key in E)."""
    favoured = Counter(f.option for f in facts if f.role == "decoy" and f.option != correct)
    ranked = favoured.most_common(2)
    if not ranked or (len(ranked) == 2 and ranked[0][1] == ranked[1][1]):
        return None
    return ranked[0][0]


def key_holds(t: Template) -> bool:
    """Whether the 5/3/4 roles and the +2 / 0 / 0 answer key hold (the design is defined on them)."""
    if t.correct not in t.options or any(f.option not in t.options for f in t.facts):
        return False
    if Counter(f.role for f in t.facts) != Counter(ROLE_COUNTS):
        return False
    scores = score_options(t.facts, t.options)
    return scores == {o: 2 if o == t.correct else 0 for o in t.options}


def v4_layout(t: Template) -> tuple[int, int, int] | None:
    """Bank v4's irrelevant layout (facts on C, X, Y; X the two-decoy option), None if the
    template is not a bank-v4 template."""
    decoys = Counter(f.option for f in t.facts if f.role == "decoy")
    wrong = sorted(t.wrong_options, key=lambda o: -decoys[o])
    if len(wrong) != 2 or set(decoys) - set(wrong) or [decoys[o] for o in wrong] != [2, 1]:
        return None
    on = Counter(f.option for f in t.facts if f.role == "irrelevant")
    layout = (on[t.correct], on[wrong[0]], on[wrong[1]])
    return layout if layout in V4_LAYOUTS else None


def check_design(t: Template, file: str) -> list[Violation]:
    """The per-template rules; empty until the 5/3/4 roles and the answer key (+2 / 0 / 0)
    hold, since the slots are defined relative to them and would only repeat a broken key."""
    if not key_holds(t):
        return []
    out = _check_rebuttal(t, file)
    if option_slots(t) is None and not (V4_LAYOUT_ACCEPTED and v4_layout(t) is not None):
        found = ", ".join(f"{o} {_profile_name(option_profile(t, o))}" for o in t.options)
        out.append(
            Violation(
                file,
                "facts",
                "bank-v5 layout: per option (on-topic facts, off-topic facts, summed off-topic "
                "tone) must be (4, 0, 0), (2, 2, +2) and (2, 2, -2), one option each; found "
                f"{found}",
            )
        )
    return out


def layout_warnings(t: Template, file: str) -> list[Violation]:
    """A bank-v4 template accepted during the rewrite is reported, so it is not forgotten."""
    if V4_LAYOUT_ACCEPTED and key_holds(t) and option_slots(t) is None and v4_layout(t):
        c, x, y = v4_layout(t)
        return [
            Violation(
                file,
                "facts",
                f"bank-v4 layout (irrelevant facts C/X/Y {c}/{x}/{y}): rewrite it to the bank-v5 "
                "layout (templates/README.md)",
            )
        ]
    return []


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


# ---------------------------------------------------------------- the bank's counterbalance


@dataclass(frozen=True)
class Counterbalance:
    """One grouping of the bank whose key slots must be as even as the counts allow: within
    every group of m templates, the key sits in each slot floor(m/3) or ceil(m/3) times."""

    name: str
    field: str  # where a violation points, e.g. "bank.key_slot"
    group: Callable[[Template], Hashable]


COUNTERBALANCES: tuple[Counterbalance, ...] = (
    Counterbalance("all main templates", "bank.key_slot", lambda t: "all"),
    Counterbalance("domain", "bank.key_slot_by_domain", lambda t: t.domain),
    Counterbalance("listed slot order", "bank.key_slot_by_order", slot_order),
)


def key_slot_counts(
    templates: Sequence[Template], group: Callable[[Template], Hashable]
) -> dict[Hashable, Counter]:
    """Per group, how many templates have the key in each slot (v5 templates only)."""
    out: dict[Hashable, Counter] = defaultdict(Counter)
    for t in templates:
        if (slot := key_slot(t)) is not None:
            out[group(t)][slot] += 1
    return {g: Counter({s: c[s] for s in SLOTS}) for g, c in out.items()}


def _uneven(counts: Counter) -> bool:
    m = sum(counts.values())
    low, high = m // len(SLOTS), -(-m // len(SLOTS))
    return any(not low <= counts[s] <= high for s in SLOTS)


def check_bank_design(templates: Sequence[Template], where: str) -> list[Violation]:
    """Every template in the v5 layout, and the key's slot counterbalanced: over the main
    templates, within each domain and within each listed slot order; over the pilots, and
    within each listed order of theirs."""
    out = []
    v4 = sorted(t.id for t in templates if key_holds(t) and option_slots(t) is None)
    if v4:
        shown = ", ".join(v4[:5]) + (f" and {len(v4) - 5} more" if len(v4) > 5 else "")
        out.append(
            Violation(
                where,
                "bank.layout",
                f"{len(v4)} templates are not in the bank-v5 layout ({shown}); the key's slot "
                "cannot be counterbalanced until all are",
            )
        )
        return out
    for pilot, kind in ((False, "main templates"), (True, "pilot templates")):
        chosen = [t for t in templates if t.pilot == pilot]
        for rule in COUNTERBALANCES:
            if pilot and rule.name == "domain":
                continue  # one pilot per domain: nothing to balance
            for group, counts in sorted(key_slot_counts(chosen, rule.group).items(), key=str):
                if _uneven(counts):
                    shown = ", ".join(f"{s} {counts[s]}" for s in SLOTS)
                    scope = kind if rule.name.startswith("all") else f"{kind}, {rule.name} {group}"
                    out.append(
                        Violation(
                            where,
                            rule.field + (".pilot" if pilot else ""),
                            f"the key's slot in the {scope}: {shown}; each must be "
                            f"{sum(counts.values()) // 3} or {-(-sum(counts.values()) // 3)} "
                            "(a third, as evenly as the count allows)",
                        )
                    )
    return out


def _profile_name(profile: tuple[int, ...]) -> str:
    slot = {v: k for k, v in SLOTS.items()}.get(profile)
    shown = (
        "(" + ", ".join(f"{v:+d}" if i == 2 and v else str(v) for i, v in enumerate(profile)) + ")"
    )
    return f"{slot} {shown}" if slot else shown


def signature_table(
    templates: Sequence[Template],
    profile: Callable[[Template, str], tuple[int, ...]] = option_profile,
) -> list[dict]:
    """The bank's signature table, one row per (main or pilot, signature, slot): how many
    templates have the signature, how many options of each fill the slot, and how many put the
    key there against how many would if the key's slot were drawn at random (templates x
    options in the slot / options). ``profile`` is the per-option statistic (default: on-topic
    facts, off-topic facts, summed off-topic tone)."""
    groups: dict[tuple, list[Template]] = defaultdict(list)
    for t in templates:
        if key_holds(t):
            signature = tuple(sorted((profile(t, o) for o in t.options), reverse=True))
            groups[("pilot" if t.pilot else "main", signature)].append(t)
    rows = []
    for (kind, signature), members in sorted(
        groups.items(), key=lambda kv: (kv[0][0], -len(kv[1]))
    ):
        for value, multiplicity in sorted(Counter(signature).items(), reverse=True):
            rows.append(
                {
                    "templates": kind,
                    "signature": " / ".join(_profile_name(v) for v in signature),
                    "n": len(members),
                    "slot": _profile_name(value),
                    "options in slot": multiplicity,
                    "key here": sum(profile(t, t.correct) == value for t in members),
                    "if drawn at random": round(len(members) * multiplicity / len(signature), 1),
                }
            )
    return rows
