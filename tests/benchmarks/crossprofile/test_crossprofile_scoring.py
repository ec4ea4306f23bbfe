"""Mechanical scoring, worked by hand on small fact sets."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import pytest

from deliberation.benchmarks.crossprofile.scoring import (
    irrelevant_tone,
    net_evidence_lead,
    option_tones,
    score_options,
    tone_lead,
)

OPTIONS = ("X", "Y", "Z")


@dataclass(frozen=True)
class F:
    role: str
    option: str
    polarity: int = 0
    tone: int = 0


S_X = F("support", "X", polarity=1)  # favours the key X
S_Y = F("support", "Y", polarity=-1)  # counts against competitor Y
D_Y = F("decoy", "Y", polarity=1)
D_Z = F("decoy", "Z", polarity=1)
I_GOOD_Z = F("irrelevant", "Z", tone=1, polarity=1)  # a stray polarity must still count 0
I_BAD_X = F("irrelevant", "X", tone=-1)


def test_scores_add_polarity_and_ignore_irrelevant_facts():
    # X: +1 +1 = 2; Y: -1 +1 = 0; Z: +1 (decoy) + 0 (irrelevant) = 1
    facts = [S_X, S_X, S_Y, D_Y, D_Z, I_GOOD_Z, I_BAD_X]
    assert score_options(facts) == {"X": 2, "Y": 0, "Z": 1}


def test_scores_list_every_given_option_even_without_facts():
    assert score_options([S_X], OPTIONS) == {"X": 1, "Y": 0, "Z": 0}
    assert score_options([], OPTIONS) == {"X": 0, "Y": 0, "Z": 0}


@pytest.mark.parametrize(
    ("facts", "lead"),
    [
        ([], 0),  # all zero
        ([S_X, S_X], 2),  # X 2, best competitor 0
        ([D_Y], -1),  # X 0, Y 1
        ([D_Y, D_Y, S_Y], -1),  # X 0, Y 2 - 1 = 1
        ([S_X, D_Y, D_Z, D_Z], -1),  # X 1, Z 2
        ([S_X, S_X, S_X, D_Z, S_Y], 2),  # X 3, Y -1, Z 1
        ([I_GOOD_Z, I_BAD_X], 0),  # irrelevant facts never move the lead
    ],
)
def test_net_evidence_lead_is_key_minus_best_competitor(facts, lead):
    assert net_evidence_lead(facts, "X", OPTIONS) == lead


def test_net_evidence_lead_rejects_a_key_outside_the_options():
    with pytest.raises(ValueError, match="not among"):
        net_evidence_lead([S_X], "W", OPTIONS)


def test_irrelevant_tone_sums_tones_of_irrelevant_facts_only():
    assert irrelevant_tone([I_GOOD_Z, I_BAD_X, I_BAD_X]) == -1
    assert irrelevant_tone([S_X, D_Y, F("support", "X", polarity=1, tone=1)]) == 0
    assert irrelevant_tone([]) == 0


def test_tone_lead_is_key_tone_minus_the_best_sounding_competitor():
    good_x = F("irrelevant", "X", tone=1)
    bad_y = F("irrelevant", "Y", tone=-1)
    assert option_tones([I_GOOD_Z, I_BAD_X, S_X], OPTIONS) == {"X": -1, "Y": 0, "Z": 1}
    assert tone_lead([I_GOOD_Z, I_BAD_X], "X", OPTIONS) == -2  # -1 on X, +1 on Z
    assert tone_lead([good_x, bad_y], "X", OPTIONS) == 1  # Z (0) sounds best among competitors
    assert tone_lead([], "X", OPTIONS) == 0
    # tones that cancel in the unsigned sum still pull: +1 on a competitor, -1 on the key
    assert (
        irrelevant_tone([I_GOOD_Z, I_BAD_X]) == 0
        and tone_lead([I_GOOD_Z, I_BAD_X], "X", OPTIONS) == -2
    )
    # evidence facts carry no tone, whatever their polarity
    assert tone_lead([S_X, F("support", "X", polarity=1, tone=1)], "X", OPTIONS) == 0
    with pytest.raises(ValueError, match="not among"):
        tone_lead([], "W", OPTIONS)


def _decision(task, answer):
    """The fields of a memory-pipeline decision that the results row reads."""
    from types import SimpleNamespace

    memory = SimpleNamespace(fact_ids=[f.id for f in task.facts], summary=None, kept_tokens=1)
    cell = SimpleNamespace(policy="all", budget=None, item_limit=None)
    return SimpleNamespace(task=task, answer=answer, memory=memory, cell=cell, tags="keep",
                           failed=False, input_failed=False, budget_tokens=None, error="",
                           key="k")  # fmt: skip


def test_chose_decoy_is_empty_where_the_template_has_no_decoy_option():
    """Key in slot P: answering the two-decoy option is a decoy choice; key in slot E the
    decoys favour both wrong options one each, so the row says nothing (not 0)."""
    from helpers.crossprofile_banks import v5_template

    from deliberation.benchmarks.crossprofile import CLASSIC, derive_task, design
    from deliberation.benchmarks.crossprofile.memory import crossprofile_rows

    rows = {}
    for slot in "PE":
        template = v5_template("hiring-01", "hiring", pilot=False, tag="x", slot=slot)
        task = derive_task(template, CLASSIC)
        in_e = next(o for o, s in design.option_slots(template).items() if s == "E")
        wrong = in_e if slot == "P" else template.wrong_options[0]
        rows[slot] = crossprofile_rows([_decision(task, wrong)]).iloc[0]
    assert rows["P"]["chose_decoy"] == 1 and rows["P"]["correct"] == 0
    assert pd.isna(rows["E"]["chose_decoy"]) and rows["E"]["correct"] == 0
