"""CrossProfile's sim: how the sim reads a statement (:func:`read_fact`), which the memory
experiment's sim behaviours (``crossprofile.decision``, ``.relevance``, ``.balance``,
``.summary``; mechanism and parameters: :mod:`deliberation.experiments.memory.sim.mechanism`)
and the natural discussions' use.

World knowledge is the template bank: every fact text maps to the option it names, its
polarity on the criteria (support and decoy facts) or its tone (irrelevant facts). The sim
never reads a fact's role or a template's key: a decoy reads as what it is, true evidence for
a wrong option. Texts are matched after collapsing white space; a line that matches no fact
(e.g. a summary sentence cut mid-way) adds nothing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache
from pathlib import Path

from deliberation.benchmarks.memory_benchmark import Reading


def normalize(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


@cache
def world_knowledge(bank: Path | None = None) -> dict[str, Reading]:
    """Fact text -> reading, for every template in ``bank`` (default: the shipped bank)."""
    from deliberation.benchmarks.crossprofile.loader import bank_dir, load_template, template_files

    knowledge: dict[str, Reading] = {}
    for path in template_files([bank or bank_dir()]):
        for fact in load_template(path).facts:
            knowledge[normalize(fact.text)] = Reading(
                option=fact.option,
                polarity=int(getattr(fact, "polarity", 0)),
                tone=int(getattr(fact, "tone", 0)),
            )
    return knowledge


def read_fact(text: str, options: Sequence[str]) -> Reading | None:
    return world_knowledge().get(normalize(text))
