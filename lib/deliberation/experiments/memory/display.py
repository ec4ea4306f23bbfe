"""Views for JupyterLab and the terminal: a memory as the decision model sees it, by true role.

:func:`show_memory` runs one task through the memory pipeline for one cell (through the
response cache, so after a run it sends nothing) and returns a :class:`_MemoryView`, which
Jupyter renders as HTML (``_repr_html_``; no widget server) and a terminal or ``print`` as
text (``__repr__``/``__str__``: each note line tagged with its role). Only the task and the
policy are needed: the profile defaults to ``DELIBERATION_PROFILE`` (else ``sim``), its client
is opened once per profile, and a budgeted policy gets the primary budget r = 0.6.
:func:`memory_html` draws a :class:`~deliberation.experiments.memory.pipeline.Decision` already
made.

Each note line of the prompt is coloured by its fact's true role (support, decoy, irrelevant;
grey when the task has no roles, as in HiddenBench) and annotated with its holder count; the
header says the budget used, the answer and whether it was right.
"""

from __future__ import annotations

import html
import os
from dataclasses import dataclass
from typing import Any

from deliberation.experiments.memory.decision import (
    memory_lines,
    render_decision_prompt,
    shuffle_rng,
)
from deliberation.publish.provenance import SYNTHETIC_LABEL

ROLE_COLOURS = {"support": "#d9f2d9", "decoy": "#f9d6d5", "irrelevant": "#e6e6e6"}
_UNKNOWN_COLOUR = "#f4f4f4"


@dataclass(frozen=True, repr=False)
class _MemoryView:
    """A rendered decision prompt: Jupyter shows ``html``, a terminal ``text``."""

    html: str
    prompt: str
    text: str = ""

    def _repr_html_(self) -> str:
        return self.html

    def __repr__(self) -> str:
        return self.text or self.prompt

    __str__ = __repr__


def _legend() -> str:
    swatches = "".join(
        f'<span style="background:{colour};padding:1px 6px;margin-right:6px">{role}</span>'
        for role, colour in ROLE_COLOURS.items()
    )
    return f'<div style="font-size:85%;margin:4px 0">true role: {swatches}</div>'


def memory_html(decision, seed: int = 0, *, synthetic: bool = False) -> _MemoryView:
    """The decision's prompt, line by line, with note lines coloured by true role."""
    task, memory = decision.task, decision.memory
    prompt = render_decision_prompt(task, memory, decision.tags, seed)
    roles = {f.id: getattr(f, "role", None) for f in task.facts}
    notes: dict[str, object] = {}
    if memory.summary is None:
        rng = shuffle_rng(task.id, memory, seed) if decision.tags == "shuffle" else None
        shown = memory_lines(memory, decision.tags, rng)
        notes = dict(zip(shown, memory.items, strict=True))
    body, text = [], []
    for line in prompt.splitlines():
        item = notes.get(line)
        if item is None:
            body.append(f"<div>{html.escape(line) or '&nbsp;'}</div>")
            text.append(f"{'':14}{line}")
            continue
        role = roles.get(item.fact_id)
        colour = ROLE_COLOURS.get(role, _UNKNOWN_COLOUR)
        note = f"{role or 'role unknown'}, {item.n_holders} holder{'s' * (item.n_holders != 1)}"
        text.append(f"{'[' + (role or '?') + ']':14}{line}")
        body.append(
            f'<div style="background:{colour}">{html.escape(line)}'
            f'<span style="float:right;color:#555;font-size:85%">{html.escape(note)}</span></div>'
        )
    capacity = decision.cell.budget, decision.cell.item_limit
    if capacity[0] is not None:
        budget = f"r = {capacity[0]:g}: {memory.kept_tokens} of {decision.budget_tokens} tokens"
    elif capacity[1] is not None:
        budget = f"{len(memory.items)} of {capacity[1]} items ({memory.kept_tokens} tokens)"
    else:
        budget = f"no budget ({memory.kept_tokens} tokens)"
    answer = decision.answer or "(invalid: names no single option)"
    verdict = "right" if decision.answer == task.correct else "wrong"
    label = f" · {SYNTHETIC_LABEL}" if synthetic else ""
    header = (
        f"<b>{html.escape(task.id)}</b> · policy <b>{html.escape(decision.cell.policy)}</b> · "
        f"tags {decision.tags} · {html.escape(budget)}<br>answer: <b>{html.escape(answer)}</b> "
        f"({verdict}; key {html.escape(task.correct)}){label}"
    )
    page = (
        f'<div style="font-family:monospace;font-size:12px;border:1px solid #ccc;padding:6px">'
        f"{header}{_legend()}{''.join(body)}</div>"
    )
    head = (
        f"{task.id} · policy {decision.cell.policy} · tags {decision.tags} · {budget}\n"
        f"answer: {answer} ({verdict}; key {task.correct}){label}\n"
        "note lines are marked with their true role (not shown to the model)\n"
    )
    return _MemoryView(html=page, prompt=prompt, text=head + "\n".join(text))


_RUNS: dict[str, tuple[Any, Any]] = {}  # profile name -> (profile, client), opened once


def _profile_and_client(profile: Any, client: Any) -> tuple[Any, Any]:
    """The given profile and client, or the defaults: ``DELIBERATION_PROFILE`` (else ``sim``)
    and its run client (``open_run``: labelled synthetic when a serve-sim answers)."""
    from deliberation.inference import open_run
    from deliberation.profiles.profile import load_profile

    if profile is None or isinstance(profile, str | os.PathLike):
        profile = load_profile(profile or os.environ.get("DELIBERATION_PROFILE") or "sim")
    if client is None:
        if profile.name not in _RUNS:
            _RUNS[profile.name] = open_run(profile, progress=False)
        profile, client = _RUNS[profile.name]
    return profile, client


def find_task(task_id: str, seed: int = 0) -> Any:
    """A CrossProfile task by id, ``<template>/<variant>`` (``education-01/SP-DS-IP``), or a
    template id alone (its classic cell: support private, decoys shared, irrelevant private)."""
    from deliberation.benchmarks.crossprofile import derive_task
    from deliberation.benchmarks.crossprofile.memory import verified_bank
    from deliberation.benchmarks.crossprofile.variants import OwnershipVariant

    template_id, _, variant = task_id.partition("/")
    for template in verified_bank():
        if template.id == template_id:
            return derive_task(template, OwnershipVariant.parse(variant or "SP-DS-IP"), seed)
    raise KeyError(f"no CrossProfile template {template_id!r} (see templates/crossprofile/)")


def show_memory(
    task,
    policy: str = "R1",
    budget: float | None = None,
    tags: str = "keep",
    *,
    profile=None,
    client=None,
    item_limit: int | None = None,
    benchmark: str = "crossprofile",
) -> _MemoryView:
    """Build ``task``'s memory under ``policy`` (token budget fraction ``budget``, default the
    primary r = 0.6; or ``item_limit`` items; neither for a reference policy), send the decision
    through the cache, and show the prompt as the model saw it. ``task`` is a task of the
    registered memory ``benchmark`` (or a CrossProfile task id); ``profile`` (a profile or its
    name) and ``client`` default as the module says."""
    from deliberation.benchmarks import memory_benchmark
    from deliberation.experiments.memory.grid import Grid
    from deliberation.experiments.memory.pipeline import RunReport, decide, prepare
    from deliberation.memory_policies import PRIMARY_FRACTION, policy_spec

    profile, client = _profile_and_client(profile, client)
    if isinstance(task, str):
        task = find_task(task, seed=profile.seed)
    spec = policy_spec(policy)
    if spec.budgeted and budget is None and item_limit is None:
        budget = PRIMARY_FRACTION
    grid = Grid(
        policies=(policy,),
        budgets=(budget,) if budget is not None else (),
        item_limit=item_limit,
        tags=(tags,),
    )
    found = memory_benchmark(benchmark)
    report = RunReport()
    prepared = prepare(
        [task],
        grid,
        stage_prefix=benchmark,
        profile=profile,
        client=client,
        seed=profile.seed,
        truth=found.truth,
        report=report,
    )
    decisions = decide(
        prepared, grid, stage_prefix=benchmark, profile=profile, client=client,
        seed=profile.seed, report=report, progress=False,
    )  # fmt: skip
    return memory_html(decisions[0], profile.seed, synthetic=profile.synthetic)
