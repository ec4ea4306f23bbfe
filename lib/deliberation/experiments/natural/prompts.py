"""Every prompt text of the natural (free) discussion, in one place (beside :mod:`.prompts`).

The protocol follows HiddenBench's original code (``../shared/data/hiddenbench/SOURCE.md``):
each agent sees the decision and only the facts it holds, numbered and shuffled, with a note
that their order carries no meaning; it votes (JSON ``{"vote", "rationale"}``), speaks in two
rounds seeing the others' latest messages, and votes again. Two prompt variants differ only in
the speaking instruction: ``plain`` and ``evidence-first`` (state your evidence before your
recommendation).

The sim backend reads these texts (``experiments/natural/sim.py``); the phrases it
locates are the ``*_HEADER`` constants and :data:`AGENT_MARKER`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from deliberation.experiments.memory.prompts import TRANSCRIPT_HEADER, task_header

PromptVariant = Literal["plain", "evidence-first"]
PROMPT_VARIANTS: tuple[PromptVariant, ...] = ("plain", "evidence-first")

AGENT_MARKER = "You are agent {agent}"
FACTS_HEADER = "Your information (numbered; the order carries no meaning):"
_NO_FACTS = "You hold no information of your own."
MESSAGES_HEADER = "Latest messages from the other agents:"
NO_MESSAGES = "No other agent has spoken yet."
OWN_HEADER = "Your own earlier message:"
DISCUSSION_HEADER = "The group's discussion:"

EVIDENCE_FIRST_MARKER = "First state the evidence you hold"
_SETTING = (
    "You are agent {agent}, one of {n} agents deciding together. Each agent holds"
    " information the others may not have."
)
_VOTE_INITIAL = (
    "Before the discussion, which option do you favour? Answer in JSON:"
    ' {"vote": "<one option name>", "rationale": "<one or two sentences>"}.'
)
_VOTE_FINAL = (
    "The discussion is over. Which option do you now favour? Answer in JSON:"
    ' {"vote": "<one option name>", "rationale": "<one or two sentences>"}.'
)
_SPEAK = {
    "plain": (
        "Round {round} of {rounds}. Write your message to the group: share what you think"
        " and which option you recommend. Keep it under 150 words."
    ),
    "evidence-first": (
        "Round {round} of {rounds}. Write your message to the group. "
        + EVIDENCE_FIRST_MARKER
        + " that bears on the decision, fact by fact, as precisely as you can; only then say"
        " which option you recommend. Keep it under 150 words."
    ),
}
_TRANSCRIPT_DECISION_QUESTION = (
    "Based only on the information above, which option should be chosen? "
    "Answer with the name of exactly one option."
)

_VOTE_SCHEMA_BASE = {
    "type": "object",
    "properties": {"rationale": {"type": "string"}},
    "required": ["vote", "rationale"],
    "additionalProperties": False,
}


def vote_schema(options: Sequence[str]) -> dict:
    """The structured vote: one of the options and a rationale."""
    schema = {**_VOTE_SCHEMA_BASE, "properties": dict(_VOTE_SCHEMA_BASE["properties"])}
    schema["properties"]["vote"] = {"type": "string", "enum": list(options)}
    return schema


def _briefing(
    description: str,
    criteria: Sequence[str],
    options: Sequence[str],
    agent: str,
    n_agents: int,
    facts: Sequence[str],
) -> str:
    held = (
        FACTS_HEADER + "\n" + "\n".join(f"{k}. {t}" for k, t in enumerate(facts, start=1))
        if facts
        else _NO_FACTS
    )
    return "\n\n".join(
        [
            _SETTING.format(agent=agent, n=n_agents),
            task_header(description, criteria, options),
            held,
        ]
    )


def _messages(header: str, messages: Sequence[tuple[str, str]], empty: str) -> str:
    if not messages:
        return empty
    # One line per message (a message's own line breaks collapsed), so sections stay parseable.
    return (
        header + "\n" + "\n".join(f"{agent}: {' '.join(text.split())}" for agent, text in messages)
    )


def vote_prompt(
    description: str,
    criteria: Sequence[str],
    options: Sequence[str],
    agent: str,
    n_agents: int,
    facts: Sequence[str],
    discussion: Sequence[tuple[str, str]] | None = None,
) -> str:
    """The initial vote (``discussion is None``) or the final vote after ``discussion``
    (every message of every round, as (agent, text) in speaking order)."""
    parts = [_briefing(description, criteria, options, agent, n_agents, facts)]
    if discussion is None:
        parts.append(_VOTE_INITIAL)
    else:
        parts.append(_messages(DISCUSSION_HEADER, discussion, NO_MESSAGES))
        parts.append(_VOTE_FINAL)
    return "\n\n".join(parts)


def round_prompt(
    description: str,
    criteria: Sequence[str],
    options: Sequence[str],
    agent: str,
    n_agents: int,
    facts: Sequence[str],
    *,
    round_number: int,
    rounds: int,
    own_last: str | None,
    others_latest: Sequence[tuple[str, str]],
    variant: PromptVariant,
) -> str:
    """One speaking turn: the briefing, the agent's own previous message, the others' latest
    messages, and the variant's speaking instruction."""
    if variant not in _SPEAK:
        raise ValueError(f"unknown prompt variant {variant!r}; expected one of {PROMPT_VARIANTS}")
    parts = [_briefing(description, criteria, options, agent, n_agents, facts)]
    if own_last:
        parts.append(f"{OWN_HEADER}\n{own_last}")
    parts.append(_messages(MESSAGES_HEADER, others_latest, NO_MESSAGES))
    parts.append(_SPEAK[variant].format(round=round_number, rounds=rounds))
    return "\n\n".join(parts)


def transcript_decision_prompt(
    description: str,
    criteria: Sequence[str],
    options: Sequence[str],
    messages: Sequence[tuple[str, str]],
) -> str:
    """The decision call reading the full transcript (every message, verbatim)."""
    return "\n\n".join(
        [
            task_header(description, criteria, options),
            _messages(TRANSCRIPT_HEADER, messages, "The group did not discuss."),
            _TRANSCRIPT_DECISION_QUESTION,
        ]
    )
