"""Ownership variants: ids, order, and the even, seeded spread of private facts."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter

import numpy as np
import pytest

from deliberation.benchmarks.crossprofile.variants import (
    AGENTS,
    ALL_VARIANTS,
    CLASSIC,
    OwnershipVariant,
    group_rng,
    private_holders,
)


def test_eight_distinct_variants_in_fixed_order():
    ids = [v.id for v in ALL_VARIANTS]
    assert len(set(ids)) == 8
    assert ids[0] == "SS-DS-IS" and ids[-1] == "SP-DP-IP"
    # irrelevant ownership varies fastest, support slowest
    assert ids[:2] == ["SS-DS-IS", "SS-DS-IP"] and ids[4] == "SP-DS-IS"


def test_classic_cell_is_support_private_decoys_shared_irrelevant_private():
    assert CLASSIC.id == "SP-DS-IP"
    assert (CLASSIC.support, CLASSIC.decoy, CLASSIC.irrelevant) == ("private", "shared", "private")
    assert CLASSIC in ALL_VARIANTS


@pytest.mark.parametrize("variant", ALL_VARIANTS, ids=lambda v: v.id)
def test_parse_inverts_id(variant):
    assert OwnershipVariant.parse(variant.id) == variant


@pytest.mark.parametrize("bad", ["SP-DS", "SX-DS-IP", "DP-SS-IP", "sp-ds-ip", ""])
def test_parse_rejects_bad_ids(bad):
    with pytest.raises(ValueError, match="bad ownership variant id"):
        OwnershipVariant.parse(bad)


def test_variant_rejects_unknown_ownership():
    with pytest.raises(ValueError, match="support ownership"):
        OwnershipVariant("public", "shared", "shared")  # type: ignore[arg-type]


@pytest.mark.parametrize(("n", "counts"), [(5, [2, 1, 1, 1]), (3, [1, 1, 1]), (4, [1, 1, 1, 1])])
def test_private_facts_spread_as_evenly_as_possible(n, counts):
    for seed in range(50):
        holders = private_holders(n, np.random.default_rng(seed))
        assert len(holders) == n and set(holders) <= set(AGENTS)
        assert sorted(Counter(holders).values(), reverse=True) == counts


def test_private_assignment_varies_with_seed_and_covers_every_agent():
    """Over seeds, every agent is sometimes the one holding two support facts."""
    doubled = Counter()
    for seed in range(200):
        holders = private_holders(5, np.random.default_rng(seed))
        doubled[Counter(holders).most_common(1)[0][0]] += 1
    assert set(doubled) == set(AGENTS)
    assert min(doubled.values()) > 20


def test_group_rng_does_not_depend_on_python_hash_randomisation():
    code = (
        "from deliberation.benchmarks.crossprofile.variants import group_rng;"
        "print(group_rng('hiring-01', 'support', 7).integers(1 << 30))"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, "PYTHONHASHSEED": str(h)},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for h in (1, 2)
    }
    assert len(outputs) == 1
    assert outputs.pop().strip() == str(group_rng("hiring-01", "support", 7).integers(1 << 30))
