"""Sim behaviours for the natural discussion (stages ``natural.<benchmark>.*``).

Agents and the decision maker read statements with the benchmark's reader (CrossProfile: the
template bank as world knowledge; HiddenBench: the word-list reading) and choose with the
decision maker's mechanism (:func:`deliberation.experiments.memory.sim.mechanism.choose`: evidence
and social weights, Gumbel choice noise). Nothing here sees a task object, a role or an answer key:
only the prompt text (``deliberation.experiments.natural.prompts``).

In full: ``docs/sim.md``, section "Natural discussions (experiments/natural/sim.py)".
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Sequence

import numpy as np

from deliberation.benchmarks import memory_benchmark, memory_benchmarks
from deliberation.benchmarks.crossprofile.sim import read_fact
from deliberation.discussion.statements import normalize, sentences
from deliberation.experiments.memory.sim.mechanism import (
    Reader,
    choose,
    decide,
    label_balance,
    label_relevance,
    prompt_options,
    section,
    summarize,
)
from deliberation.experiments.natural import prompts as text
from deliberation.inference.answer_parsing import parse_choice
from deliberation.inference.sim_registry import SimAnswer, SimContext
from deliberation.seeds import stable_seed

PARAMETERS = {
    "natural_disclosure": 0.2,
    "natural_evidence_first_boost": 0.0,
    "natural_paraphrase": 0.5,
    "natural_paraphrase_keep": 0.6,
    "natural_drift": 0.3,
    "natural_invalid_vote": 0.0,
}
_PARAPHRASE_PREFIX = "Roughly, from my notes:"
_NUMBERED = re.compile(r"^(\d+)\.\s+(.*)$")
_SPEAKER = re.compile(r"^(A\d+):\s*(.*)$")
_AGENT = re.compile(re.escape(text.AGENT_MARKER).replace(re.escape("{agent}"), r"(A\d+)"))


def _param(context: SimContext, name: str) -> float:
    return context.param(name, PARAMETERS[name])


def _own_facts(prompt: str) -> list[str]:
    lines = section(prompt, text.FACTS_HEADER) or []
    return [m.group(2) for m in map(_NUMBERED.match, lines) if m]


def spoken(prompt: str, header: str) -> list[tuple[str, str]]:
    """(agent, text) of every message line under ``header``."""
    lines = section(prompt, header) or []
    return [(m.group(1), m.group(2)) for m in map(_SPEAKER.match, lines) if m]


def _discussion_notes(messages: Sequence[tuple[str, str]]) -> list[tuple[int, str]]:
    """Sentences of the messages; the same sentence (normalised) from several speakers is one
    line whose holders are those speakers."""
    speakers: dict[str, set[str]] = {}
    first: dict[str, str] = {}
    for agent, message in messages:
        for sentence in sentences(message):
            key = normalize(sentence)
            first.setdefault(key, sentence)
            speakers.setdefault(key, set()).add(agent)
    return [(len(speakers[k]), first[k]) for k in first]


def majority(recommendations: Sequence[str]) -> str | None:
    """The option recommended most often, if it leads strictly."""
    counts = Counter(recommendations).most_common(2)
    if not counts or (len(counts) == 2 and counts[0][1] == counts[1][1]):
        return None
    return counts[0][0]


def _vote(
    context: SimContext,
    reader: Reader,
    options: Sequence[str],
    facts: Sequence[str],
    messages: Sequence[tuple[str, str]],
    me: str | None,
) -> str | None:
    """The agent's vote (module docstring); None for an invalid vote."""
    heard = [(a, m) for a, m in messages if a != me]  # its own words add nothing it lacks
    notes = [(1, f) for f in facts] + _discussion_notes(heard)
    choice = choose(context, options, notes, reader, _param(context, "natural_invalid_vote"))
    if choice is None:
        return None
    latest = dict(heard)  # each other agent's last message
    read = [c for c in (parse_choice(m, options) for m in latest.values()) if c]
    leader = majority(read)
    if leader is not None and context.rng.random() < _param(context, "natural_drift"):
        return leader
    return choice


def paraphrase(fact: str, keep: float, rng: np.random.Generator) -> str:
    """A seeded subset of the fact's content words, in order, after the paraphrase prefix."""
    from deliberation.discussion.statements import STOPWORDS

    words = [w for w in re.findall(r"[\w'-]+", fact) if normalize(w) not in STOPWORDS]
    if not words:
        return f"{_PARAPHRASE_PREFIX} something about it."
    n = min(len(words), max(1, math.ceil(keep * len(words))))
    kept = sorted(rng.choice(len(words), size=n, replace=False))
    return f"{_PARAPHRASE_PREFIX} {' '.join(words[i] for i in kept)}."


def _benchmark(context: SimContext) -> str:
    return context.request.stage.split(".")[1]


def _reader(context: SimContext) -> Reader:
    """The stage's benchmark's reader (CrossProfile's for a benchmark nobody registered)."""
    name = _benchmark(context)
    return memory_benchmark(name).sim_reader if name in memory_benchmarks() else read_fact


def _me(prompt: str) -> str | None:
    match = _AGENT.search(prompt)
    return match.group(1) if match else None


def natural_vote(context: SimContext) -> SimAnswer:
    prompt = context.prompt
    options = prompt_options(prompt)
    messages = spoken(prompt, text.DISCUSSION_HEADER)
    choice = _vote(context, _reader(context), options, _own_facts(prompt), messages, _me(prompt))
    value = {
        "vote": choice if choice else "undecided",
        "rationale": "From the information I hold and what I read." if choice else "Unsure.",
    }
    return SimAnswer(text=json.dumps(value), parsed=value)


def natural_turn(context: SimContext) -> SimAnswer:
    prompt = context.prompt
    options = prompt_options(prompt)
    me = _me(prompt)
    facts = _own_facts(prompt)
    messages = spoken(prompt, text.MESSAGES_HEADER)
    choice = _vote(context, _reader(context), options, facts, messages, me)
    recommend = f"I recommend {choice}." if choice else "I cannot tell which option is best."
    first_turn = section(prompt, text.OWN_HEADER) is None
    evidence_first = text.EVIDENCE_FIRST_MARKER in prompt
    if not first_turn:
        return SimAnswer(text=f"Having heard the others: {recommend}")
    p = _param(context, "natural_disclosure")
    if evidence_first:
        p = min(1.0, p + _param(context, "natural_evidence_first_boost"))
    stated = []
    seed = context.request.effective_seed()
    for fact in facts:
        rng = np.random.default_rng(stable_seed("sim-natural-disclose", me, fact, seed))
        if rng.random() < p:
            stated.append(fact if fact.rstrip()[-1:] in ".!?" else f"{fact.rstrip()}.")
        elif rng.random() < _param(context, "natural_paraphrase"):
            stated.append(paraphrase(fact, _param(context, "natural_paraphrase_keep"), rng))
    parts = [*stated, recommend] if evidence_first else [recommend, *stated]
    return SimAnswer(text=" ".join(parts))


def natural_decision(context: SimContext) -> SimAnswer:
    transcript = spoken(context.prompt, text.TRANSCRIPT_HEADER)
    notes = _discussion_notes(transcript) if transcript else None
    return decide(context, _reader(context), notes)


def natural_relevance(context: SimContext) -> SimAnswer:
    return label_relevance(context, _reader(context))


def natural_balance(context: SimContext) -> SimAnswer:
    return label_balance(context, _reader(context))


def natural_summary(context: SimContext) -> SimAnswer:
    return summarize(context)
