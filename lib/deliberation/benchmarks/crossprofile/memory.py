"""CrossProfile as a memory benchmark: tasks of the verified template bank (each template under
its 8 ownership variants), true roles known, rows scored by net evidence lead and tone."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import pandas as pd

from deliberation.benchmarks.crossprofile import design
from deliberation.benchmarks.crossprofile.schema import Template
from deliberation.benchmarks.crossprofile.scoring import (
    irrelevant_tone,
    net_evidence_lead,
    tone_lead,
)
from deliberation.benchmarks.crossprofile.sim import read_fact
from deliberation.benchmarks.crossprofile.tasks import OptionOrder, Task
from deliberation.benchmarks.crossprofile.variants import OwnershipVariant
from deliberation.benchmarks.memory_benchmark import common_row, typed_frame
from deliberation.profiles.profile import check_limit

TemplateSet = Literal["main", "pilot", "all"]

_CROSSPROFILE_POLICIES: tuple[str, ...] = (
    "R1", "B4", "Random", "B3", "R1-rel", "oracle-rel", "balance", "oracle-balance",
    "all", "empty", "private-only", "shared-only",
)  # fmt: skip

CROSSPROFILE_COLUMNS: dict[str, str] = {  # the results frame's columns, in order, and meanings
    "task": "task id, `<template>/<variant>`",
    "template": "template id (the bootstrap's cluster)",
    "domain": "decision domain of the template",
    "pilot": "1 for the 10 pilot templates, else 0",
    "variant": "ownership variant, e.g. `SP-DS-IP`",
    "support": "ownership of the support facts: `shared` or `private`",
    "decoy": "ownership of the decoy facts",
    "irrelevant": "ownership of the irrelevant facts",
    "policy": "memory policy (`R1`, `B4`, `Random`, `B3`, `R1-rel`, ...)",
    "budget": "budget fraction r; empty for references and fixed-count rows",
    "item_limit": "7 for fixed-count rows, else empty",
    "tags": "holder-tag mode: `keep`, `remove` or `shuffle`",
    "kept_facts": "fact ids in memory order joined by `;` (empty for B3: free text)",
    "kept_tokens": "statement tokens kept (B3: tokens of the summary after the cut)",
    "budget_tokens": "floor(r x all statement tokens); empty without a token budget",
    "net_lead": "score(correct) - best competitor's score over the kept facts (empty for B3)",
    "irrelevant_tone": (
        "summed tone of the kept irrelevant facts, whatever option they concern (empty for B3)"
    ),
    "tone_lead": (
        "tone on the correct option minus the largest tone on a competitor over the kept "
        "irrelevant facts (signed like `net_lead`; empty for B3)"
    ),
    "answer": "the option chosen; empty when the answer named no single option",
    "answer_position": (
        "where the chosen option was listed in the prompt (1 = first); empty when the "
        "answer named no single option"
    ),
    "n_options": "how many options the prompt listed (chance is 1 / `n_options`)",
    "correct": (
        "1 if the answer is the key, else 0 (an invalid answer counts as 0); empty for a failed row"
    ),
    "chose_decoy": (
        "1 if the answer is the wrong option two decoys favour, else 0; empty if failed, or if"
        " the template has no such option (bank v5 with the key in slot E: one decoy on each"
        " wrong option, one against the key)"
    ),
    "valid": (
        "1 if the answer named exactly one option, else 0; empty for a failed row (no "
        "usable reply: the decision call failed, or a call its memory needs did, and then "
        "the decision was not sent and `kept_*` are empty too)"
    ),
    "error": "why a row is invalid or failed, or what went wrong upstream (labels), or empty",
    "key": "the decision request's cache key (empty when it was not sent)",
}


def decoy_option(task: Task) -> str | None:
    """The wrong option the decoys favour most: in bank v5 the option with two decoys when the
    key sits in slot P or N; None when the decoys favour the two wrong options one each (key in
    slot E; see :func:`.design.decoy_option`), and then "chose the decoy" is undefined."""
    return design.decoy_option(task.facts, task.correct)


def crossprofile_rows(decisions: Sequence[Any]) -> pd.DataFrame:
    """One row per decision of the memory pipeline (its fields read, never imported)."""
    rows = []
    for decision in decisions:
        task: Task = decision.task
        variant = OwnershipVariant.parse(task.variant)
        facts = {f.id: f for f in task.facts}
        kept = [facts[i] for i in decision.memory.fact_ids]
        # No lead or tone for a summary (free text) or a memory never built (an input failed).
        summary = decision.memory.summary is not None or decision.input_failed
        rows.append(
            {
                **common_row(decision, task.correct),
                "template": task.template,
                "domain": task.domain,
                "pilot": int(task.pilot),
                "variant": task.variant,
                "support": variant.support,
                "decoy": variant.decoy,
                "irrelevant": variant.irrelevant,
                "net_lead": None
                if summary
                else net_evidence_lead(kept, task.correct, task.options),
                "irrelevant_tone": None if summary else irrelevant_tone(kept),
                "tone_lead": None if summary else tone_lead(kept, task.correct, task.options),
                "chose_decoy": None
                if decision.failed or (decoy := decoy_option(task)) is None
                else int(decision.answer is not None and decision.answer == decoy),
            }
        )
    return typed_frame(pd.DataFrame(rows, columns=list(CROSSPROFILE_COLUMNS)))


def crossprofile_tasks(
    templates: TemplateSet = "main",
    limit: int | None = None,
    seed: int = 0,
    option_order: OptionOrder = "rotate",
    *,
    names: Sequence[str] | None = None,
) -> list[Task]:
    """Tasks of the verified bank: main, pilot or all templates (only those in ``names``, when
    given: the profile's ``templates`` list; then the first ``limit`` of them), each under all 8
    ownership variants, options listed as ``option_order`` says."""
    from deliberation.benchmarks.crossprofile import derive_tasks

    if templates not in ("main", "pilot", "all"):
        raise ValueError(f"templates must be main, pilot or all; got {templates!r}")
    check_limit(limit)
    bank = verified_bank()
    if names is not None:
        unknown = sorted(set(names) - {t.id for t in bank})
        if unknown:
            raise ValueError(
                f"experiments.crossprofile.templates: no template {', '.join(unknown)}"
                " in templates/crossprofile/ (a list names template ids, e.g. education-01)"
            )
        bank = tuple(t for t in bank if t.id in set(names))
    bank = tuple(t for t in bank if templates == "all" or t.pilot == (templates == "pilot"))
    chosen = bank[:limit] if limit is not None else bank
    return derive_tasks(chosen, seed=seed, option_order=option_order)


_VERIFIED_BANKS: dict[tuple[tuple[str, int, int], ...], tuple[Template, ...]] = {}


def verified_bank() -> tuple[Template, ...]:
    """``load_bank()``, verified again only when a template file changed: a notebook (and
    ``deliberation plan``, which runs them all) derives tasks several times in one process."""
    from deliberation.benchmarks.crossprofile import load_bank
    from deliberation.benchmarks.crossprofile.loader import bank_dir, template_files

    files = template_files([bank_dir()])
    signature = tuple((str(f), f.stat().st_mtime_ns, f.stat().st_size) for f in files)
    if signature not in _VERIFIED_BANKS:
        bank = tuple(load_bank())  # raises for a bank that breaks a rule: nothing is kept
        _VERIFIED_BANKS.clear()
        _VERIFIED_BANKS[signature] = bank
    return _VERIFIED_BANKS[signature]


class _CrossProfile:
    """The CrossProfile benchmark (``deliberation run crossprofile``)."""

    name = "crossprofile"
    title = "CrossProfile"
    description = "CrossProfile tasks (templates x 8 ownership variants)"
    columns = tuple(CROSSPROFILE_COLUMNS)
    policies = _CROSSPROFILE_POLICIES
    has_truth = True
    selects_templates = True
    sim_reader = staticmethod(read_fact)
    # The paper's notebooks and the options of their memory runs.
    notebooks = {
        "03_crossprofile_h1_h3.ipynb": {"tags": ["keep"], "templates": ["main", "pilot"]},
        "04_tag_ablation.ipynb": {
            "policies": ["all", "R1", "B4", "Random", "R1-rel"],
            "primary_budget_only": True,
            "item_limit": 0,
            "tags": ["keep", "remove", "shuffle"],
        },
        "05_evidence_balance.ipynb": {"tags": ["keep"], "item_limit": 0},
    }
    smoke = {"limit": 3, "n_resamples": 200}  # 3 templates x 8 variants

    def tasks(
        self,
        seed: int,
        *,
        templates: str | None,
        limit: int | None,
        option_order: str = "rotate",
        names: Sequence[str] | None = None,
    ) -> list[Task]:
        return crossprofile_tasks(
            templates or "main",  # type: ignore[arg-type]
            limit,
            seed=seed,
            option_order=option_order,  # type: ignore[arg-type]
            names=names,
        )

    def truth(self, task: Task) -> Mapping[str, Any]:
        return {f.id: f for f in task.facts}

    def rows(self, decisions: Sequence[Any]) -> pd.DataFrame:
        return crossprofile_rows(decisions)


CROSSPROFILE = _CrossProfile()
