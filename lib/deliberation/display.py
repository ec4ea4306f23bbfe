"""HTML views for JupyterLab: a memory as the decision model sees it, coloured by true role.

:func:`show_memory` runs one task through the memory pipeline for one cell (through the
response cache, so after a run it sends nothing) and returns a :class:`MemoryView`, which
Jupyter renders as HTML (``_repr_html_``; no widget server). :func:`memory_html` draws a
:class:`~deliberation.memory_runs.pipeline.Decision` that is already made.

Each note line of the prompt is coloured by its fact's true role (support, decoy, irrelevant;
grey when the task has no roles, as in HiddenBench) and annotated with its holder count; the
header says the budget used, the answer and whether it was right.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

from deliberation.decision import memory_lines, render_decision_prompt, shuffle_rng

ROLE_COLOURS = {"support": "#d9f2d9", "decoy": "#f9d6d5", "irrelevant": "#e6e6e6"}
UNKNOWN_COLOUR = "#f4f4f4"


@dataclass(frozen=True)
class MemoryView:
    """A rendered decision prompt; Jupyter shows ``html``."""

    html: str
    prompt: str

    def _repr_html_(self) -> str:
        return self.html


def _legend() -> str:
    swatches = "".join(
        f'<span style="background:{colour};padding:1px 6px;margin-right:6px">{role}</span>'
        for role, colour in ROLE_COLOURS.items()
    )
    return f'<div style="font-size:85%;margin:4px 0">true role: {swatches}</div>'


def memory_html(decision, seed: int = 0, *, synthetic: bool = False) -> MemoryView:
    """The decision's prompt, line by line, with note lines coloured by true role."""
    task, memory = decision.task, decision.memory
    prompt = render_decision_prompt(task, memory, decision.tags, seed)
    roles = {f.id: getattr(f, "role", None) for f in task.facts}
    notes: dict[str, object] = {}
    if memory.summary is None:
        rng = shuffle_rng(task.id, memory, seed) if decision.tags == "shuffle" else None
        shown = memory_lines(memory, decision.tags, rng)
        notes = dict(zip(shown, memory.items, strict=True))
    body = []
    for line in prompt.splitlines():
        item = notes.get(line)
        if item is None:
            body.append(f"<div>{html.escape(line) or '&nbsp;'}</div>")
            continue
        role = roles.get(item.fact_id)
        colour = ROLE_COLOURS.get(role, UNKNOWN_COLOUR)
        note = f"{role or 'role unknown'}, {item.n_holders} holder{'s' * (item.n_holders != 1)}"
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
    label = " · synthetic (sim backend)" if synthetic else ""
    header = (
        f"<b>{html.escape(task.id)}</b> · policy <b>{html.escape(decision.cell.policy)}</b> · "
        f"tags {decision.tags} · {html.escape(budget)}<br>answer: <b>{html.escape(answer)}</b> "
        f"({verdict}; key {html.escape(task.correct)}){label}"
    )
    page = (
        f'<div style="font-family:monospace;font-size:12px;border:1px solid #ccc;padding:6px">'
        f"{header}{_legend()}{''.join(body)}</div>"
    )
    return MemoryView(html=page, prompt=prompt)


def show_memory(
    task,
    policy: str,
    budget: float | None = None,
    tags: str = "keep",
    *,
    profile,
    client,
    item_limit: int | None = None,
) -> MemoryView:
    """Build ``task``'s memory under ``policy`` (token budget fraction ``budget``, or
    ``item_limit`` items, or neither for a reference policy), send the decision through the
    cache, and show the prompt as the model saw it."""
    from deliberation.memory import policy_spec
    from deliberation.memory_runs.grid import Grid
    from deliberation.memory_runs.pipeline import RunReport, decide, prepare

    spec = policy_spec(policy)
    if spec.budgeted and budget is None and item_limit is None:
        raise ValueError(f"policy {policy} needs a budget or an item_limit")
    grid = Grid(
        policies=(policy,),
        budgets=(budget,) if budget is not None else (),
        item_limit=item_limit,
        tags=(tags,),
    )
    prefix = "crossprofile" if hasattr(task, "template") else "hiddenbench"
    report = RunReport()
    has_roles = all(hasattr(f, "role") for f in task.facts)
    prepared = prepare(
        [task],
        grid,
        stage_prefix=prefix,
        profile=profile,
        client=client,
        seed=profile.seed,
        truth=lambda t: {f.id: f for f in t.facts} if has_roles else None,
        report=report,
    )
    decisions = decide(
        prepared, grid, stage_prefix=prefix, profile=profile, client=client,
        seed=profile.seed, report=report, progress=False,
    )  # fmt: skip
    return memory_html(decisions[0], profile.seed, synthetic=profile.synthetic)
