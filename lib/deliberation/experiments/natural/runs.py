"""``deliberation run natural``: free discussions, memory on their transcripts, decisions.

For every task, prompt variant and replicate: a natural discussion
(:mod:`deliberation.experiments.natural.discussion`), memory candidates from its sentences
(:mod:`deliberation.discussion.statements`), the engine's labelling/summary calls and policies
(:mod:`deliberation.experiments.memory.pipeline`, stage prefix ``natural.<benchmark>``), and
decision calls reading the full transcript, every fact of the task, or a policy's memory (holder
tags kept). The seed of a discussion is ``stable_seed("natural", profile seed, variant,
replicate)``: the two variants get fresh, independent seeds and are paired by task and
replicate.

Rows: :data:`ROW_COLUMNS` (name -> meaning, in order), one per (discussion, agent, vote stage)
and one per decision; disclosure rows: :data:`DISCLOSURE_COLUMNS`, one per (discussion, fact).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from deliberation.benchmarks import memory_benchmark
from deliberation.benchmarks.memory_benchmark import answer_position
from deliberation.discussion.disclosure import disclosure
from deliberation.discussion.statements import statement_candidates
from deliberation.discussion.transcript import Statement, Transcript, Turn
from deliberation.experiments.memory.grid import Grid
from deliberation.experiments.memory.pipeline import (
    RunReport,
    decide,
    prepare,
    send,
    stage_settings,
)
from deliberation.experiments.memory.prompts import decision_prompt
from deliberation.experiments.natural import prompts as natural_prompts
from deliberation.experiments.natural.discussion import (
    DiscussionSpec,
    NaturalDiscussion,
    hold_discussions,
)
from deliberation.inference.answer_parsing import parse_choice
from deliberation.inference.base import ChatRequest, StructuredOutput
from deliberation.inference.client import Client
from deliberation.inference.generation import stage_request
from deliberation.profiles.profile import check_distinct
from deliberation.seeds import stable_seed
from deliberation.stats.small_samples import calls_note

_Benchmark = str  # a registered memory benchmark's name (benchmarks)
# One row per (discussion, agent, vote stage) and one per decision: the columns, in order.
ROW_COLUMNS: dict[str, str] = {
    "profile": "the profile that ran (rates can then be compared across profiles)",
    "kind": "`vote` or `decision`",
    "benchmark": "`crossprofile` or `hiddenbench`",
    "task": "task id (CrossProfile `<template>/<variant>`; HiddenBench `hb-<n>`)",
    "template": "the intervals' cluster: the CrossProfile template, or the HiddenBench task",
    "variant": "CrossProfile ownership variant (e.g. `SP-DS-IP`); empty for HiddenBench",
    "support": "ownership of the support facts (`shared`/`private`); empty for HiddenBench",
    "decoy": "ownership of the decoy facts; empty for HiddenBench",
    "irrelevant": "ownership of the irrelevant facts; empty for HiddenBench",
    "prompt": "speaking-prompt variant: `plain` or `evidence-first`",
    "replicate": "replicate index (0-based); pairs the two variants on a task",
    "seed": "the discussion's seed",
    "agent": "the voting agent (vote rows); empty for decisions",
    "stage": "`initial` or `final` (vote rows); empty for decisions",
    "policy": (
        "decision rows: `transcript` (every message verbatim), `every-fact` (all the task's "
        "facts, untagged: the model given everything), or a memory policy (`R1`, `B4`, "
        "`Random`, `B3`, `R1-rel`, `balance`, `all`, `empty`); empty for votes"
    ),
    "budget": "budget fraction r of budgeted policies, else empty",
    "kept_tokens": "tokens of the memory the decision read (statements or summary), else empty",
    "budget_tokens": "floor(r x all statement tokens) for budgeted policies, else empty",
    "statements": "memory candidates (statement groups) of the discussion (decision rows)",
    "answer": "the option chosen; empty when the answer named no single option",
    "answer_position": (
        "where the chosen option was listed in the prompt (1 = first); empty when the "
        "answer named no single option"
    ),
    "n_options": "how many options the prompt listed",
    "correct": (
        "1 if the answer is the key, else 0 (an invalid answer counts as 0); empty for a failed row"
    ),
    "valid": (
        "1 if the answer named exactly one option, else 0; empty for a failed row: no "
        "usable reply, or an input failed (a turn of its discussion, a label or summary its "
        "memory needs) and the call was not sent; never counted"
    ),
    "error": "why a row is invalid or failed, or what went wrong upstream; empty when fine",
    "key": "the request's cache key (empty when it was not sent)",
}
_DISCUSSION_COLUMNS = ["profile", *list(ROW_COLUMNS)[2:12]]
# One row per (discussion, fact): the discussion's columns, then these.
DISCLOSURE_COLUMNS: dict[str, str] = {
    **{c: ROW_COLUMNS[c] for c in _DISCUSSION_COLUMNS},
    "fact": "fact id",
    "role": "CrossProfile role; HiddenBench `shared`/`hidden`",
    "holders": "number of agents holding it",
    "private": "1 when one agent holds it",
    "label": (
        "`full`/`partial`/`none` (deliberation.discussion.disclosure); `failed` when a turn "
        "of the discussion failed"
    ),
    "full": "0/1 indicator of the label, empty when failed",
    "partial": "0/1 indicator of the label, empty when failed",
    "none": "0/1 indicator of the label, empty when failed",
    "overlap": "best sentence coverage",
    "stated_by": "agents, `;`-joined",
    "keys": (
        "the discussion's message calls (`;`-joined request keys) the disclosure is read from, "
        "so the disclosure tables count the distinct calls behind each rate (`n_calls`)"
    ),
}
TRANSCRIPT, EVERY_FACT = "transcript", "every-fact"


@dataclass(frozen=True)
class NaturalResult:
    rows: pd.DataFrame
    disclosure: pd.DataFrame
    report: RunReport
    discussions: list[NaturalDiscussion] = dataclasses.field(repr=False, default_factory=list)

    def lines(self) -> list[str]:
        """The run report, with the votes (an invalid vote is kept and counted wrong)."""
        votes = self.rows[self.rows["kind"] == "vote"]
        invalid = int((votes["valid"] == 0).sum())
        failed_votes = int(votes["valid"].isna().sum())
        messages = [m for d in self.discussions for m in d.messages]
        failed = sum(bool(m.error) for m in messages)
        discussions = sum(bool(d.failed) for d in self.discussions)
        lines = [
            *self.report.lines(),
            f"votes: {len(votes)}, invalid votes: {invalid} (counted wrong)"
            + (f", FAILED votes: {failed_votes} (not counted)" if failed_votes else ""),
            f"messages: {len(messages)}, failed calls: {failed}",
            calls_note(votes, "vote rows"),
            calls_note(self.rows[self.rows["kind"] == "decision"], "decision rows"),
        ]
        if discussions:
            lines.append(
                f"FAILED discussions: {discussions} (a turn failed: their later turns, final"
                " votes and decisions were not sent; their disclosure is not labelled)"
            )
        return lines


@dataclass(frozen=True)
class _Unit:
    """A discussion seen as a task by the engine's pipeline: the task's fields, its own id."""

    id: str
    description: str
    criteria: tuple[str, ...]
    options: tuple[str, ...]
    correct: str


def _discussion_seed(profile_seed: int, variant: str, replicate: int) -> int:
    """Fresh per variant and replicate; a 31-bit value every engine accepts as a seed."""
    return stable_seed("natural", profile_seed, variant, replicate) % (2**31)


def _discussion_specs(
    tasks: Sequence[Any], variants: Sequence[str], replicates: int, profile_seed: int
) -> list[DiscussionSpec]:
    for v in variants:
        if v not in natural_prompts.PROMPT_VARIANTS:
            raise ValueError(
                f"unknown prompt variant {v!r}; expected some of {natural_prompts.PROMPT_VARIANTS}"
            )
    return [
        DiscussionSpec(task, v, r, _discussion_seed(profile_seed, v, r))
        for r in range(replicates)
        for v in variants
        for task in tasks
    ]


def _as_transcript(d: NaturalDiscussion) -> Transcript:
    """The discussion as the engine's transcript (one turn per message, a statement per
    sentence); the summary prompt reads its lines."""
    from deliberation.discussion.statements import sentences

    turns = tuple(
        Turn(
            agent=m.agent,
            statements=tuple(
                Statement(m.agent, f"m{k}.{j}", s) for j, s in enumerate(sentences(m.text))
            ),
        )
        for k, m in enumerate(d.messages)
    )
    return Transcript(task_id=d.spec.id, agents=tuple(d.task.agents), turns=turns)


def _context(benchmark: str, d: NaturalDiscussion) -> dict:
    task = d.task
    variant = getattr(task, "variant", "")
    cells = {"support": "", "decoy": "", "irrelevant": ""}
    if variant:
        from deliberation.benchmarks.crossprofile.variants import OwnershipVariant

        parsed = OwnershipVariant.parse(variant)
        cells = {g: parsed.ownership(g) for g in cells}
    return {
        "profile": None,  # set once for the whole frame
        "benchmark": benchmark,
        "task": task.id,
        "template": getattr(task, "template", task.id),
        "variant": variant,
        **cells,
        "prompt": d.spec.variant,
        "replicate": d.spec.replicate,
        "seed": d.spec.seed,
    }


def _position(task: Any, answer: str | None) -> dict:
    return {
        "answer_position": answer_position(task.options, answer),
        "n_options": len(task.options),
    }


def _blank_row(context: dict) -> dict:
    return {c: None for c in ROW_COLUMNS} | context


def _vote_rows(benchmark: str, discussions: Sequence[NaturalDiscussion]) -> list[dict]:
    rows = []
    for d in discussions:
        context = _context(benchmark, d)
        for v in d.votes:
            rows.append(
                _blank_row(context)
                | {
                    "kind": "vote",
                    "agent": v.agent,
                    "stage": v.stage,
                    "answer": v.answer or "",
                    **_position(d.task, v.answer),
                    "correct": None if v.failed else int(v.answer == d.task.correct),
                    "valid": None if v.failed else int(v.answer is not None),
                    "error": v.error,
                    "key": v.key,
                }
            )
    return rows


def _disclosure_rows(benchmark: str, discussions: Sequence[NaturalDiscussion]) -> pd.DataFrame:
    rows = []
    for d in discussions:
        context = _context(benchmark, d)
        messages = d.pairs()
        keys = ";".join(m.key for m in d.messages if m.key)
        for fact in d.task.facts:
            row = context | {
                "keys": keys,
                "fact": fact.id,
                "role": getattr(fact, "role", None) or getattr(fact, "source", ""),
                "holders": len(fact.holders),
                "private": int(len(fact.holders) == 1),
            }
            if d.failed:  # a transcript with a hole says nothing about what was disclosed
                rows.append(row | {"label": "failed", "stated_by": ""})
                continue
            found = disclosure(fact.text, messages)
            rows.append(
                row
                | {
                    "label": found.label,
                    "full": int(found.label == "full"),
                    "partial": int(found.label == "partial"),
                    "none": int(found.label == "none"),
                    "overlap": round(found.overlap, 4),
                    "stated_by": ";".join(found.stated_by),
                }
            )
    frame = pd.DataFrame(rows, columns=list(DISCLOSURE_COLUMNS))
    for column in ("full", "partial", "none"):
        if frame[column].isna().any():
            frame[column] = frame[column].astype("Int64")
    return frame


def _read_answer(response, options: Sequence[str]) -> tuple[str | None, str]:
    """(answer, error) of a decision; the caller tells a failed call by ``response.ok``."""
    if not response.ok:
        return None, f"call failed: {response.error}"
    parsed = response.parsed if response.parsed in options else None
    answer = parsed or parse_choice(response.text, options)
    return answer, "" if answer else "answer names no single option"


def _decision_rows(
    benchmark: str,
    discussions: Sequence[NaturalDiscussion],
    grid: Grid,
    *,
    profile: Any,
    client: Client,
    report: RunReport,
    progress: bool = True,
) -> list[dict]:
    """Full-transcript and every-fact decisions, then the grid's policies through the engine."""
    stage = f"natural.{benchmark}.decision"
    by_id = {d.spec.id: d for d in discussions}
    units = {
        d.spec.id: _Unit(
            d.spec.id,
            d.task.description,
            tuple(d.task.criteria),
            tuple(d.task.options),
            d.task.correct,
        )
        for d in discussions
    }
    candidates = {
        d.spec.id: statement_candidates(d.pairs(), tuple(d.task.agents)) for d in discussions
    }
    requests: list[ChatRequest] = []
    plans: list[tuple[NaturalDiscussion, str]] = []
    rows = []
    for d in discussions:
        t = d.task
        choices = StructuredOutput(choices=tuple(t.options))
        for policy, prompt in (
            (
                TRANSCRIPT,
                natural_prompts.transcript_decision_prompt(
                    t.description, t.criteria, t.options, d.pairs()
                ),
            ),
            (
                EVERY_FACT,
                decision_prompt(
                    t.description, t.criteria, t.options, [f.text for f in t.facts], tagged=False
                ),
            ),
        ):
            if d.failed and policy == TRANSCRIPT:
                continue  # reads the failed discussion: one failed row below, never sent
            requests.append(stage_request(profile, stage_settings(stage, choices), prompt))
            plans.append((d, policy))
    responses, keys = send(client, requests, f"{stage} (transcript, every fact)", report)
    decided = {}
    for (d, policy), response, key in zip(plans, responses, keys, strict=True):
        answer, error = _read_answer(response, tuple(d.task.options))
        decided[(d.spec.id, policy)] = _decision_row(
            benchmark, d, policy, answer, error, key, len(candidates[d.spec.id]), not response.ok
        )
    for d in discussions:
        for policy in (TRANSCRIPT, EVERY_FACT):
            row = decided.get((d.spec.id, policy))
            if row is None:
                error = f"input failed, not sent: {d.failed}"
                row = _decision_row(
                    benchmark, d, policy, None, error, "", len(candidates[d.spec.id]), True
                )
            report.decisions += 1
            report.failed += int(row["valid"] is None)
            report.invalid += int(row["valid"] == 0)
            rows.append(row)
    if not grid.policies:
        return rows

    # Memories of a failed discussion would be built from a transcript with a hole: each of
    # its grid cells is one failed row, and none of its labelling, summary or decision calls
    # is sent.
    for d in discussions:
        if not d.failed:
            continue
        for cell in grid.cells():
            for _ in grid.tags:
                report.decisions += 1
                report.failed += 1
                rows.append(
                    _decision_row(
                        benchmark,
                        d,
                        cell.policy,
                        None,
                        f"input failed, not sent: {d.failed}",
                        "",
                        len(candidates[d.spec.id]),
                        True,
                    )  # fmt: skip
                    | {"budget": cell.budget}
                )
    units = {k: u for k, u in units.items() if not by_id[k].failed}
    if not units:
        return rows
    prepared = prepare(
        list(units.values()),
        grid,
        stage_prefix=f"natural.{benchmark}",
        profile=profile,
        client=client,
        seed=profile.seed,
        truth=lambda unit: None,
        report=report,
        discussion=lambda unit, seed: _as_transcript(by_id[unit.id]),
        candidates=lambda transcript: candidates[transcript.task_id],
    )
    for decision in decide(
        prepared,
        grid,
        stage_prefix=f"natural.{benchmark}",
        profile=profile,
        client=client,
        seed=profile.seed,
        report=report,
        progress=progress,
    ):
        d = by_id[decision.task.id]
        rows.append(
            _blank_row(_context(benchmark, d))
            | {
                "kind": "decision",
                "policy": decision.cell.policy,
                "budget": decision.cell.budget,
                "kept_tokens": decision.memory.kept_tokens,
                "budget_tokens": decision.budget_tokens,
                "statements": len(candidates[d.spec.id]),
                "answer": decision.answer or "",
                **_position(d.task, decision.answer),
                "correct": None if decision.failed else int(decision.answer == d.task.correct),
                "valid": None if decision.failed else int(decision.answer is not None),
                "error": decision.error,
                "key": decision.key,
            }
        )
    return rows


def _decision_row(
    benchmark: str,
    d: NaturalDiscussion,
    policy: str,
    answer: str | None,
    error: str,
    key: str,
    statements: int,
    failed: bool,
) -> dict:
    return _blank_row(_context(benchmark, d)) | {
        "kind": "decision",
        "policy": policy,
        "statements": statements,
        "answer": answer or "",
        **_position(d.task, answer),
        "correct": None if failed else int(answer == d.task.correct),
        "valid": None if failed else int(answer is not None),
        "error": error,
        "key": key,
    }


def _typed_rows(rows: Sequence[dict]) -> pd.DataFrame:
    frame = pd.DataFrame(list(rows), columns=list(ROW_COLUMNS))
    for column in (
        "kept_tokens", "budget_tokens", "statements", "answer_position", "n_options", "replicate",
        "seed",
    ):  # fmt: skip
        frame[column] = frame[column].astype("Int64")
    frame["budget"] = frame["budget"].astype("Float64")
    for column in ("agent", "stage", "policy", "error", "variant", "support", "decoy"):
        frame[column] = frame[column].fillna("")
    frame["irrelevant"] = frame["irrelevant"].fillna("")
    for column in ("correct", "valid"):  # empty only in failed rows
        if frame[column].isna().any():
            frame[column] = frame[column].astype("Int64")
    return frame


def run_natural_experiment(
    benchmark: _Benchmark,
    tasks: Sequence[Any],
    profile: Any,
    client: Client,
    *,
    variants: Sequence[str] = natural_prompts.PROMPT_VARIANTS,
    replicates: int = 1,
    rounds: int = 2,
    policies: Sequence[str] = (),
    budget: float = 0.6,
    progress: bool = True,
) -> NaturalResult:
    """Discussions, votes, disclosure labels and decisions for ``tasks`` (module docstring)."""
    memory_benchmark(benchmark)  # an unknown name is an error listing the registered ones
    report = RunReport(synthetic=bool(getattr(profile, "synthetic", False)))
    specs = _discussion_specs(tasks, variants, replicates, profile.seed)
    discussions = hold_discussions(
        specs,
        stage_prefix=f"natural.{benchmark}",
        profile=profile,
        client=client,
        report=report,
        rounds=rounds,
    )
    grid = Grid(policies=tuple(policies), budgets=(budget,), item_limit=None, tags=("keep",))
    rows = _vote_rows(benchmark, discussions)
    rows += _decision_rows(
        benchmark, discussions, grid, profile=profile, client=client, report=report,
        progress=progress,
    )  # fmt: skip
    frame, facts = _typed_rows(rows), _disclosure_rows(benchmark, discussions)
    frame["profile"] = facts["profile"] = profile.name
    return NaturalResult(frame, facts, report, discussions)


def natural_tasks(benchmark: _Benchmark, options: Any, seed: int) -> list[Any]:
    """The tasks the profile's ``experiments.natural`` section selects."""
    return memory_benchmark(benchmark).tasks(
        seed, templates=options.templates, limit=options.limit, option_order=options.option_order
    )


def runnable_benchmarks(benchmarks: Sequence[str]) -> tuple[list[str], list[str]]:
    """The benchmarks whose data is on this machine, and a note for each one that is not
    (HiddenBench's file comes from ``make data``; CrossProfile ships with the project)."""
    from deliberation.benchmarks.hiddenbench.tasks import default_path

    ready, notes = [], []
    for benchmark in benchmarks:
        if benchmark == "hiddenbench" and not default_path().is_file():
            notes.append(f"hiddenbench skipped: no file {default_path()} (run `make data`)")
        else:
            ready.append(benchmark)
    return ready, notes


def run_from_profile(
    profile: Any,
    *,
    benchmarks: Sequence[str] | None = None,
    limit: int | None = None,
    cache_file: Path | None = None,
    client: Client | None = None,
    progress: bool = True,
) -> NaturalResult:
    """What ``deliberation run natural`` does: every benchmark of the profile's
    ``experiments.natural`` section (or ``benchmarks``), rows of all of them in one frame."""
    options = profile.experiments.natural
    check_distinct(benchmarks, "benchmarks")
    if limit is not None:  # checked where the tasks are chosen
        options = options.model_copy(update={"limit": limit})
    if client is None:
        from deliberation.inference import make_client

        client = make_client(profile, cache_file=cache_file, progress=progress)
    results = []
    for benchmark in benchmarks or options.benchmarks:
        tasks = natural_tasks(benchmark, options, profile.seed)
        results.append(
            run_natural_experiment(
                benchmark, tasks, profile, client,
                variants=options.variants, replicates=options.replicates, rounds=options.rounds,
                policies=options.policies, budget=options.budget, progress=progress,
            )
        )  # fmt: skip
    return combine(results)


def combine(results: Sequence[NaturalResult]) -> NaturalResult:
    """Several benchmarks' results as one (rows stacked, reports merged)."""
    if len(results) == 1:
        return results[0]
    report = RunReport(synthetic=any(r.report.synthetic for r in results))
    for r in results:
        report.stages += r.report.stages
        for field in (
            "summaries", "summaries_cut", "label_errors", "decisions", "invalid", "failed"
        ):  # fmt: skip
            setattr(report, field, getattr(report, field) + getattr(r.report, field))
    return NaturalResult(
        _typed_rows(pd.concat([r.rows for r in results]).to_dict("records")),
        pd.concat([r.disclosure for r in results], ignore_index=True),
        report,
        [d for r in results for d in r.discussions],
    )


def run_notebook(profile: Any, client: Client) -> NaturalResult:
    """Notebook 06's model calls, for ``notebooks/manifest.yaml`` (``deliberation plan`` calls
    it): every benchmark of the profile's ``experiments.natural`` whose data is here."""
    benchmarks, _ = runnable_benchmarks(profile.experiments.natural.benchmarks)
    # Bars only where the client shows them (the plan's client never does: no stray bar).
    progress = bool(getattr(client, "progress", False))
    return run_from_profile(profile, benchmarks=benchmarks, client=client, progress=progress)
