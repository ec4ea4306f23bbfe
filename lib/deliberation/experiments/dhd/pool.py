"""The cached pool: five recruited roles and their hypothesizers' replies, stored once, never edited.

A pool is what every replay reads, so it is frozen the moment it is built: replies are kept as
they came back (a reply that did not parse is kept with the reason), and :class:`PoolStore`
refuses to overwrite a stored pool with different content. A pool holding a failed call (the
recruiter's or a hypothesizer's: no usable reply) is not final: it is never stored, every replay
over it fails, and the next run sends exactly its failed calls (a pool stored with failures by an
older version is rebuilt the same way). Every
later stage (replays, repeated replays, masking, selection) reads the stored pool, so all of them
see the same messages.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deliberation.experiments.dhd.messages import Hypothesis, parse_hypothesis
from deliberation.io.atomic import atomic_write_text

# How a recruiter_error that is a failed call (not an unusable reply) begins.
RECRUITER_CALL_FAILED = "recruiter call failed"


@dataclass(frozen=True)
class Role:
    name: str
    focus: str


@dataclass(frozen=True)
class PoolMessage:
    """Message ``index`` (1-based, in recruited order) of a pool."""

    index: int
    role: Role
    raw: str  # the reply as it came back ("" when the call failed)
    key: str  # cache key of the hypothesizer call
    error: str | None = None  # the call failed for good (the message is then absent)
    parse_error: str | None = None  # the reply did not parse (the raw text is still replayed)

    @property
    def hypothesis(self) -> Hypothesis | None:
        if self.error is not None:
            return None
        return parse_hypothesis(self.raw).hypothesis

    @property
    def present(self) -> bool:
        """Whether the integrator can be shown this message (the call returned a reply)."""
        return self.error is None and bool(self.raw.strip())

    @property
    def proposed_answer(self) -> str | None:
        hypothesis = self.hypothesis
        return None if hypothesis is None else hypothesis.proposed_answer


@dataclass(frozen=True)
class Pool:
    problem_id: str
    benchmark: str
    messages: tuple[PoolMessage, ...]
    recruiter_key: str
    recruiter_error: str | None = None

    @property
    def failed_calls(self) -> int:
        """Calls of this pool without a usable reply (the recruiter's, hypothesizers')."""
        recruiter = self.recruiter_error is not None and self.recruiter_error.startswith(
            RECRUITER_CALL_FAILED
        )
        return int(recruiter) + sum(m.error is not None for m in self.messages)

    def to_json(self) -> str:
        payload: dict[str, Any] = {
            "problem_id": self.problem_id,
            "benchmark": self.benchmark,
            "recruiter_key": self.recruiter_key,
            "recruiter_error": self.recruiter_error,
            "messages": [
                {
                    "index": m.index,
                    "role": {"name": m.role.name, "focus": m.role.focus},
                    "raw": m.raw,
                    "key": m.key,
                    "error": m.error,
                    "parse_error": m.parse_error,
                }
                for m in self.messages
            ],
        }
        return json.dumps(payload, sort_keys=True, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str, where: str = "pool") -> Pool:
        try:
            record = json.loads(text)
            messages = tuple(
                PoolMessage(
                    index=int(m["index"]),
                    role=Role(**m["role"]),
                    raw=m["raw"],
                    key=m["key"],
                    error=m["error"],
                    parse_error=m["parse_error"],
                )
                for m in record["messages"]
            )
            return cls(
                problem_id=record["problem_id"],
                benchmark=record["benchmark"],
                messages=messages,
                recruiter_key=record["recruiter_key"],
                recruiter_error=record["recruiter_error"],
            )
        except (json.JSONDecodeError, KeyError, TypeError) as error:
            raise ValueError(f"{where}: not a stored DHD pool ({error!r})") from None


def message_from_reply(
    index: int, role: Role, text: str, key: str, error: str | None
) -> PoolMessage:
    """A pool message from a hypothesizer call's outcome, parse result recorded."""
    if error is not None:
        return PoolMessage(index, role, "", key, error=error)
    return PoolMessage(index, role, text, key, parse_error=parse_hypothesis(text).error)


class PoolExistsError(ValueError):
    """A different pool is already stored for this problem: pools are never edited."""


class PoolStore:
    """One JSON file per pool under ``root/<benchmark>/``, written atomically, never replaced
    by different content (storing the identical pool again is a no-op)."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def path(self, benchmark: str, problem_id: str) -> Path:
        safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in problem_id)
        return self.root / benchmark / f"{safe}.json"

    def get(self, benchmark: str, problem_id: str) -> Pool | None:
        path = self.path(benchmark, problem_id)
        if not path.exists():
            return None
        return Pool.from_json(path.read_text(encoding="utf-8"), where=str(path))

    def put(self, pool: Pool) -> Path:
        if pool.failed_calls:
            raise ValueError(
                f"pool of {pool.problem_id} holds {pool.failed_calls} failed calls: not final,"
                " never stored"
            )
        path = self.path(pool.benchmark, pool.problem_id)
        text = pool.to_json()
        if path.exists():
            stored = Pool.from_json(path.read_text(encoding="utf-8"), where=str(path))
            if stored.failed_calls:  # stored by an older version with failures: not final
                return atomic_write_text(path, text)
            if path.read_text(encoding="utf-8") != text:
                raise PoolExistsError(
                    f"{path}: a different pool is already stored for {pool.problem_id}; pools "
                    "are never edited (delete the file to rebuild it on purpose)"
                )
            return path
        return atomic_write_text(path, text)

    def __iter__(self) -> Iterator[Pool]:
        for path in sorted(self.root.glob("*/*.json")):
            yield Pool.from_json(path.read_text(encoding="utf-8"), where=str(path))
