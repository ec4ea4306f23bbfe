"""Replays: the integrator run on a chosen view of a stored pool.

A replay is a problem, its pool, a *view* of that pool (which messages are shown, and how each is
transformed: shown whole, a component masked, or swapped for a neutral stand-in) and a replicate
id. Designs build the replays an analysis needs, each labelled with the ``arm`` it belongs to,
the message whose effect it measures, the pool size ``k`` and, for repeated replays, the ``block``:

- :func:`single_message_design`: each message alone, against the no-message solver (``solo``).
- :func:`leave_one_out_design`: for K = 2..5, the first K messages (nested prefixes of the
  recruited roles) against the same pool without message i, for every i <= K.
- :func:`repeated_design`: blocks of two full-pool calls and one removal call per message; every
  replay carries its block id, so a failed call can never shift a pairing (pairs are joined on
  the block, never on position).

The ``replicate`` becomes the request's ``sample`` index: two replays of the same view are two
draws with their own cache rows, and the same replay is always the same cached call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from deliberation.experiments.dhd.messages import render_for_integrator
from deliberation.experiments.dhd.pool import Pool, PoolMessage
from deliberation.experiments.dhd.prompts import (
    INTEGRATOR_MESSAGES_HEADER,
    INTEGRATOR_NO_MESSAGES,
    INTEGRATOR_SYSTEM,
    INTEGRATOR_USER,
    NEUTRAL_MESSAGE,
)
from deliberation.inference.tokens import count_tokens

# How a shown message is transformed: whole, one component masked, or a neutral stand-in.
_TRANSFORMS = ("whole", "mask-answer", "mask-reasoning", "neutral")


@dataclass(frozen=True)
class Replay:
    """One integrator call on a view of a pool.

    ``shown`` lists (message index, transform) in the order the integrator reads them.
    ``message`` is the message whose effect the replay helps measure (None for solo/full calls
    that serve every message); ``arm`` names the condition.
    """

    problem_id: str
    benchmark: str
    arm: str
    shown: tuple[tuple[int, str], ...]
    k: int
    message: int | None = None
    replicate: int = 0
    block: int | None = None

    def __post_init__(self) -> None:
        for index, transform in self.shown:
            if transform not in _TRANSFORMS:
                raise ValueError(f"message {index}: unknown transform {transform!r}")


def _whole(indices: Sequence[int]) -> tuple[tuple[int, str], ...]:
    return tuple((i, "whole") for i in indices)


def present_indices(pool: Pool) -> list[int]:
    """Indices of the messages the integrator can be shown (calls that returned a reply)."""
    return [m.index for m in pool.messages if m.present]


def single_message_design(pool: Pool) -> list[Replay]:
    """The no-message solver, and each present message shown alone."""
    replays = [Replay(pool.problem_id, pool.benchmark, "solo", (), k=0)]
    for index in present_indices(pool):
        replays.append(
            Replay(pool.problem_id, pool.benchmark, "single", _whole([index]), k=1, message=index)
        )
    return replays


def leave_one_out_design(pool: Pool, sizes: Sequence[int] = (2, 3, 4, 5)) -> list[Replay]:
    """For each K: the prefix of the first K recruited messages, and that prefix without each of
    its messages. A prefix with a missing message (failed call) is skipped for that K."""
    replays = []
    indices = [m.index for m in pool.messages]
    present = set(present_indices(pool))
    for k in sizes:
        prefix = indices[:k]
        if len(prefix) < k or not set(prefix) <= present:
            continue
        replays.append(Replay(pool.problem_id, pool.benchmark, "full", _whole(prefix), k=k))
        for index in prefix:
            rest = [i for i in prefix if i != index]
            replays.append(
                Replay(pool.problem_id, pool.benchmark, "loo", _whole(rest), k=k, message=index)
            )
    return replays


def repeated_design(pool: Pool, blocks: int) -> list[Replay]:
    """``blocks`` blocks over the whole present pool: two full calls (replicates 2b and 2b+1)
    and one removal call per message (replicate 2b) in block b.

    No draw index is shared across blocks, so blocks are independent replicates: a block held
    out by cross-fitted selection shares no draw with the blocks it is chosen on (with the
    removals at replicate b, block 2's removals drew like block 1's first full call). Within a
    block, the removals share the first full call's draw (common random numbers for the pair)."""
    present = present_indices(pool)
    k = len(present)
    replays = []
    for block in range(blocks):
        for slot in (0, 1):
            replays.append(
                Replay(
                    pool.problem_id,
                    pool.benchmark,
                    "full",
                    _whole(present),
                    k=k,
                    replicate=2 * block + slot,
                    block=block,
                )
            )
        for index in present:
            rest = [i for i in present if i != index]
            replays.append(
                Replay(
                    pool.problem_id,
                    pool.benchmark,
                    f"drop-{index}",
                    _whole(rest),
                    k=k,
                    message=index,
                    replicate=2 * block,
                    block=block,
                )
            )
    return replays


def _neutral_text(like: str) -> str:
    """A neutral stand-in for a message, about as many tokens long as ``like``."""
    target = max(1, count_tokens(like))
    words = []
    while count_tokens(" ".join(words)) < target:
        words.extend(NEUTRAL_MESSAGE.split())
    text = " ".join(words)
    while count_tokens(text) > target and " " in text:
        text = text.rsplit(" ", 1)[0]
    return text


def render_view(pool: Pool, shown: Sequence[tuple[int, str]]) -> str:
    """The messages block of the integrator prompt for a view of ``pool``."""
    if not shown:
        return INTEGRATOR_NO_MESSAGES
    by_index: dict[int, PoolMessage] = {m.index: m for m in pool.messages}
    blocks = []
    for position, (index, transform) in enumerate(shown, start=1):
        message = by_index[index]
        if not message.present:
            raise ValueError(f"{pool.problem_id}: message {index} has no reply to show")
        role, hypothesis, raw = message.role.name, message.hypothesis, message.raw
        if transform == "neutral":
            header, _, body = render_for_integrator(position, role, hypothesis, raw).partition("\n")
            blocks.append(f"{header}\n{_neutral_text(body)}")
            continue
        mask = {"whole": (), "mask-answer": ("answer",), "mask-reasoning": ("reasoning",)}
        blocks.append(render_for_integrator(position, role, hypothesis, raw, mask[transform]))
    header = INTEGRATOR_MESSAGES_HEADER.format(count=len(shown))
    return header + "\n\n" + "\n\n".join(blocks)


def integrator_messages(
    problem_text: str, pool: Pool, replay: Replay, answer_hint: str = ""
) -> tuple[str, str]:
    """(system, user) texts of the integrator call for ``replay``."""
    user = INTEGRATOR_USER.format(
        problem=problem_text, messages=render_view(pool, replay.shown), answer_hint=answer_hint
    )
    return INTEGRATOR_SYSTEM, user
