"""The one way this project turns names and numbers into a random seed.

``stable_seed(*parts)`` is the same in every process and on every platform (SHA-256 of the parts'
text, never Python's salted ``hash``), so a seed derived from e.g. ``("crossprofile-holders",
template_id, group, seed)`` reproduces exactly. Every seed derivation in the library uses it.

``derive_seed(seed, sample)`` gives repeated draws of one prompt (``ChatRequest.sample``) different
seeds: every backend that forwards a seed (``vllm``, ``openai``) derives it here, so draw ``k`` of a
request seeded ``s`` gets the same effective seed whichever backend serves it.
"""

from __future__ import annotations

import hashlib

# Parts are joined with the ASCII unit separator, which no name or number contains, so
# ("ab", "c") and ("a", "bc") give different seeds.
_SEPARATOR = "\x1f"

# Effective per-draw seeds stay below 2**31 so that every engine accepts them (some servers and
# libraries store seeds as signed 32-bit integers).
SEED_MODULUS = 2**31 - 1


def stable_seed(*parts: object) -> int:
    """A 64-bit seed (0 <= seed < 2**64) from ``parts``: the first 8 bytes, big-endian, of the
    SHA-256 of their ``str`` forms joined by the unit separator."""
    if not parts:
        raise ValueError("stable_seed needs at least one part")
    text = _SEPARATOR.join(str(part) for part in parts)
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


def derive_seed(seed: int, sample: int) -> int:
    """Seed for draw ``sample`` of a request seeded ``seed``: draw 0 keeps ``seed`` itself,
    later draws get :func:`stable_seed` of ``("deliberation-draw", seed, sample)`` below
    :data:`SEED_MODULUS`."""
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {seed!r}")
    if isinstance(sample, bool) or not isinstance(sample, int) or sample < 0:
        raise ValueError(f"sample must be a non-negative int, got {sample!r}")
    if sample == 0:
        return seed
    return stable_seed("deliberation-draw", seed, sample) % SEED_MODULUS
