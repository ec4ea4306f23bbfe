"""``deliberation run crossprofile|hiddenbench``: the library functions behind the commands.

Results frames have one row per decision call. CrossProfile columns, in order:

==================  ============================================================================
``task``            task id, ``<template>/<variant>``
``template``        template id (the bootstrap's cluster)
``domain``          decision domain of the template
``pilot``           1 for the 10 pilot templates, else 0
``variant``         ownership variant, e.g. ``SP-DS-IP``
``support``         ownership of the support facts: ``shared`` or ``private``
``decoy``           ownership of the decoy facts
``irrelevant``      ownership of the irrelevant facts
``policy``          memory policy (``R1``, ``B4``, ``Random``, ``B3``, ``R1-rel``, ...)
``budget``          budget fraction r; empty for references and fixed-count rows
``item_limit``      7 for fixed-count rows, else empty
``tags``            holder-tag mode: ``keep``, ``remove`` or ``shuffle``
``kept_facts``      fact ids in memory order joined by ``;`` (empty for B3: free text)
``kept_tokens``     statement tokens kept (B3: tokens of the summary after the cut)
``budget_tokens``   floor(r x all statement tokens); empty without a token budget
``net_lead``        score(correct) - best competitor's score over the kept facts (empty for B3)
``irrelevant_tone`` summed tone of the kept irrelevant facts, whatever option they concern
                    (empty for B3)
``tone_lead``       tone on the correct option minus the largest tone on a competitor over
                    the kept irrelevant facts (signed like ``net_lead``; empty for B3)
``answer``          the option chosen; empty when the answer named no single option
``correct``         1 if the answer is the key, else 0 (an invalid answer counts as 0); empty
                    for a failed row
``chose_decoy``     1 if the answer is the wrong option two decoys favour, else 0; empty if failed
``valid``           1 if the answer named exactly one option, else 0; **empty for a failed row**
                    (no usable reply: the decision call failed, or a call its memory needs did,
                    and then the decision was not sent and ``kept_*`` are empty too)
``error``           why a row is invalid or failed, or what went wrong upstream (labels), or empty
``key``             the decision request's cache key (empty when it was not sent)
==================  ============================================================================

Three outcomes, then: answered (``valid`` 1), answered but invalid (``valid`` 0, counted
wrong as paper 1 counts it) and failed (``valid`` empty: left out of every accuracy's
numerator and denominator, retried by the next run). ``deliberation run`` writes these columns
with ``key`` named ``request_key`` and adds ``profile``, ``model``, ``gold`` (the correct
option) and ``outcome`` (``answered``, ``invalid`` or ``failed``); see
:func:`deliberation.memory_runs.summary.command_rows`.

HiddenBench frames have ``task, policy, budget, item_limit, tags, kept_facts, kept_tokens,
budget_tokens, answer, correct, valid, error, key`` with the same meanings.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import pandas as pd

from deliberation.atomic import atomic_path
from deliberation.crossprofile.schema import Template
from deliberation.crossprofile.scoring import irrelevant_tone, net_evidence_lead, tone_lead
from deliberation.crossprofile.tasks import Task
from deliberation.crossprofile.variants import OwnershipVariant
from deliberation.hiddenbench import HiddenBenchTask
from deliberation.inference.client import Client
from deliberation.memory_runs.grid import CROSSPROFILE_POLICIES, HIDDENBENCH_POLICIES, Grid
from deliberation.memory_runs.pipeline import (
    Decision,
    RunReport,
    decide,
    prepare,
)
from deliberation.params import check_limit

CROSSPROFILE_COLUMNS = [
    "task", "template", "domain", "pilot", "variant", "support", "decoy", "irrelevant",
    "policy", "budget", "item_limit", "tags", "kept_facts", "kept_tokens", "budget_tokens",
    "net_lead", "irrelevant_tone", "tone_lead", "answer", "correct", "chose_decoy", "valid", "error", "key",
]  # fmt: skip
HIDDENBENCH_COLUMNS = [
    "task", "policy", "budget", "item_limit", "tags", "kept_facts", "kept_tokens",
    "budget_tokens", "answer", "correct", "valid", "error", "key",
]  # fmt: skip
_NULLABLE_INT = ("item_limit", "budget_tokens", "net_lead", "irrelevant_tone", "tone_lead")
_EMPTY_WHEN_FAILED = ("kept_tokens", "correct", "chose_decoy", "valid")

TemplateSet = Literal["main", "pilot", "all"]


@dataclass(frozen=True)
class RunResult:
    frame: pd.DataFrame
    report: RunReport
    gold: dict[str, str] = field(default_factory=dict)  # task id -> correct option


def decoy_option(task: Task) -> str | None:
    """The wrong option two decoys favour (every template places its decoys 2 + 1)."""
    counts = Counter(f.option for f in task.facts if f.role == "decoy")
    if not counts:
        return None
    option, count = counts.most_common(1)[0]
    return option if count >= 2 and option != task.correct else None


def _common(decision: Decision, correct: str) -> dict:
    memory = decision.memory
    failed = decision.failed
    return {
        "task": decision.task.id,
        "policy": decision.cell.policy,
        "budget": decision.cell.budget,
        "item_limit": decision.cell.item_limit,
        "tags": decision.tags,
        "kept_facts": "" if memory.summary is not None else ";".join(memory.fact_ids),
        "kept_tokens": None if decision.input_failed else memory.kept_tokens,
        "budget_tokens": decision.budget_tokens,
        "answer": decision.answer or "",
        "correct": None if failed else int(decision.answer == correct),
        "valid": None if failed else int(decision.answer is not None),
        "error": decision.error,
        "key": decision.key,
    }


def crossprofile_rows(decisions: Sequence[Decision]) -> pd.DataFrame:
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
                **_common(decision, task.correct),
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
                if decision.failed
                else int(decision.answer is not None and decision.answer == decoy_option(task)),
            }
        )
    return _typed(pd.DataFrame(rows, columns=CROSSPROFILE_COLUMNS))


def hiddenbench_rows(decisions: Sequence[Decision]) -> pd.DataFrame:
    rows = [_common(d, d.task.correct) for d in decisions]
    return _typed(pd.DataFrame(rows, columns=HIDDENBENCH_COLUMNS))


def _typed(frame: pd.DataFrame) -> pd.DataFrame:
    for column in _NULLABLE_INT:
        if column in frame:
            frame[column] = frame[column].astype("Int64")
    # Empty only in failed rows: nullable then, plain integers otherwise (unchanged tables).
    for column in _EMPTY_WHEN_FAILED:
        if column in frame and frame[column].isna().any():
            frame[column] = frame[column].astype("Int64")
    frame["budget"] = frame["budget"].astype("Float64")
    return frame


def failed_rows(frame: pd.DataFrame) -> pd.Series:
    """Rows without a usable reply (``valid`` empty): never counted in an accuracy."""
    return frame["valid"].isna()


def crossprofile_tasks(
    templates: TemplateSet = "main", limit: int | None = None, seed: int = 0
) -> list[Task]:
    """Tasks of the verified bank: main, pilot or all templates (the first ``limit`` templates,
    each under all 8 ownership variants)."""
    from deliberation.crossprofile import derive_tasks

    if templates not in ("main", "pilot", "all"):
        raise ValueError(f"templates must be main, pilot or all; got {templates!r}")
    check_limit(limit)
    bank = [t for t in verified_bank() if templates == "all" or t.pilot == (templates == "pilot")]
    return derive_tasks(bank[:limit] if limit is not None else bank, seed=seed)


_VERIFIED_BANKS: dict[tuple[tuple[str, int, int], ...], tuple[Template, ...]] = {}


def verified_bank() -> tuple[Template, ...]:
    """``load_bank()``, verified again only when a template file changed: a notebook (and
    ``deliberation plan``, which runs them all) derives tasks several times in one process."""
    from deliberation.crossprofile import load_bank
    from deliberation.crossprofile.loader import bank_dir, template_files

    files = template_files([bank_dir()])
    signature = tuple((str(f), f.stat().st_mtime_ns, f.stat().st_size) for f in files)
    if signature not in _VERIFIED_BANKS:
        bank = tuple(load_bank())  # raises for a bank that breaks a rule: nothing is kept
        _VERIFIED_BANKS.clear()
        _VERIFIED_BANKS[signature] = bank
    return _VERIFIED_BANKS[signature]


def run_memory_experiment(
    benchmark: Literal["crossprofile", "hiddenbench"],
    tasks: Sequence[Task] | Sequence[HiddenBenchTask],
    grid: Grid,
    profile,
    client: Client,
    *,
    progress: bool = True,
) -> RunResult:
    """Run ``grid`` on ``tasks``: one row per decision call (columns in the module docstring)."""
    if benchmark == "hiddenbench" and "truth" in grid.needs():
        raise ValueError("oracle policies need true roles; HiddenBench has none")
    report = RunReport(synthetic=bool(getattr(profile, "synthetic", False)))
    seed = profile.seed

    def truth(task):
        return {f.id: f for f in task.facts} if benchmark == "crossprofile" else None

    prepared = prepare(
        tasks,
        grid,
        stage_prefix=benchmark,
        profile=profile,
        client=client,
        seed=seed,
        truth=truth,
        report=report,
    )
    decisions = decide(
        prepared,
        grid,
        stage_prefix=benchmark,
        profile=profile,
        client=client,
        seed=seed,
        report=report,
        progress=progress,
    )
    rows = (
        crossprofile_rows(decisions) if benchmark == "crossprofile" else hiddenbench_rows(decisions)
    )
    return RunResult(rows, report, {task.id: task.correct for task in tasks})


def profile_grid(benchmark: str, profile) -> tuple[Grid, dict]:
    """The grid the profile's ``experiments.<benchmark>`` section names (every policy the
    benchmark supports when it names none), and its task selection (``templates``, ``limit``)."""
    section = getattr(profile.experiments, benchmark)
    defaults = CROSSPROFILE_POLICIES if benchmark == "crossprofile" else HIDDENBENCH_POLICIES
    grid = Grid(
        policies=tuple(section.policies or defaults),
        budgets=tuple(section.budgets),
        item_limit=section.item_limit or None,
        tags=tuple(section.tags),
    )
    return grid, {"limit": section.limit, "templates": section.templates}


def run_from_profile(
    benchmark: Literal["crossprofile", "hiddenbench"],
    profile,
    *,
    policies: Sequence[str] | None = None,
    budgets: Sequence[float] | None = None,
    tags: Sequence[str] | None = None,
    item_limit: int | None = None,
    templates: TemplateSet | None = None,
    limit: int | None = None,
    cache_file: Path | None = None,
    client: Client | None = None,
    progress: bool = True,
) -> RunResult:
    """What ``deliberation run <benchmark>`` does: the profile's grid with the given overrides
    (``item_limit=0`` drops the fixed-count rows), its tasks, and the run through the cache."""
    if benchmark not in ("crossprofile", "hiddenbench"):
        raise ValueError(f"unknown benchmark {benchmark!r}; expected crossprofile or hiddenbench")
    grid, selection = profile_grid(benchmark, profile)
    grid = Grid(
        policies=tuple(policies) if policies else grid.policies,
        budgets=tuple(budgets) if budgets else grid.budgets,
        item_limit=grid.item_limit if item_limit is None else (item_limit or None),
        tags=tuple(tags) if tags else grid.tags,
    )
    limit = check_limit(limit if limit is not None else selection.get("limit"))
    if benchmark == "crossprofile":
        tasks = crossprofile_tasks(
            templates or selection.get("templates") or "main", limit, seed=profile.seed
        )
    else:
        from deliberation.hiddenbench import load_hiddenbench

        tasks = load_hiddenbench(seed=profile.seed)[:limit]
    if client is None:
        from deliberation.inference import make_client

        client = make_client(profile, cache_file=cache_file, progress=progress)
    return run_memory_experiment(benchmark, tasks, grid, profile, client, progress=progress)


def write_rows(frame: pd.DataFrame, path: Path) -> Path:
    """The frame as CSV, atomically (empty cells for missing values)."""
    with atomic_path(path) as tmp:
        frame.to_csv(tmp, index=False)
    return Path(path)


__all__ = [
    "profile_grid",
    "run_from_profile",
    "write_rows",
    "CROSSPROFILE_COLUMNS",
    "HIDDENBENCH_COLUMNS",
    "RunResult",
    "crossprofile_tasks",
    "decoy_option",
    "run_memory_experiment",
]
