"""A corpus of real free-text answers, read by hand, that measures :func:`parse_choice`.

Constrained decoding makes a reply parse by construction; without it (a server that ignores the
constraint, an API without structured output) the parser reads free text, and its precision
(a parse names the option the reply chooses) decides whether accuracies count real choices.
This module renders the project's own decision and vote prompts (CrossProfile decisions across
templates, ownership variants, policies, budgets and holder-tag modes; HiddenBench decisions;
natural-discussion votes before and after a discussion), sends them through the cached client
of a profile whose structured output is off, and writes one JSON line per reply. A person then
adds each reply's ``label`` (the option a careful reader says it chooses, or null) by reading
it; :func:`measure` scores the parser against those labels. Re-collecting keeps the labels of
replies that did not change and leaves new replies unlabelled (``label`` absent), so nothing is
ever labelled by the parser itself.

    deliberation parse-corpus collect --profile smollm2-135m-llamacpp-free \\
        --out tests/fixtures/choice_replies/replies.jsonl
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deliberation.discussion import memory_candidates, scripted_discussion
from deliberation.experiments.memory.decision import render_decision_prompt
from deliberation.experiments.natural import prompts as natural_prompts
from deliberation.inference.answer_parsing import parse_choice
from deliberation.inference.base import ChatRequest, StructuredOutput
from deliberation.inference.generation import StageSettings, stage_request
from deliberation.io.atomic import atomic_path
from deliberation.memory_policies import Capacity, MemoryPool, budget_tokens, build_memory

# Cells per CrossProfile task: first-mention memories of growing budget share their prompt's
# prefix (the server reuses it), the other policies vary what the notes hold.
_CROSSPROFILE_CELLS: tuple[tuple[str, float | None], ...] = (
    ("empty", None),
    ("B4", 0.4),
    ("B4", 0.8),
    ("all", None),
    ("R1", 0.6),
    ("Random", 0.6),
)
_HIDDENBENCH_CELLS: tuple[tuple[str, float | None], ...] = (("B4", 0.6), ("all", None))
_TAG_CYCLE = ("keep", "remove", "shuffle")


@dataclass(frozen=True)
class _CorpusPrompt:
    """One prompt of the corpus: what was asked, of which options, and where it comes from."""

    stage: str  # "decision" or "vote"
    source: str  # benchmark/task/cell, readable and unique
    options: tuple[str, ...]
    letters_shown: bool
    prompt: str
    request_stage: str  # the stage tag sent with the request


def prompt_shows_letters(prompt: str, options: Sequence[str]) -> bool:
    """Whether the prompt labels its options with letters ("A. name", "(A) name", "A) name"),
    so that a reply's bare letter can mean an option's position."""
    labels = [
        re.search(
            rf"(?m)^\s*[-*]?\s*(?:\({chr(65 + i)}\)|{chr(65 + i)}[.):])\s*{re.escape(o)}", prompt
        )
        for i, o in enumerate(options)
    ]
    return bool(options) and all(labels)


def _memory_prompt(task: Any, policy: str, budget: float | None, tags: str, seed: int) -> str:
    transcript = scripted_discussion(task, seed)
    pool = MemoryPool(
        task_id=task.id,
        seed=seed,
        candidates=memory_candidates(transcript),
        options=tuple(task.options),
    )
    capacity = None if budget is None else Capacity.tokens(budget_tokens(pool.candidates, budget))
    memory = build_memory(policy, pool, capacity)
    return render_decision_prompt(task, memory, tags, seed)  # type: ignore[arg-type]


def decision_prompts(
    benchmark: str,
    tasks: Sequence[Any],
    cells: Sequence[tuple[str, float | None]],
    seed: int = 0,
) -> list[_CorpusPrompt]:
    """Every cell of every task, the holder-tag mode cycling over tasks (identical prompts,
    e.g. the empty memory under two tag modes, are kept once)."""
    out: dict[str, _CorpusPrompt] = {}
    for index, task in enumerate(tasks):
        tags = _TAG_CYCLE[index % len(_TAG_CYCLE)]
        for policy, budget in cells:
            prompt = _memory_prompt(task, policy, budget, tags, seed)
            cell = policy if budget is None else f"{policy}@{budget}"
            source = f"{benchmark}/{task.id}/{cell}/{tags}"
            options = tuple(task.options)
            out.setdefault(
                prompt,
                _CorpusPrompt(
                    "decision",
                    source,
                    options,
                    prompt_shows_letters(prompt, options),
                    prompt,
                    f"{benchmark}.decision",
                ),
            )
    return list(out.values())


def _vote_prompts(
    benchmark: str, tasks: Sequence[Any], agents: int = 2, seed: int = 0
) -> list[_CorpusPrompt]:
    """Initial and final votes of the first ``agents`` agents of every task; the final vote
    reads a scripted discussion (each agent's message states the facts it holds)."""
    from deliberation.experiments.natural.discussion import briefing

    out = []
    for task in tasks:
        options = tuple(task.options)
        discussion = [
            (turn.agent, " ".join(s.text for s in turn.statements))
            for turn in scripted_discussion(task, seed).turns
            if turn.statements
        ]
        for agent, when in itertools.product(tuple(task.agents)[:agents], ("initial", "final")):
            prompt = natural_prompts.vote_prompt(
                task.description,
                tuple(task.criteria),
                options,
                agent,
                len(task.agents),
                briefing(task, agent, seed),
                None if when == "initial" else discussion,
            )
            out.append(
                _CorpusPrompt(
                    "vote",
                    f"natural-{benchmark}/{task.id}/{agent}/{when}",
                    options,
                    prompt_shows_letters(prompt, options),
                    prompt,
                    f"natural.{benchmark}.vote.{when}",
                )
            )
    return out


def corpus_prompts(
    *,
    crossprofile_templates: int | None = None,
    hiddenbench_tasks: int | None = None,
    vote_tasks: int | None = 24,
    seed: int = 0,
) -> list[_CorpusPrompt]:
    """The corpus's prompts: one ownership variant per CrossProfile template (cycling over the
    eight), the HiddenBench tasks, and votes on CrossProfile and HiddenBench tasks."""
    from deliberation.benchmarks.crossprofile.memory import crossprofile_tasks
    from deliberation.benchmarks.hiddenbench.tasks import load_hiddenbench

    by_template: dict[str, list[Any]] = {}
    for task in crossprofile_tasks("all", seed=seed):
        by_template.setdefault(task.template, []).append(task)
    crossprofile = [
        variants[index % len(variants)]
        for index, variants in enumerate(list(by_template.values())[:crossprofile_templates])
    ]
    hiddenbench = load_hiddenbench(seed=seed)[:hiddenbench_tasks]
    half = None if vote_tasks is None else vote_tasks // 2
    return [
        *decision_prompts("crossprofile", crossprofile, _CROSSPROFILE_CELLS, seed),
        *decision_prompts("hiddenbench", hiddenbench, _HIDDENBENCH_CELLS, seed),
        *_vote_prompts("crossprofile", crossprofile[::3][:half], seed=seed),
        *_vote_prompts("hiddenbench", hiddenbench[::3][:half], seed=seed),
    ]


def _corpus_request(profile: Any, item: _CorpusPrompt) -> ChatRequest:
    """The request a run would send for ``item`` (its structured spec is dropped on the wire by
    a profile whose ``openai.structured_output`` is ``none``)."""
    if item.stage == "vote":
        structured = StructuredOutput(json_schema=natural_prompts.vote_schema(item.options))
    else:
        structured = StructuredOutput(choices=item.options)
    return stage_request(
        profile, StageSettings(item.request_stage, structured=structured), item.prompt
    )


def collect(profile: Any, items: Sequence[_CorpusPrompt], client: Any) -> list[dict[str, Any]]:
    """Send ``items`` (cache first) and return one record per answered prompt, unlabelled."""
    requests = [_corpus_request(profile, item) for item in items]
    responses = client.generate(requests, desc="choice corpus")
    records = []
    for item, request, response in zip(items, requests, responses, strict=True):
        if not response.ok:
            continue
        records.append(
            {
                "key": client.key(request),
                "stage": item.stage,
                "source": item.source,
                "options": list(item.options),
                "letters_shown": item.letters_shown,
                "finish_reason": response.finish_reason,
                "reply": response.text,
            }
        )
    return records


def merge_labels(
    records: Iterable[dict[str, Any]], labelled: Iterable[dict[str, Any]]
) -> list[dict[str, Any]]:
    """``records`` with the ``label`` (and ``note``) of the labelled record of the same key and
    reply; a reply read by nobody yet stays without ``label``."""
    known = {(r["key"], r["reply"]): r for r in labelled if "label" in r}
    merged = []
    for record in records:
        old = known.get((record["key"], record["reply"]))
        extra = {k: old[k] for k in ("label", "note") if old is not None and k in old}
        merged.append({**record, **extra})
    return merged


def read_corpus(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def write_corpus(records: Sequence[dict[str, Any]], path: Path) -> Path:
    with atomic_path(path) as tmp:
        Path(tmp).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    return Path(path)


@dataclass(frozen=True)
class _ParserScore:
    """How a parser reads the labelled corpus."""

    replies: int
    labelled_choices: int  # replies whose label is an option
    parsed: int  # replies the parser gave an option for
    correct: int  # parses equal to the label

    @property
    def precision(self) -> float:
        return self.correct / self.parsed if self.parsed else 1.0

    @property
    def recall(self) -> float:
        return self.correct / self.labelled_choices if self.labelled_choices else 1.0


def measure(
    records: Sequence[dict[str, Any]],
    parse: Callable[[dict[str, Any]], str | None] | None = None,
) -> tuple[_ParserScore, list[tuple[dict[str, Any], str | None]]]:
    """The parser's score on labelled ``records`` and the records it read wrongly (with its
    reading). ``parse`` defaults to :func:`parse_choice` told whether the prompt showed letters."""
    unlabelled = [r["source"] for r in records if "label" not in r]
    if unlabelled:
        raise ValueError(f"{len(unlabelled)} replies are not labelled yet, e.g. {unlabelled[0]}")
    parse = parse or (
        lambda r: parse_choice(r["reply"], r["options"], letters_shown=r["letters_shown"])
    )
    parsed = correct = 0
    wrong = []
    for record in records:
        got = parse(record)
        parsed += got is not None
        correct += got is not None and got == record["label"]
        if got != record["label"]:
            wrong.append((record, got))
    choices = sum(r["label"] is not None for r in records)
    return _ParserScore(len(records), choices, parsed, correct), wrong
