"""Per-draw seeds: repeated draws of one prompt (``ChatRequest.sample``) need different seeds.

Every backend that forwards a seed (``vllm``, ``openai``) derives it here, so draw ``k`` of a
request seeded ``s`` gets the same effective seed whichever backend serves it.
"""

from __future__ import annotations

from deliberation.seeds import stable_seed

# Effective seeds stay below 2**31 so that every engine accepts them (some servers and
# libraries store seeds as signed 32-bit integers).
SEED_MODULUS = 2**31 - 1


def derive_seed(seed: int, sample: int) -> int:
    """Seed for draw ``sample`` of a request seeded ``seed``: draw 0 keeps ``seed`` itself,
    later draws get :func:`~deliberation.seeds.stable_seed` of ``(seed, sample)``."""
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {seed!r}")
    if isinstance(sample, bool) or not isinstance(sample, int) or sample < 0:
        raise ValueError(f"sample must be a non-negative int, got {sample!r}")
    if sample == 0:
        return seed
    return stable_seed("deliberation-draw", seed, sample) % SEED_MODULUS
