"""Synthetic multi-step word problems: the DHD bank the ``sim`` backend can reason about.

Each problem is a short word problem whose solution is a chain of named intermediate results
(``boxes = 6 x 12 = 72``; ``items = 72 x 18 = 1296``; ...). Because the chain is fixed by the
text, a statement in a message can be checked from the text alone: a *valid step* names an
intermediate result with its true value, an *invalid step* names it with another value. This is
the world knowledge of the sim's DHD behaviours (``experiments/dhd/sim.py``): it solves
a problem by reading its text with :func:`solve`, never from a side channel, so the same
mechanism serves problems the sim has never seen.

Problems are :class:`deliberation.benchmarks.problems.Item` records (benchmark ``synthetic``), so the DHD
protocol treats them exactly like the five real benchmarks; :func:`grade` is their evaluator.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from deliberation.benchmarks.problems.items import AnswerType, Item

BENCHMARK = "synthetic"

# A step statement as messages write it: "name = <anything without = ; or newline> = value" or
# "name = value". The value is the last integer of the statement.
_NUMBER = r"-?\d(?:[\d,]*\d)?"
_STEP = re.compile(rf"\b([a-z]+)\s*=\s*(?:(?:{_NUMBER}|[a-z]+|[ .x×*+/()-])*?=\s*)?({_NUMBER})\b")
_FINAL = re.compile(rf"final answer\s*[:=]?\s*\**\s*({_NUMBER})", re.IGNORECASE)


@dataclass(frozen=True)
class _Step:
    """One intermediate result: its ``name`` (as messages write it), how it is computed in
    words, and its true value."""

    name: str
    how: str
    value: int


@dataclass(frozen=True)
class _Family:
    name: str
    text: str  # str.format template over the slot names
    slots: tuple[str, ...]
    draw: Callable[[np.random.Generator], dict[str, int]]
    chain: Callable[[Mapping[str, int]], tuple[_Step, ...]]

    @property
    def pattern(self) -> re.Pattern[str]:
        escaped = re.escape(self.text)
        for slot in self.slots:
            escaped = escaped.replace(re.escape("{" + slot + "}"), rf"(?P<{slot}>\d+)")
        return re.compile(escaped)


def _draw_warehouse(rng: np.random.Generator) -> dict[str, int]:
    a, b, c, e = (int(rng.integers(lo, hi)) for lo, hi in ((3, 13), (4, 16), (6, 25), (4, 13)))
    items = a * b * c
    d = items % e + e * int(rng.integers(1, max(2, items // (4 * e))))
    return {"a": a, "b": b, "c": c, "d": d, "e": e}


def _chain_warehouse(v: Mapping[str, int]) -> tuple[_Step, ...]:
    boxes = v["a"] * v["b"]
    items = boxes * v["c"]
    kept = items - v["d"]
    return (
        _Step("boxes", f"{v['a']} x {v['b']}", boxes),
        _Step("items", f"boxes x {v['c']}", items),
        _Step("kept", f"items - {v['d']}", kept),
        _Step("cartons", f"kept / {v['e']}", kept // v["e"]),
    )


def _draw_trip(rng: np.random.Generator) -> dict[str, int]:
    a, b = int(rng.integers(2, 9)), int(rng.integers(30, 61))
    c = int(rng.integers(1, b // 2))
    return {"a": a, "b": b, "c": c, "d": int(rng.integers(8, 40)), "e": int(rng.integers(50, 300))}


def _chain_trip(v: Mapping[str, int]) -> tuple[_Step, ...]:
    seats = v["a"] * v["b"]
    students = seats - v["c"]
    fares = students * v["d"]
    return (
        _Step("seats", f"{v['a']} x {v['b']}", seats),
        _Step("students", f"seats - {v['c']}", students),
        _Step("fares", f"students x {v['d']}", fares),
        _Step("total", f"fares + {v['a']} x {v['e']}", fares + v["a"] * v["e"]),
    )


def _draw_garden(rng: np.random.Generator) -> dict[str, int]:
    a, b, c, d = (int(rng.integers(lo, hi)) for lo, hi in ((2, 9), (3, 11), (4, 16), (2, 9)))
    need = a * b * c * d
    return {"a": a, "b": b, "c": c, "d": d, "e": int(rng.integers(1, need // 2))}


def _chain_garden(v: Mapping[str, int]) -> tuple[_Step, ...]:
    rows = v["a"] * v["b"]
    plants = rows * v["c"]
    need = plants * v["d"]
    return (
        _Step("rows", f"{v['a']} x {v['b']}", rows),
        _Step("plants", f"rows x {v['c']}", plants),
        _Step("need", f"plants x {v['d']}", need),
        _Step("added", f"need - {v['e']}", need - v["e"]),
    )


_FAMILIES: tuple[_Family, ...] = (
    _Family(
        "warehouse",
        "A warehouse receives {a} crates, each holding {b} boxes of {c} items. Inspectors discard "
        "{d} damaged items, and the rest are packed {e} to a carton. How many cartons are filled?",
        ("a", "b", "c", "d", "e"),
        _draw_warehouse,
        _chain_warehouse,
    ),
    _Family(
        "trip",
        "A school books {a} buses with {b} seats each, and {c} seats stay empty. Each student pays "
        "{d} dollars, and the school adds {e} dollars per bus. How many dollars are paid in total?",
        ("a", "b", "c", "d", "e"),
        _draw_trip,
        _chain_trip,
    ),
    _Family(
        "garden",
        "A garden has {a} beds of {b} rows, with {c} plants in each row. Each plant needs {d} "
        "liters of water a week, and rain supplies {e} liters a week to the whole garden. How "
        "many liters must be added by hand each week?",
        ("a", "b", "c", "d", "e"),
        _draw_garden,
        _chain_garden,
    ),
)


def synthetic_bank(n: int, seed: int = 0) -> list[Item]:
    """``n`` problems drawn from the families in turn, reproducibly from ``seed``."""
    rng = np.random.default_rng([seed, 0x5D4D])
    items = []
    for index in range(n):
        family = _FAMILIES[index % len(_FAMILIES)]
        values = family.draw(rng)
        steps = family.chain(values)
        items.append(
            Item(
                id=f"synthetic:{family.name}:{index:04d}",
                benchmark=BENCHMARK,
                subject=family.name,
                question=family.text.format(**values),
                gold=str(steps[-1].value),
                answer_type=AnswerType.INTEGER,
                record=index,
            )
        )
    return items


def solve(text: str) -> tuple[_Step, ...] | None:
    """The solution chain of the synthetic problem stated in ``text`` (anywhere in it), or None
    when the text states no synthetic problem."""
    for family in _FAMILIES:
        match = family.pattern.search(text)
        if match is not None:
            return family.chain({k: int(v) for k, v in match.groupdict().items()})
    return None


def stated_steps(text: str, names: set[str] | frozenset[str]) -> list[tuple[str, int]]:
    """Every ``name = ... = value`` statement in ``text`` whose name is one of ``names``, in
    order (a name may be stated more than once)."""
    found = []
    for match in _STEP.finditer(text):
        name = match.group(1).lower()
        if name in names:
            found.append((name, int(match.group(2).replace(",", ""))))
    return found


def final_answer(reply: str) -> int | None:
    """The integer after the last ``Final answer:`` in a reply, or None."""
    matches = _FINAL.findall(reply)
    return int(matches[-1].replace(",", "")) if matches else None


def grade(item: Item, reply: str) -> float:
    """1.0 when the reply's final answer equals the gold integer, else 0.0."""
    answer = final_answer(reply)
    return float(answer is not None and answer == int(item.gold))
