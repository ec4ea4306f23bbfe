"""Sim behaviours for CrossProfile: ``crossprofile.decision``, ``.relevance``, ``.balance``,
``.summary`` (mechanism and parameters: :mod:`.mechanism`).

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

from deliberation.experiments.memory.sim.mechanism import (
    Reading,
    decide,
    label_balance,
    label_relevance,
    order_free_request,
    summarize,
)
from deliberation.inference.sim_registry import SimAnswer, SimContext, sim_behaviour


def normalize(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


@cache
def world_knowledge(bank: Path | None = None) -> dict[str, Reading]:
    """Fact text -> reading, for every template in ``bank`` (default: the shipped bank)."""
    from deliberation.crossprofile.loader import bank_dir, load_template, template_files

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


@sim_behaviour("crossprofile.decision", seed_view=order_free_request)
def crossprofile_decision(context: SimContext) -> SimAnswer:
    return decide(context, read_fact)


@sim_behaviour("crossprofile.relevance", seed_view=order_free_request)
def crossprofile_relevance(context: SimContext) -> SimAnswer:
    return label_relevance(context, read_fact)


@sim_behaviour("crossprofile.balance", seed_view=order_free_request)
def crossprofile_balance(context: SimContext) -> SimAnswer:
    return label_balance(context, read_fact)


@sim_behaviour("crossprofile.summary", seed_view=order_free_request)
def crossprofile_summary(context: SimContext) -> SimAnswer:
    return summarize(context)
