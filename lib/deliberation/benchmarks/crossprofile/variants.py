"""Ownership variants: each role group (support, decoy, irrelevant) is independently *shared*
(all four agents hold every fact of the group) or *private* (each fact held by exactly one
agent, spread as evenly as possible). 2^3 = 8 variants per template.

A variant's id spells the three choices, e.g. ``SP-DS-IP`` = support private, decoys shared,
irrelevant private (the classic hidden-profile cell).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np

from deliberation.seeds import stable_seed

_Ownership = Literal["shared", "private"]
OWNERSHIP_LEVELS: tuple[str, ...] = get_args(_Ownership)
AGENTS: tuple[str, ...] = ("A1", "A2", "A3", "A4")
GROUPS: tuple[str, ...] = ("support", "decoy", "irrelevant")
_LETTER = {"shared": "S", "private": "P"}
_WORD = {letter: word for word, letter in _LETTER.items()}


@dataclass(frozen=True)
class OwnershipVariant:
    """Who holds each role group: ``"shared"`` or ``"private"`` for support, decoy, irrelevant."""

    support: _Ownership
    decoy: _Ownership
    irrelevant: _Ownership

    def __post_init__(self) -> None:
        for group in GROUPS:
            if getattr(self, group) not in _LETTER:
                raise ValueError(f"{group} ownership must be 'shared' or 'private'")

    @property
    def id(self) -> str:
        """``SP-DS-IP`` style: role initial, then S(hared) or P(rivate), for each group."""
        return "-".join(f"{g[0].upper()}{_LETTER[getattr(self, g)]}" for g in GROUPS)

    def ownership(self, role: str) -> _Ownership:
        return getattr(self, role)

    @classmethod
    def parse(cls, variant_id: str) -> OwnershipVariant:
        """Inverse of :attr:`id`; raises ValueError naming the bad id."""
        parts = variant_id.split("-")
        ok = len(parts) == 3 and all(
            len(p) == 2 and p[0] == g[0].upper() and p[1] in _WORD
            for p, g in zip(parts, GROUPS, strict=False)
        )
        if not ok:
            raise ValueError(
                f"bad ownership variant id {variant_id!r}; expected e.g. 'SP-DS-IP' "
                "(S/D/I each followed by S for shared or P for private)"
            )
        return cls(*(_WORD[p[1]] for p in parts))  # type: ignore[arg-type]


# Fixed order: support, then decoy, then irrelevant, shared before private (SS-DS-IS first).
ALL_VARIANTS: tuple[OwnershipVariant, ...] = tuple(
    OwnershipVariant(*combo)  # type: ignore[arg-type]
    for combo in itertools.product(OWNERSHIP_LEVELS, repeat=len(GROUPS))
)
CLASSIC = OwnershipVariant(support="private", decoy="shared", irrelevant="private")


def private_holders(n_facts: int, rng: np.random.Generator) -> tuple[str, ...]:
    """One holder per fact, spread as evenly as the count allows (5 facts -> 2,1,1,1).

    Which agents get the extra facts and which fact goes to whom are both drawn from ``rng``.
    """
    order = rng.permutation(len(AGENTS))
    slots = [AGENTS[order[k % len(AGENTS)]] for k in range(n_facts)]
    placement = rng.permutation(n_facts)
    holders = [""] * n_facts
    for slot, fact_index in zip(slots, placement, strict=True):
        holders[fact_index] = slot
    return tuple(holders)


def group_rng(template_id: str, group: str, seed: int) -> np.random.Generator:
    """The generator for one template's private assignment of one role group.

    It depends on (template, group, seed) but not on the rest of the variant, so a group that
    is private in two variants has the same holders in both: variants differ only in the
    groups whose ownership differs (a paired design for the contrasts).
    """
    return np.random.default_rng(stable_seed("crossprofile-holders", template_id, group, seed))
