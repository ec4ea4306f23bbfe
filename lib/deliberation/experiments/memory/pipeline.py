"""The shared pipeline of a memory run (CrossProfile and HiddenBench alike).

task -> scripted discussion -> memory candidates -> labelling calls (relevance, balance; one
per task) and summary calls (one per task and budget) -> memories for every grid cell ->
decision calls (one per cell and tag mode) -> parsed answers.

Each stage's requests go through the cache in one batch: identical prompts are sent once, and
the counts (requests built, unique prompts, already cached, sent, failed) are kept for the report.

Three outcomes per decision: answered (the reply names one option), invalid (the model replied
but named no single option: counted wrong, as paper 1 counts it) and **failed** (no usable
reply). A decision whose memory needs a failed call (its relevance or balance labels, its
summary) is failed too and is never sent: its memory would be built from a partial input. A
failed decision is left out of every accuracy; the next run sends exactly the failed calls.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from deliberation.discussion import (
    MemoryCandidate,
    Transcript,
    memory_candidates,
    scripted_discussion,
)
from deliberation.experiments.memory.decision import render_decision_prompt
from deliberation.experiments.memory.grid import Cell, Grid
from deliberation.experiments.memory.needs import memory_needs
from deliberation.inference import batch
from deliberation.inference.answer_parsing import parse_choice
from deliberation.inference.base import ChatRequest, ChatResponse, StructuredOutput
from deliberation.inference.batch import StageCounts
from deliberation.inference.call_progress import progress_bar
from deliberation.inference.client import Client
from deliberation.inference.generation import StageSettings, stage_request
from deliberation.memory_policies import (
    Capacity,
    Memory,
    MemoryPool,
    budget_tokens,
    build_memory,
    policy_spec,
)

log = logging.getLogger(__name__)

# Stage suffix of the decision; the full tag is "<benchmark>.decision" (e.g.
# "crossprofile.decision"); each need's calls are tagged "<benchmark>.<need>" (needs.py).
_DECISION = "decision"


def stage_settings(
    stage: str, structured: StructuredOutput | None = None, max_tokens: int | None = None
) -> StageSettings:
    """What a stage fixes about its requests (everything else comes from the profile): the
    structured answer it needs, and room for long answers where the stage needs it."""
    return StageSettings(stage, structured=structured, max_tokens=max_tokens)


@dataclass
class RunReport:
    """What a run did, beyond its rows: per-stage counts and the counted problems."""

    stages: list[StageCounts] = field(default_factory=list)
    summaries: int = 0
    summaries_cut: int = 0
    label_errors: int = 0
    decisions: int = 0
    invalid: int = 0
    failed: int = 0  # decisions without a usable reply (their own call or an input failed)
    synthetic: bool = False

    def lines(self) -> list[str]:
        out = [s.line() for s in self.stages]
        if self.summaries:
            out.append(f"summaries cut to their budget: {self.summaries_cut} of {self.summaries}")
        if self.label_errors:
            out.append(f"labelling answers with problems: {self.label_errors}")
        failed = (
            f", FAILED: {self.failed} (no usable reply or a failed input; not counted)"
            if self.failed
            else ""
        )
        out.append(
            f"decisions: {self.decisions}, invalid answers: {self.invalid} (counted wrong){failed}"
        )
        if self.synthetic:
            out.append("synthetic (sim backend): not evidence about language models")
        return out


@dataclass(frozen=True)
class Decision:
    """One decision call: which task, cell and tag mode, the memory read, and the outcome."""

    task: Any
    cell: Cell
    tags: str
    memory: Memory
    budget_tokens: int | None
    answer: str | None
    error: str
    key: str
    failed: bool = False  # no usable reply: the call failed, or an input it needs did
    input_failed: bool = False  # an input failed, so the call was not sent (memory is empty)


def send(
    client: Client, requests: Sequence[ChatRequest], stage: str, report: RunReport
) -> tuple[list[ChatResponse], list[str]]:
    """One batch through the cache; records the stage's counts in ``report``."""
    return batch.send(client, requests, stage, report.stages)


@dataclass
class _Prepared:
    task: Any
    transcript: Transcript
    pool: MemoryPool
    by_budget: dict[float, dict[str, Any]] = field(default_factory=dict)  # r -> need -> reading
    errors: dict[str, str] = field(default_factory=dict)  # need -> labelling problem
    failed: dict[str, str] = field(default_factory=dict)  # need -> why its call failed
    call_keys: dict[str, str] = field(default_factory=dict)  # need -> its request's cache key
    limits: dict[float, int] = field(default_factory=dict)  # r -> its token budget

    def budget(self, r: float) -> int:
        """The token budget at fraction ``r`` of this task's statements, computed once for
        the need prompts, the memory and the rows alike."""
        if r not in self.limits:
            self.limits[r] = budget_tokens(self.pool.candidates, r)
        return self.limits[r]


def _call_error(what: str, response: ChatResponse) -> str | None:
    return None if response.ok else f"{what} call failed: {response.error}"


def _statements(candidates: Sequence[MemoryCandidate]) -> list[str]:
    return [c.text for c in candidates]


def prepare(
    tasks: Sequence[Any],
    grid: Grid,
    *,
    stage_prefix: str,
    profile: Any,
    client: Client,
    seed: int,
    truth: Callable[[Any], Mapping[str, Any] | None],
    report: RunReport,
    discussion: Callable[[Any, int], Transcript] = scripted_discussion,
    candidates: Callable[[Transcript], tuple[MemoryCandidate, ...]] = memory_candidates,
) -> list[_Prepared]:
    """Discussion, candidates and the model calls policies need before any memory is built.
    ``discussion`` and ``candidates`` default to the scripted discussion and its facts; the
    natural-discussion run passes its held transcripts and their sentence groups."""
    prepared = []
    for task in tasks:
        transcript = discussion(task, seed)
        pool = MemoryPool(
            task_id=task.id,
            seed=seed,
            candidates=candidates(transcript),
            options=tuple(task.options),
            truth=truth(task),
        )
        prepared.append(_Prepared(task, transcript, pool))
    for need in memory_needs(grid.needs()):
        stage = f"{stage_prefix}.{need.name}"
        index = [
            (p, r)
            for p in prepared
            for r in (grid.budgets if need.per_budget else (None,))
        ]  # fmt: skip
        requests = [
            stage_request(
                profile,
                stage_settings(stage, need.structured(p.task), need.max_tokens),
                need.prompt(
                    p.task,
                    p.pool,
                    p.transcript,
                    None if r is None else p.budget(r),
                ),
            )
            for p, r in index
        ]
        responses, call_keys = send(client, requests, stage, report)
        for (p, r), response, call_key in zip(index, responses, call_keys, strict=True):
            key = need.name if r is None else f"{need.name} {r}"
            p.call_keys[key] = call_key
            if not response.ok:
                p.failed[key] = _call_error(need.name, response) or ""
                continue
            reading = need.read(response.text, p.task, p.pool)
            if r is None:
                p.pool = p.pool.with_need(need.name, reading.value)
            else:
                p.by_budget.setdefault(r, {})[need.name] = reading.value
            if reading.error:
                p.errors[key] = reading.error
                report.label_errors += 1
    return prepared


def _memory(p: _Prepared, cell: Cell) -> tuple[Memory, int | None]:
    if cell.item_limit is not None:
        return build_memory(cell.policy, p.pool, Capacity.items(cell.item_limit)), None
    if cell.budget is None:
        return build_memory(cell.policy, p.pool, None), None
    limit = p.budget(cell.budget)
    pool = p.pool
    for need, value in p.by_budget.get(cell.budget, {}).items():
        pool = pool.with_need(need, value)
    return build_memory(cell.policy, pool, Capacity.tokens(limit)), limit


def _cell_errors(
    p: _Prepared, cell: Cell, needs: Sequence[str], problems: Mapping[str, str] | None = None
) -> list[str]:
    """The problems (``p.errors``, or ``problems``) of the inputs ``cell``'s policy needs."""
    problems = p.errors if problems is None else problems
    errors = [problems[n] for n in needs if n in problems]
    if cell.budget is not None:
        errors += [problems[k] for n in needs if (k := f"{n} {cell.budget}") in problems]
    return errors


def decide(
    prepared: Sequence[_Prepared],
    grid: Grid,
    *,
    stage_prefix: str,
    profile: Any,
    client: Client,
    seed: int,
    report: RunReport,
    progress: bool = True,
) -> list[Decision]:
    """Every cell x tag mode of every task: build the memory, send the decisions, parse them."""
    stage = f"{stage_prefix}.{_DECISION}"
    plans: list[tuple[_Prepared, Cell, str, Memory, int | None]] = []
    requests: list[ChatRequest] = []
    unsent: list[tuple[_Prepared, Decision]] = []  # inputs failed: never built, never sent
    cells = grid.cells()
    quiet = not progress or len(prepared) < 50
    for p in progress_bar(prepared, desc="memories", disable=quiet):
        for cell in cells:
            failed_inputs = _cell_errors(p, cell, policy_spec(cell.policy).needs, p.failed)
            if failed_inputs:
                limit = p.budget(cell.budget) if cell.budget else None
                for tags in grid.tags:
                    unsent.append(
                        (
                            p,
                            Decision(
                                p.task,
                                cell,
                                tags,
                                Memory(policy=cell.policy),
                                limit,
                                None,
                                "; ".join(["input failed, not sent", *failed_inputs]),
                                "",
                                failed=True,
                                input_failed=True,
                            ),
                        )  # fmt: skip
                    )
                continue
            memory, limit = _memory(p, cell)
            if memory.summary is not None:
                report.summaries += 1
                report.summaries_cut += int(memory.summary_cut)
            for tags in grid.tags:
                prompt = render_decision_prompt(p.task, memory, tags, seed)  # type: ignore[arg-type]
                choices = StructuredOutput(choices=tuple(p.task.options))
                requests.append(stage_request(profile, stage_settings(stage, choices), prompt))
                plans.append((p, cell, tags, memory, limit))
    responses, keys = send(client, requests, stage, report)
    decided: dict[tuple[int, Cell, str], Decision] = {}
    for (p, cell, tags, memory, limit), response, key in zip(plans, responses, keys, strict=True):
        errors = _cell_errors(p, cell, policy_spec(cell.policy).needs)
        answer = None
        if not response.ok:
            errors.insert(0, f"call failed: {response.error}")
        else:
            options = tuple(p.task.options)
            parsed = response.parsed if response.parsed in options else None
            answer = parsed or parse_choice(response.text, options)
            if answer is None:
                errors.insert(0, "answer names no single option")
        decided[(id(p), cell, tags)] = Decision(
            p.task, cell, tags, memory, limit, answer, "; ".join(errors), key,
            failed=not response.ok,
        )  # fmt: skip
    for p, decision in unsent:
        decided[(id(p), decision.cell, decision.tags)] = decision
    # Rows in grid order (task, cell, tag mode), whichever decisions were sent.
    decisions = [
        decided[(id(p), cell, tags)] for p in prepared for cell in cells for tags in grid.tags
    ]
    for decision in decisions:
        report.decisions += 1
        report.failed += int(decision.failed)
        report.invalid += int(decision.answer is None and not decision.failed)
    return decisions
