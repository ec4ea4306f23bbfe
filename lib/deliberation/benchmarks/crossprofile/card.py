"""Tables and a plain-text view for the benchmark card (notebook 01): what the bank holds and
what each agent is told in a task."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from deliberation.benchmarks.crossprofile.schema import DOMAINS, Template
from deliberation.benchmarks.crossprofile.tasks import Task
from deliberation.benchmarks.crossprofile.variants import ALL_VARIANTS, CLASSIC, GROUPS


def templates_per_domain(templates: Sequence[Template]) -> pd.DataFrame:
    """Main and pilot template counts per domain (12 rows, in the format's domain order)."""
    rows = []
    for domain in DOMAINS:
        mine = [t for t in templates if t.domain == domain]
        rows.append(
            {
                "domain": domain,
                "main": sum(not t.pilot for t in mine),
                "pilot": sum(t.pilot for t in mine),
                "templates": ", ".join(sorted(t.id for t in mine)),
            }
        )
    return pd.DataFrame(rows)


def ownership_cells(tasks: Sequence[Task]) -> pd.DataFrame:
    """The 8 ownership cells: who holds each group, which roles are rare (one holder), task
    counts, and the range of facts an agent holds."""
    rows = []
    for variant in ALL_VARIANTS:
        mine = [t for t in tasks if t.variant == variant.id]
        per_agent = [len(t.held_by(a)) for t in mine for a in t.agents]
        rare = [g for g in GROUPS if variant.ownership(g) == "private"]
        rows.append(
            {
                "variant": variant.id,
                "support": variant.support,
                "decoy": variant.decoy,
                "irrelevant": variant.irrelevant,
                "rare roles (1 holder)": ", ".join(rare) or "none",
                "classic hidden profile": variant == CLASSIC,
                "main tasks": sum(not t.pilot for t in mine),
                "pilot tasks": sum(t.pilot for t in mine),
                "facts per agent": (f"{min(per_agent)}-{max(per_agent)}" if per_agent else ""),
            }
        )
    return pd.DataFrame(rows)


def task_facts(task: Task) -> pd.DataFrame:
    """A task's facts with role, option, direction and holders (the experimenter's view)."""
    return pd.DataFrame(
        [
            {
                "fact": f.id,
                "role": f.role,
                "option": f.option,
                "on": f.criterion or f.attribute,
                "polarity/tone": f"{(f.polarity or f.tone):+d}",
                "holders": ",".join(f.holders),
                "text": f.text,
            }
            for f in task.facts
        ]
    )


def agent_briefing(task: Task, agent: str) -> str:
    """What ``agent`` knows before the discussion: the decision and its own facts (no roles,
    no key, no other agent's facts)."""
    if agent not in task.agents:
        raise ValueError(f"unknown agent {agent!r}; agents are {', '.join(task.agents)}")
    lines = [
        f"Decision: {task.title}",
        task.description,
        f"Criteria: {'; '.join(task.criteria)}",
        f"Options: {', '.join(task.options)}",
        f"Your information ({agent}):",
        *[f"- {f.text}" for f in task.held_by(agent)],
    ]
    return "\n".join(lines)
