"""The sim's mechanism for paper 1's stages, shared by CrossProfile and HiddenBench.

Every behaviour reads the prompt text only (the sections the prompts in
``deliberation.experiments.memory.prompts`` lay out) and recovers each statement's meaning through a
*reader*: ``reader(text, options) -> Reading | None`` (the option a statement bears on, its polarity
on the criteria and its tone). CrossProfile's reader is the template bank as world knowledge;
HiddenBench's is a documented word-list reading. A statement the reader cannot match adds
nothing. Nothing here sees a task, a role or an answer key.

In full: ``docs/sim.md``, section "Memory experiments (experiments/memory/sim/mechanism.py)".
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Sequence
from typing import Any

from deliberation.benchmarks import memory_benchmark
from deliberation.benchmarks.memory_benchmark import Reader
from deliberation.experiments.memory import prompts
from deliberation.inference.base import ChatRequest, Message, StructuredOutput
from deliberation.inference.sim_registry import SimAnswer, SimContext
from deliberation.inference.tokens import count_tokens

PARAMETERS = {
    "evidence_weight": 1.0,
    "social_weight": 0.0,
    "tone_weight": 0.0,
    "choice_noise": 1.0,
    "invalid_rate": 0.0,
    "relevance_recall": 1.0,
    "relevance_false_positive": 0.0,
    "balance_recall": 1.0,
    "balance_false_positive": 0.0,
    "summary_overrun": 0.0,
}


_TAG = re.compile(r"^\[(A\d+(?:,A\d+)*)\]\s+(.*)$")
_NUMBERED = re.compile(r"^(\d+)\.\s+(.*)$")
_SPEAKER = re.compile(r"^(A\d+):\s+(.*)$")
_WORD_LIMIT = re.compile(
    re.escape(prompts.WORD_LIMIT_MARKER).replace(re.escape("{limit}"), r"(\d+)")
)


_OPTION_LIST = re.compile(rf"(^|\n){re.escape(prompts.OPTIONS_HEADER)}\n((?:- [^\n]*(?:\n|$))+)")


def _sorted_option_lists(text: str) -> str:
    """``text`` with the lines of every option list (``Options:`` then ``- name`` lines) sorted."""

    def sort_block(match: re.Match[str]) -> str:
        block = match.group(2)
        end = "\n" if block.endswith("\n") else ""
        lines = sorted(block.rstrip("\n").split("\n"))
        return f"{match.group(1)}{prompts.OPTIONS_HEADER}\n" + "\n".join(lines) + end

    return _OPTION_LIST.sub(sort_block, text)


def _sorted_enums(schema: Any) -> Any:
    """A JSON schema with every ``enum`` list sorted (the vote and label schemas list options)."""
    if isinstance(schema, dict):
        return {
            k: sorted(v, key=str) if k == "enum" and isinstance(v, list) else _sorted_enums(v)
            for k, v in schema.items()
        }
    if isinstance(schema, list):
        return [_sorted_enums(v) for v in schema]
    return schema


def order_free_request(request: ChatRequest) -> ChatRequest:
    """The request with every option list in sorted order (prompt lists, structured choices,
    schema enums): what paper 1's behaviours seed their generator from, so the order in which
    options are shown draws no different noise."""
    structured = request.structured
    if structured is not None:
        structured = (
            StructuredOutput(choices=tuple(sorted(structured.choices)))
            if structured.choices is not None
            else StructuredOutput(json_schema=_sorted_enums(dict(structured.json_schema or {})))
        )
    messages = tuple(Message(m.role, _sorted_option_lists(m.content)) for m in request.messages)
    return dataclasses.replace(request, messages=messages, structured=structured)


def param(context: SimContext, name: str) -> float:
    return context.param(name)


def section(prompt: str, header: str) -> list[str] | None:
    """The lines after the last ``header`` line up to the next blank line (None if absent).
    The last, because a task description may hold the same words (HiddenBench task 62 lists
    its options under "Options:" too); the prompt's own sections come after it."""
    start = prompt.rfind(header + "\n")
    if start < 0:
        return None
    body = prompt[start + len(header) + 1 :]
    end = body.find("\n\n")
    return (body if end < 0 else body[:end]).splitlines()


def prompt_options(prompt: str) -> list[str]:
    lines = section(prompt, prompts.OPTIONS_HEADER) or []
    return [line[2:].strip() for line in lines if line.startswith("- ")]


def _memory_notes(prompt: str) -> list[tuple[int, str]]:
    """(holders, text) for every note line or summary line of a decision prompt; a line
    without a tag counts as one holder."""
    for header in (prompts.NOTES_HEADER_TAGGED, prompts.NOTES_HEADER_PLAIN, prompts.SUMMARY_HEADER):
        lines = section(prompt, header)
        if lines is not None:
            break
    else:
        return []
    notes = []
    for line in lines:
        match = _TAG.match(line)
        if match:
            notes.append((len(match.group(1).split(",")), match.group(2)))
        elif line.strip():
            notes.append((1, line.strip()))
    return notes


def _numbered_statements(prompt: str) -> list[tuple[int, str]]:
    lines = section(prompt, prompts.STATEMENTS_HEADER) or []
    return [(int(m.group(1)), m.group(2)) for m in map(_NUMBERED.match, lines) if m]


def _line_weight(context: SimContext, holders: int) -> float:
    """What a favourable or unfavourable line held by ``holders`` agents adds to its option."""
    return param(context, "evidence_weight") + param(context, "social_weight") * (holders - 1)


def signal_to_noise(parameters: dict[str, float], holders: int) -> float:
    """A line's weight with ``holders`` holders over the choice noise, for the ``parameters``
    of a profile (missing ones at their defaults): how far one line moves a choice."""
    values = {**PARAMETERS, **parameters}
    weight = values["evidence_weight"] + values["social_weight"] * (holders - 1)
    return weight / values["choice_noise"] if values["choice_noise"] > 0 else float("inf")


def choose(
    context: SimContext,
    options: Sequence[str],
    notes: Sequence[tuple[int, str]],
    reader: Reader,
    invalid_rate: float,
) -> str | None:
    """The decision maker's mechanism on (holders, text) notes: score each option from the
    lines the reader can read, add logit noise, pick the best; None (an invalid answer) with
    probability ``invalid_rate``. Agents of a natural discussion vote with it too."""
    w_t = param(context, "tone_weight")
    scores = dict.fromkeys(options, 0.0)
    for holders, text in notes:
        reading = reader(text, options)
        if reading is None or reading.option not in scores:
            continue
        if reading.polarity:
            scores[reading.option] += reading.polarity * _line_weight(context, holders)
        else:
            scores[reading.option] += w_t * reading.tone
    rng = context.rng
    if rng.random() < invalid_rate:
        return None
    noise = param(context, "choice_noise")
    canonical = sorted(scores)  # noise per option in a fixed order: listing order tells nothing
    values = [scores[o] + (noise * rng.gumbel() if noise > 0 else 0.0) for o in canonical]
    best = max(values)
    tied = [o for o, v in zip(canonical, values, strict=True) if math.isclose(v, best)]
    return tied[int(rng.integers(len(tied)))] if len(tied) > 1 else tied[0]


def decide(
    context: SimContext, reader: Reader, notes: Sequence[tuple[int, str]] | None = None
) -> SimAnswer:
    """Score each option from the memory lines it can read (``notes``: default the prompt's
    note or summary lines), add logit noise, pick the best."""
    prompt = context.prompt
    options = prompt_options(prompt)
    if not options:
        return SimAnswer(text="I cannot find the options in this prompt.")
    notes = _memory_notes(prompt) if notes is None else notes
    choice = choose(context, options, notes, reader, param(context, "invalid_rate"))
    if choice is None:
        names = sorted(options)
        return SimAnswer(text=f"I cannot decide between {names[0]} and {names[-1]}.")
    return SimAnswer(text=choice, parsed=choice)


def label_relevance(context: SimContext, reader: Reader) -> SimAnswer:
    """Each statement is labelled relevant with probability ``relevance_recall`` if it bears on
    the criteria (polarity != 0), ``relevance_false_positive`` otherwise."""
    options = prompt_options(context.prompt)
    recall = param(context, "relevance_recall")
    false_positive = param(context, "relevance_false_positive")
    relevant = []
    for number, text in _numbered_statements(context.prompt):
        reading = reader(text, options)
        chance = recall if reading is not None and reading.polarity else false_positive
        if context.rng.random() < chance:
            relevant.append(number)
    value = {"relevant": relevant}
    return SimAnswer(text=json.dumps(value), parsed=value)


def label_balance(context: SimContext, reader: Reader) -> SimAnswer:
    """Each statement's option and direction: evidence correctly with probability
    ``balance_recall`` (else "neither"); an irrelevant statement is called for/against its
    option by its tone with probability ``balance_false_positive``."""
    options = prompt_options(context.prompt)
    recall = param(context, "balance_recall")
    false_positive = param(context, "balance_false_positive")
    words = {1: "for", -1: "against"}
    labels = []
    for number, text in _numbered_statements(context.prompt):
        reading = reader(text, options)
        option, direction = "none", "neither"
        if reading is not None and reading.polarity:
            if context.rng.random() < recall:
                option, direction = reading.option, words[reading.polarity]
        elif reading is not None and reading.tone and context.rng.random() < false_positive:
            option, direction = reading.option, words[reading.tone]
        labels.append({"statement": number, "option": option, "direction": direction})
    value = {"labels": labels}
    return SimAnswer(text=json.dumps(value), parsed=value)


def summarize(context: SimContext) -> SimAnswer:
    """Keep the most widely held statements first (holders = speakers who said the same
    words; ties by first appearance), verbatim, one per line, up to
    ``(1 + summary_overrun) x`` the word limit the prompt states."""
    prompt = context.prompt
    lines = section(prompt, prompts.TRANSCRIPT_HEADER) or []
    speakers: dict[str, set[str]] = {}
    for line in lines:
        match = _SPEAKER.match(line)
        if match:
            speakers.setdefault(match.group(2).strip(), set()).add(match.group(1))
    limit_match = _WORD_LIMIT.search(prompt)
    limit = int(limit_match.group(1)) if limit_match else 100
    target = math.floor(limit * (1 + param(context, "summary_overrun")))
    order = sorted(speakers, key=lambda text: -len(speakers[text]))  # stable: first appearance
    kept, used = [], 0
    for text in order:
        cost = count_tokens(text)
        if used + cost <= target:
            kept.append(text)
            used += cost
    return SimAnswer(text="\n".join(kept))


# The memory experiment's stages of every registered benchmark, each answered with that
# benchmark's reader (its sim): <benchmark>.decision, .relevance, .balance and .summary.
def _reader(context: SimContext) -> Reader:
    return memory_benchmark(context.request.stage.split(".")[0]).sim_reader


def benchmark_decision(context: SimContext) -> SimAnswer:
    return decide(context, _reader(context))


def benchmark_relevance(context: SimContext) -> SimAnswer:
    return label_relevance(context, _reader(context))


def benchmark_balance(context: SimContext) -> SimAnswer:
    return label_balance(context, _reader(context))


def benchmark_summary(context: SimContext) -> SimAnswer:
    return summarize(context)
