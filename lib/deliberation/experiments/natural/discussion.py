"""The natural (free) discussion: initial vote, two speaking rounds, final vote.

In full: ``docs/experiments.md``, section "The natural discussion protocol
(experiments/natural/discussion.py)".
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from deliberation.experiments.natural import prompts as text
from deliberation.inference.answer_parsing import parse_choice
from deliberation.inference.base import ChatRequest, ChatResponse, StructuredOutput
from deliberation.inference.client import Client
from deliberation.inference.generation import StageSettings, stage_request
from deliberation.seeds import stable_seed

_ROUNDS = 2


@dataclass(frozen=True)
class DiscussionSpec:
    """One discussion to hold: a task under a prompt variant with its own seed."""

    task: Any
    variant: text.PromptVariant
    replicate: int
    seed: int

    @property
    def id(self) -> str:
        return f"{self.task.id}|{self.variant}|{self.replicate}"


@dataclass(frozen=True)
class _Vote:
    agent: str
    stage: str  # "initial" or "final"
    answer: str | None
    rationale: str
    error: str
    key: str
    failed: bool = False  # no usable reply (or, for a final vote, the discussion failed)


@dataclass(frozen=True)
class Message:
    agent: str
    round: int
    text: str
    error: str
    key: str


@dataclass
class NaturalDiscussion:
    """A held discussion: briefings, turn order, messages in speaking order and votes."""

    spec: DiscussionSpec
    order: tuple[str, ...]
    briefings: dict[str, tuple[str, ...]]
    messages: list[Message] = field(default_factory=list)
    votes: list[_Vote] = field(default_factory=list)
    failed: str = ""  # why the discussion failed (a turn got no usable reply), or ""

    @property
    def task(self) -> Any:
        return self.spec.task

    def pairs(self) -> list[tuple[str, str]]:
        """(agent, text) of every message in speaking order (failed calls give no text)."""
        return [(m.agent, m.text) for m in self.messages if m.text]

    def latest(self, agent: str) -> Message | None:
        mine = [m for m in self.messages if m.agent == agent and m.text]
        return mine[-1] if mine else None


def briefing(task: Any, agent: str, seed: int) -> tuple[str, ...]:
    """The fact texts ``agent`` holds, in an order shuffled per (task, agent, seed)."""
    held = [f.text for f in task.facts if agent in f.holders]
    rng = np.random.default_rng(stable_seed("natural-briefing", task.id, agent, seed))
    return tuple(held[i] for i in rng.permutation(len(held)))


def _speaking_order(task: Any, seed: int) -> tuple[str, ...]:
    agents = tuple(task.agents)
    rng = np.random.default_rng(stable_seed("natural-turns", task.id, seed))
    return tuple(agents[i] for i in rng.permutation(len(agents)))


def read_vote(response: ChatResponse, options: Sequence[str]) -> tuple[str | None, str, str]:
    """(answer, rationale, error) of a vote; the answer is None when no single option is named."""
    if not response.ok:
        return None, "", f"call failed: {response.error}"
    parsed = response.parsed
    if not isinstance(parsed, dict):
        try:
            parsed = json.loads(response.text)
        except ValueError:
            parsed = None
    rationale = str(parsed.get("rationale", "")) if isinstance(parsed, dict) else ""
    answer = None
    if isinstance(parsed, dict) and parsed.get("vote") in options:
        answer = parsed["vote"]
    else:
        answer = parse_choice(response.text, options)
    return answer, rationale, "" if answer else "vote names no single option"


def _request(profile, stage: str, prompt: str, seed: int, structured=None) -> ChatRequest:
    return stage_request(profile, StageSettings(stage, structured=structured), prompt, seed=seed)


def _brief_args(d: NaturalDiscussion, agent: str) -> tuple:
    t = d.task
    return (t.description, tuple(t.criteria), tuple(t.options), agent, len(t.agents))


def hold_discussions(
    specs: Sequence[DiscussionSpec],
    *,
    stage_prefix: str,
    profile: Any,
    client: Client,
    report: Any,
    rounds: int = _ROUNDS,
) -> list[NaturalDiscussion]:
    """Hold every discussion in ``specs`` (module docstring); ``report`` is the run's
    :class:`deliberation.experiments.memory.pipeline.RunReport` (stage counts are added to it)."""
    from deliberation.experiments.memory.pipeline import send

    if rounds < 1:
        raise ValueError(f"a natural discussion needs at least one round, got {rounds}")
    discussions = [
        NaturalDiscussion(
            spec=s,
            order=_speaking_order(s.task, s.seed),
            briefings={a: briefing(s.task, a, s.seed) for a in s.task.agents},
        )
        for s in specs
    ]

    def votes(stage: str) -> None:
        requests = []
        for d in discussions:
            if d.failed and stage != "initial":
                continue
            schema = StructuredOutput(json_schema=text.vote_schema(d.task.options))
            for agent in d.order:
                prompt = text.vote_prompt(
                    *_brief_args(d, agent),
                    d.briefings[agent],
                    None if stage == "initial" else d.pairs(),
                )
                requests.append(
                    _request(profile, f"{stage_prefix}.vote.{stage}", prompt, d.spec.seed, schema)
                )
        responses, keys = send(client, requests, f"{stage_prefix}.vote.{stage}", report)
        flat = iter(zip(responses, keys, strict=True))
        for d in discussions:
            for agent in d.order:
                if d.failed and stage != "initial":
                    error = f"input failed, not sent: {d.failed}"
                    d.votes.append(_Vote(agent, stage, None, "", error, "", failed=True))
                    continue
                response, key = next(flat)
                answer, rationale, error = read_vote(response, tuple(d.task.options))
                d.votes.append(
                    _Vote(agent, stage, answer, rationale, error, key, failed=not response.ok)
                )

    votes("initial")
    for round_number in range(1, rounds + 1):
        stage = f"{stage_prefix}.round.{round_number}"
        for position in range(max((len(d.order) for d in discussions), default=0)):
            speaking = [d for d in discussions if position < len(d.order) and not d.failed]
            requests = []
            for d in speaking:
                agent = d.order[position]
                own = d.latest(agent)
                latest = [d.latest(a) for a in d.order if a != agent]
                heard = sorted((m for m in latest if m is not None), key=d.messages.index)
                others = [(m.agent, m.text) for m in heard]
                prompt = text.round_prompt(
                    *_brief_args(d, agent),
                    d.briefings[agent],
                    round_number=round_number,
                    rounds=rounds,
                    own_last=own.text if own else None,
                    others_latest=others,
                    variant=d.spec.variant,
                )
                requests.append(_request(profile, stage, prompt, d.spec.seed))
            responses, keys = send(client, requests, f"{stage} position {position + 1}", report)
            for d, response, key in zip(speaking, responses, keys, strict=True):
                error = "" if response.ok else f"call failed: {response.error}"
                words = response.text.strip() if response.ok else ""
                d.messages.append(Message(d.order[position], round_number, words, error, key))
                if not response.ok:
                    d.failed = (
                        f"turn of {d.order[position]} in round {round_number} failed:"
                        f" {response.error}"
                    )
    votes("final")
    return discussions
