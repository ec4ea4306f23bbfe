"""The one way this project turns names and numbers into a random seed.

``stable_seed(*parts)`` is the same in every process and on every platform (SHA-256 of the parts'
text, never Python's salted ``hash``), so a seed derived from e.g. ``("crossprofile-holders",
template_id, group, seed)`` reproduces exactly. Every seed derivation in the library uses it.
"""

from __future__ import annotations

import hashlib

# Parts are joined with the ASCII unit separator, which no name or number contains, so
# ("ab", "c") and ("a", "bc") give different seeds.
_SEPARATOR = "\x1f"


def stable_seed(*parts: object) -> int:
    """A 64-bit seed (0 <= seed < 2**64) from ``parts``: the first 8 bytes, big-endian, of the
    SHA-256 of their ``str`` forms joined by the unit separator."""
    if not parts:
        raise ValueError("stable_seed needs at least one part")
    text = _SEPARATOR.join(str(part) for part in parts)
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")
