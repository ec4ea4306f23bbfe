"""One seed derivation: stable_seed is SHA-256 of the parts, independent of the process."""

from __future__ import annotations

import hashlib
import subprocess
import sys

import pytest

from deliberation.seeds import stable_seed


def test_stable_seed_is_sha256_of_the_separated_parts():
    expected = int.from_bytes(hashlib.sha256(b"a\x1f1\x1fb").digest()[:8], "big")
    assert stable_seed("a", 1, "b") == expected
    assert 0 <= stable_seed("x") < 2**64


def test_part_boundaries_and_values_matter():
    assert stable_seed("ab", "c") != stable_seed("a", "bc")
    assert stable_seed("a", 1, "b") != stable_seed("a", 2, "b")


def test_stable_seed_is_the_same_in_a_fresh_interpreter_with_another_hash_seed():
    code = "from deliberation.seeds import stable_seed; print(stable_seed('t', 7, ('x', 1)))"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**__import__("os").environ, "PYTHONHASHSEED": "123"},
    ).stdout
    assert int(out) == stable_seed("t", 7, ("x", 1))


def test_no_parts_is_an_error():
    with pytest.raises(ValueError):
        stable_seed()


def test_no_other_module_hashes_its_own_seeds():
    """Seeds come from stable_seed; sha256 elsewhere is for content hashes only."""
    from pathlib import Path

    import deliberation

    root = Path(deliberation.__file__).parent
    offenders = []
    for path in root.rglob("*.py"):
        text = path.read_text()
        if path.name == "seeds.py" and path.parent == root:
            continue
        if "sha256(" in text and ".digest()" in text and "from_bytes" in text:
            offenders.append(str(path.relative_to(root)))
    assert offenders == []
