"""The DHD protocol through the response cache: recruit -> hypothesize -> pool -> replay -> evaluate.

Each stage sends all its requests in one batch through the client (identical prompts
once; every answer committed as it arrives), so a crashed run resumes by running it again. The
stage settings the protocol needs are stated here (recruiter, integrator and judge at temperature
0; hypothesizers at 0.7 with a seed per draw); the profile sets everything else.

- :func:`build_pools` recruits five roles per problem (the recruiter sees the problem only),
  draws five independent hypothesizer replies, and stores each pool once (:class:`PoolStore`).
- :func:`run_replays` sends the integrator calls of any list of :class:`Replay` and grades them:
  the benchmark's own grader, or a judge call (stage ``dhd.judge``) for items only a judge can
  grade. A grader or judge that cannot decide is an operational failure (``valid`` 0 with the
  reason), never a wrong answer.
- :func:`proposal_rows` grades each message's proposed answer (proposal correctness).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from deliberation.benchmarks import problems
from deliberation.benchmarks.problems import Item
from deliberation.experiments.dhd import synthetic
from deliberation.experiments.dhd.judge import JudgeReplyError, judge_request, parse_judge_reply
from deliberation.experiments.dhd.pool import (
    RECRUITER_CALL_FAILED,
    Pool,
    PoolStore,
    Role,
    message_from_reply,
)
from deliberation.experiments.dhd.prompts import (
    HYPOTHESIZER_STAGE,
    HYPOTHESIZER_SYSTEM,
    HYPOTHESIZER_USER,
    INTEGRATOR_STAGE,
    JUDGE_STAGE,
    N_ROLES,
    RECRUITER_SCHEMA,
    RECRUITER_STAGE,
    RECRUITER_SYSTEM,
    RECRUITER_USER,
)
from deliberation.experiments.dhd.replay import Replay, integrator_messages
from deliberation.inference.base import ChatRequest, ChatResponse, StructuredOutput
from deliberation.inference.batch import StageCounts, send
from deliberation.inference.client import Client
from deliberation.inference.generation import StageSettings, stage_request
from deliberation.profiles.profile import Profile
from deliberation.seeds import stable_seed

log = logging.getLogger(__name__)

# Columns of the replay rows (documented in deliberation.experiments.dhd.labels).
REPLAY_COLUMNS = [
    "problem",
    "benchmark",
    "k",
    "message",
    "arm",
    "replicate",
    "block",
    "answer",
    "correct",
    "valid",
    "error",
    "key",
]
PROPOSAL_COLUMNS = [
    "problem",
    "benchmark",
    "message",
    "role",
    "proposed_answer",
    "proposal_correct",
    "parse_error",
    "error",
    "key",
]
_FINAL_LINE = re.compile(r"final answer\s*[:=]\s*(.+)", re.IGNORECASE)

# What each stage fixes about its requests; the profile supplies the rest (max_tokens, top_p,
# seed). The recruiter's structured output is its JSON schema.
# Five roles with a sentence each need room whatever the profile caps free text at (at 128
# tokens every SmolLM2-135M recruiter reply was cut inside its fourth role).
RECRUITER_MAX_TOKENS = 512
RECRUITER = StageSettings(
    RECRUITER_STAGE,
    temperature=0.0,
    structured=StructuredOutput(json_schema=RECRUITER_SCHEMA),
    max_tokens=RECRUITER_MAX_TOKENS,
)
_HYPOTHESIZER = StageSettings(HYPOTHESIZER_STAGE, temperature=0.7)
INTEGRATOR = StageSettings(INTEGRATOR_STAGE, temperature=0.0)


def _hypothesizer_seed(seed: int, problem_id: str, index: int) -> int:
    """The seed of hypothesizer ``index`` on a problem: one draw each, reproducible."""
    return stable_seed("dhd-hypothesizer", seed, problem_id, index)


def problem_text(item: Item) -> str:
    return problems.question_text(item) if item.benchmark != synthetic.BENCHMARK else item.question


def _recruiter_request(profile: Profile, item: Item) -> ChatRequest:
    """The recruiter's call for ``item`` under ``profile``."""
    return stage_request(
        profile,
        RECRUITER,
        RECRUITER_USER.format(problem=problem_text(item)),
        system=RECRUITER_SYSTEM,
    )


def _hypothesizer_request(profile: Profile, item: Item, index: int, role: Role) -> ChatRequest:
    """Hypothesizer ``index``'s call (playing ``role``) for ``item`` under ``profile``."""
    return stage_request(
        profile,
        _HYPOTHESIZER,
        HYPOTHESIZER_USER.format(problem=problem_text(item)),
        system=HYPOTHESIZER_SYSTEM.format(role=role.name, focus=role.focus),
        seed=_hypothesizer_seed(profile.seed, item.id, index),
    )


class StalePoolError(ValueError):
    """A stored pool was drawn by other requests than this run would send."""


def _check_drawn_as_now(
    pool: Pool, profile: Profile, client: Client, item: Item, store: PoolStore
) -> None:
    """Refuse a stored pool whose recruiter or hypothesizer calls differ from the ones this run
    would send (the profile, a stage's settings or a prompt changed since it was drawn): the
    cache key is what is sent, and a pool must not outlive the requests that drew it. Pools are
    never edited, so the error names the file to delete."""
    expected = [client.key(_recruiter_request(profile, item))]
    expected += [
        client.key(_hypothesizer_request(profile, item, m.index, m.role)) for m in pool.messages
    ]
    stored = [pool.recruiter_key, *(m.key for m in pool.messages)]
    if stored != expected:
        raise StalePoolError(
            f"{store.path(item.benchmark, item.id)}: this pool was drawn with other requests than"
            " this run sends (the profile, a DHD stage's settings or its prompts changed since);"
            " pools are never edited: delete the file (or the profile's dhd-pools folder) to"
            " draw it again"
        )


def _parse_roles(response: ChatResponse) -> tuple[list[Role] | None, str | None]:
    """The recruiter's five roles, or why they cannot be used."""
    if not response.ok:
        return None, f"{RECRUITER_CALL_FAILED}: {response.error}"
    payload: Any = response.parsed
    if payload is None:
        try:
            payload = json.loads(response.text)
        except json.JSONDecodeError:
            return None, "recruiter reply is not JSON"
    try:
        roles = [Role(str(r["name"]).strip(), str(r["focus"]).strip()) for r in payload["roles"]]
    except (KeyError, TypeError):
        return None, "recruiter reply has no roles list of {name, focus}"
    if len(roles) != N_ROLES:
        return None, f"recruiter gave {len(roles)} roles, not {N_ROLES}"
    if len({r.name.lower() for r in roles}) != N_ROLES or not all(r.name for r in roles):
        return None, "recruiter roles are not five distinct names"
    return roles, None


@dataclass(frozen=True)
class PoolStageCounts:
    problems: int
    recruiter_failures: int
    messages: int
    call_failures: int
    parse_failures: int
    failed_pools: int = 0  # pools holding a failed call: not stored, not replayed


def build_pools(
    profile: Profile,
    client: Client,
    items: Sequence[Item],
    store: PoolStore,
    counts: list[StageCounts] | None = None,
) -> tuple[dict[str, Pool], PoolStageCounts]:
    """Recruit, hypothesize and store a pool for every item (a stored pool is reused as is)."""
    pools: dict[str, Pool] = {}
    todo = []
    for item in items:
        stored = store.get(item.benchmark, item.id)
        if stored is not None and not stored.failed_calls:
            _check_drawn_as_now(stored, profile, client, item, store)
            pools[item.id] = stored
        else:
            todo.append(item)
    recruit_requests = [_recruiter_request(profile, item) for item in todo]
    recruit_responses, recruit_keys = send(client, recruit_requests, RECRUITER_STAGE, counts)
    hyp_requests: list[ChatRequest] = []
    plans: list[tuple[Item, str, list[Role] | None, str | None]] = []
    for item, key, response in zip(todo, recruit_keys, recruit_responses, strict=True):
        roles, error = _parse_roles(response)
        plans.append((item, key, roles, error))
        for index, role in enumerate(roles or [], start=1):
            hyp_requests.append(_hypothesizer_request(profile, item, index, role))
    hyp_answers, hyp_keys = send(client, hyp_requests, HYPOTHESIZER_STAGE, counts)
    hyp_responses = iter(zip(hyp_keys, hyp_answers, strict=True))
    for item, recruiter_key, roles, error in plans:
        messages = []
        for index, role in enumerate(roles or [], start=1):
            key, response = next(hyp_responses)
            messages.append(message_from_reply(index, role, response.text, key, response.error))
        pool = Pool(item.id, item.benchmark, tuple(messages), recruiter_key, error)
        if not pool.failed_calls:  # a pool with a failed call is not final: never stored
            store.put(pool)
        pools[item.id] = pool
    # In the items' order, however many were stored before (a resumed run's rows equal a fresh
    # run's).
    pools = {item.id: pools[item.id] for item in items}
    all_messages = [m for p in pools.values() for m in p.messages]
    counts = PoolStageCounts(
        problems=len(pools),
        recruiter_failures=sum(p.recruiter_error is not None for p in pools.values()),
        messages=len(all_messages),
        call_failures=sum(m.error is not None for m in all_messages),
        parse_failures=sum(m.parse_error is not None for m in all_messages),
        failed_pools=sum(bool(p.failed_calls) for p in pools.values()),
    )
    return pools, counts


def _final_answer_text(reply: str) -> str:
    """The text after the last ``Final answer:`` (for display in rows; graders read the reply)."""
    matches = _FINAL_LINE.findall(reply)
    return matches[-1].strip() if matches else ""


@dataclass(frozen=True)
class Outcome:
    correct: int | None
    error: str | None


def _grade_reply(item: Item, reply: str) -> Outcome:
    """The benchmark's own grader; ``JudgeRequired`` is left to the caller. A grader that cannot
    decide (e.g. a timeout) is an operational failure with its reason, never a wrong answer."""
    if item.benchmark == synthetic.BENCHMARK:
        return Outcome(int(synthetic.grade(item, reply) == 1.0), None)
    graded = problems.grade(item, reply)
    if graded.failed:
        return Outcome(None, f"grading failed: {graded.failure}")
    # Partial credit (JEEBench multiple-answer) counts as not fully correct in the 0/1 label.
    return Outcome(int(graded.score >= 1.0), None)


def run_replays(
    profile: Profile,
    client: Client,
    items: Mapping[str, Item],
    pools: Mapping[str, Pool],
    replays: Sequence[Replay],
    *,
    label: str = INTEGRATOR_STAGE,
    counts: list[StageCounts] | None = None,
) -> pd.DataFrame:
    """Send every replay's integrator call in one batch, grade it, and return replay rows
    (``label`` names the batch in the stage counts appended to ``counts``)."""
    requests = []
    for replay in replays:
        item = items[replay.problem_id]
        system, user = integrator_messages(problem_text(item), pools[replay.problem_id], replay)
        requests.append(
            stage_request(profile, INTEGRATOR, user, system=system, sample=replay.replicate)
        )
    responses, keys = send(client, requests, label, counts)
    grades: list[Outcome | None] = []
    judge_needed: list[tuple[int, ChatRequest]] = []
    for position, (replay, response) in enumerate(zip(replays, responses, strict=True)):
        item = items[replay.problem_id]
        if not response.ok:
            grades.append(Outcome(None, f"integrator call failed: {response.error}"))
            continue
        try:
            grades.append(_grade_reply(item, response.text))
        except problems.omnimath.JudgeRequired:
            grades.append(None)
            judge_needed.append((position, judge_request(item, response.text)))
    if judge_needed:
        verdicts, _ = send(client, [r for _, r in judge_needed], JUDGE_STAGE, counts)
        for (position, _), verdict in zip(judge_needed, verdicts, strict=True):
            grades[position] = _judge_grade(verdict)
    rows = []
    for replay, key, response, grade in zip(replays, keys, responses, grades, strict=True):
        assert grade is not None
        rows.append(
            {
                "problem": replay.problem_id,
                "benchmark": replay.benchmark,
                "k": replay.k,
                "message": replay.message,
                "arm": replay.arm,
                "replicate": replay.replicate,
                "block": replay.block,
                "answer": _final_answer_text(response.text) if response.ok else "",
                "correct": grade.correct,
                "valid": int(grade.error is None),
                "error": grade.error or "",
                "key": key,
            }
        )
    frame = pd.DataFrame(rows, columns=REPLAY_COLUMNS)
    for column in ("message", "block", "correct"):
        frame[column] = frame[column].astype("Int64")
    return frame


def _judge_grade(verdict: ChatResponse) -> Outcome:
    if not verdict.ok:
        return Outcome(None, f"judge call failed: {verdict.error}")
    try:
        return Outcome(int(parse_judge_reply(verdict.text) == 1.0), None)
    except JudgeReplyError as error:
        return Outcome(None, f"judge verdict unreadable: {error}")


def proposal_rows(items: Mapping[str, Item], pools: Mapping[str, Pool]) -> pd.DataFrame:
    """One row per pool message: its proposed answer graded by the benchmark's grader (a judge
    item's proposal is graded by rule where possible, else left unreadable)."""
    rows = []
    for problem_id, pool in pools.items():
        item = items[problem_id]
        for message in pool.messages:
            answer = message.proposed_answer
            correct: int | None = None
            if answer is not None:
                try:
                    correct = _grade_reply(item, f"Final answer: {answer}").correct
                except problems.omnimath.JudgeRequired:
                    correct = None
            rows.append(
                {
                    "problem": problem_id,
                    "benchmark": pool.benchmark,
                    "message": message.index,
                    "role": message.role.name,
                    "proposed_answer": answer or "",
                    "proposal_correct": correct,
                    "parse_error": message.parse_error or "",
                    "error": message.error or "",
                    "key": message.key,
                }
            )
    frame = pd.DataFrame(rows, columns=PROPOSAL_COLUMNS)
    frame["proposal_correct"] = frame["proposal_correct"].astype("Int64")
    return frame
