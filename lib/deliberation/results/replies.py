"""``deliberation replies``: read what a model was asked and what it answered, from the cache.

The response cache (``.cache/<profile>.sqlite``) holds every prompt as sent and every raw reply.
Whether a reply was *valid* is decided by the experiment that used it, so it is read from the
rows that experiment wrote: any CSV with a column of cache keys (the rows of ``deliberation
run ... --out``, the notebooks' published ``tables/<profile>/*_rows.csv``, the runs' default
``build/runs/<profile>/``). A row's ``valid`` column says valid or invalid, its ``error`` column
why, its ``task`` column which task the call belongs to. Rows also say which calls belong to a
run: the command shows the calls of the profile's latest ``deliberation run`` unless asked for
another run's rows (``--rows``) or every call (``--all``). A reply no rows mention is checked
against the request's own structured-output spec (a choice list or a JSON schema) when it has
one, and is otherwise *unchecked*. A request that got no reply at all is *failed*, with the
reason the cache recorded (its prompt was never stored: re-running the command retries it).
"""

from __future__ import annotations

import textwrap
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import pandas as pd

from deliberation.inference.base import StructuredOutput
from deliberation.inference.cache import ResponseCache
from deliberation.inference.structured_answers import parse_structured_text
from deliberation.io import paths
from deliberation.profiles.profile import Profile, load_profile

_State = Literal["invalid", "failed", "valid", "unchecked"]
STATES: tuple[_State, ...] = ("invalid", "failed", "valid", "unchecked")  # --invalid-first order
_TRUE = {"1", "1.0", "true", "True"}


@dataclass(frozen=True)
class _Verdict:
    """What the experiment's rows say about one cached call."""

    state: _State
    reason: str = ""
    tasks: tuple[str, ...] = ()
    source: str = ""


@dataclass(frozen=True)
class _Reply:
    """One call: the prompt as sent, the raw reply and its verdict."""

    key: str
    stage: str
    messages: tuple[dict, ...]
    text: str
    finish_reason: str | None
    completion_tokens: int
    verdict: _Verdict

    @property
    def state(self) -> _State:
        return self.verdict.state


@dataclass(frozen=True)
class _ReplySelection:
    profile: str
    cache: Path
    matched: Counter = field(default_factory=Counter)  # state -> calls matching the filters
    replies: tuple[_Reply, ...] = ()
    rows_files: tuple[Path, ...] = ()
    matched_by_stage: dict[str, Counter] = field(default_factory=dict)
    scope: tuple[Path, ...] | None = None  # only the calls these rows name (None: every call)
    in_cache: int = 0  # calls in the cache (answered or failed), before any filter


def _default_rows_files(profile: str) -> list[Path]:
    """Rows the project writes for a profile: published notebook rows and default run rows."""
    found = sorted((paths.output_root() / "tables" / profile).glob("*_rows.csv"))
    found += sorted((paths.build_dir() / "runs" / profile).glob("*.csv"))
    return found


def latest_run_rows(profile: str) -> Path | None:
    """The rows of the profile's latest ``deliberation run`` (the newest rows file it wrote in
    ``build/runs/<profile>/``), or None when no run wrote any."""
    runs = [p for p in (paths.build_dir() / "runs" / profile).glob("*.csv") if p.is_file()]
    return max(runs, key=lambda p: (p.stat().st_mtime, p.name)) if runs else None


def named_keys(files: Iterable[Path], keys: set[str]) -> set[str]:
    """The keys among ``keys`` that any column of the rows ``files`` names (the calls whose
    answers those rows were made from)."""
    named: set[str] = set()
    for path in files:
        try:
            frame = pd.read_csv(path, dtype=str, keep_default_na=False)
        except (OSError, ValueError, pd.errors.EmptyDataError):
            continue
        for column in frame.columns:
            named.update(set(frame[column]) & keys)
    return named


def _key_column(frame: pd.DataFrame, keys: set[str]) -> str | None:
    """The column holding cache keys (found by its values, so a renamed column still works)."""
    candidates = [c for c in frame.columns if frame[c].isin(keys).any()]
    return candidates[0] if candidates else None


def _verdicts_from_rows(files: Iterable[Path], keys: set[str]) -> dict[str, _Verdict]:
    """Validity, reason and task of each key the rows mention (the first file and row that
    names a key decide its validity; its tasks are gathered from every row)."""
    verdicts: dict[str, _Verdict] = {}
    tasks: dict[str, list[str]] = {}
    for path in files:
        try:
            frame = pd.read_csv(path, dtype=str, keep_default_na=False)
        except (OSError, ValueError, pd.errors.EmptyDataError):
            continue  # not a rows table (or empty): nothing to say about any key
        column = _key_column(frame, keys)
        if column is None:
            continue
        frame = frame[frame[column].isin(keys)]
        for row in frame.to_dict("records"):
            key = row[column]
            task = row.get("task", "")
            if task and task not in tasks.setdefault(key, []):
                tasks[key].append(task)
            if key in verdicts or "valid" not in row:
                continue
            valid = row["valid"] in _TRUE
            reason = "" if valid else (row.get("error") or "counted invalid by the experiment")
            verdicts[key] = _Verdict("valid" if valid else "invalid", reason, source=str(path))
    for key, names in tasks.items():
        base = verdicts.get(key, _Verdict("unchecked"))
        verdicts[key] = _Verdict(base.state, base.reason, tuple(names), base.source)
    return verdicts


def _spec_verdict(request: dict, text: str) -> _Verdict:
    """A reply no rows mention, judged by its request's structured-output spec (if any)."""
    spec = request.get("structured")
    if not spec:
        return _Verdict("unchecked", "no rows mention this call and it has no output spec")
    if spec.get("choices") is not None:
        structured = StructuredOutput(choices=tuple(spec["choices"]))
        wanted = f"one of {len(structured.choices)} choices"
    else:
        structured = StructuredOutput(json_schema=spec["json_schema"])
        wanted = "JSON matching the request's schema"
    if parse_structured_text(structured, text) is None:
        return _Verdict("invalid", f"not {wanted} (by the request's output spec)", source="spec")
    return _Verdict("valid", source="spec")


def _stage_matches(stage: str, wanted: str | None) -> bool:
    return wanted is None or stage == wanted or stage.startswith(f"{wanted}.")


def _of_stage(frame: pd.DataFrame, wanted: str | None) -> pd.DataFrame:
    mask = frame["stage"].map(lambda s: _stage_matches(s, wanted)).astype(bool)
    return frame.loc[mask]


def _task_matches(tasks: Sequence[str], wanted: str | None) -> bool:
    """A task id (``template/variant``) or a prefix ending at a ``/`` (a template id)."""
    return wanted is None or any(t == wanted or t.startswith(f"{wanted}/") for t in tasks)


def find_replies(
    profile: str | Profile,
    *,
    cache_file: str | Path | None = None,
    rows: Sequence[Path] | None = None,
    stage: str | None = None,
    task: str | None = None,
    only: _State | None = None,
    invalid_first: bool = False,
    limit: int | None = 5,
    per_stage: int | None = None,
    scope: Sequence[Path] | None = None,
) -> _ReplySelection:
    """The calls of a profile's cache that match the filters, oldest first (``invalid_first``:
    invalid, then failed, then the rest), with the first ``limit`` read in full (``per_stage``:
    the first so many of each stage instead). ``rows`` adds rows files to the profile's default
    ones (:func:`_default_rows_files`); ``scope`` keeps only the calls those rows files name
    (one run's: :func:`latest_run_rows`), None every call of the cache."""
    from deliberation.inference import cache_path

    profile = load_profile(profile) if isinstance(profile, (str, Path)) else profile
    path = Path(cache_file) if cache_file is not None else cache_path(profile)
    scoped = None if scope is None else tuple(Path(f) for f in scope)
    files = [*(scoped or []), *(rows or []), *_default_rows_files(profile.name)]
    files = list(dict.fromkeys(Path(f) for f in files))
    if not path.is_file():
        return _ReplySelection(profile.name, path, rows_files=tuple(files), scope=scoped)
    with ResponseCache(path, read_only=True) as cache:
        answered = cache.answered()
        failures = cache.failures().drop_duplicates("key", keep="last")
        in_cache = len(set(answered["key"]) | set(failures["key"]))
        if scoped is not None:
            named = named_keys(scoped, {*answered["key"], *failures["key"]})
            answered = answered[answered["key"].isin(named)]
            failures = failures[failures["key"].isin(named)]
        answered = _of_stage(answered, stage)
        failures = _of_stage(failures, stage)
        keys = [*answered["key"], *failures["key"]]
        verdicts = _verdicts_from_rows(files, set(keys))
        for failed in failures.itertuples():
            known = verdicts.get(failed.key, _Verdict("failed"))
            verdicts[failed.key] = _Verdict("failed", failed.reason, known.tasks, known.source)
        keys = [
            k for k in keys if _task_matches(verdicts.get(k, _Verdict("unchecked")).tasks, task)
        ]
        # Calls no rows judged: read their requests, a chunk at a time, to check the spec.
        unjudged = [k for k in keys if verdicts.get(k, _Verdict("unchecked")).state == "unchecked"]
        for start in range(0, len(unjudged), 500):
            for key, (request, response) in cache.records(unjudged[start : start + 500]).items():
                spec = _spec_verdict(request, response.get("text", ""))
                known = verdicts.get(key, _Verdict("unchecked"))
                verdicts[key] = _Verdict(spec.state, spec.reason, known.tasks, spec.source)
        states = {k: verdicts.get(k, _Verdict("unchecked")).state for k in keys}
        if only is not None:
            keys = [k for k in keys if states[k] == only]
        if invalid_first:
            keys = sorted(keys, key=lambda k: STATES.index(states[k]))
        stages = dict(zip(failures["key"], failures["stage"], strict=True))
        stages.update(zip(answered["key"], answered["stage"], strict=True))
        if per_stage is not None:
            taken: Counter = Counter()
            chosen = []
            for key in keys:
                if taken[stages[key]] < per_stage:
                    taken[stages[key]] += 1
                    chosen.append(key)
        else:
            chosen = keys if limit is None else keys[:limit]
        records = cache.records(chosen)
        by_stage: dict[str, Counter] = {}
        for key in keys:
            by_stage.setdefault(stages[key], Counter())[states[key]] += 1
    replies = []
    for key in chosen:
        request, response = records.get(key, ({}, {}))
        replies.append(
            _Reply(
                key=key,
                stage=stages[key],
                messages=tuple(request.get("messages", ())),
                text=response.get("text", ""),
                finish_reason=response.get("finish_reason"),
                completion_tokens=int(response.get("completion_tokens", 0)),
                verdict=verdicts.get(key, _Verdict("unchecked")),
            )
        )
    return _ReplySelection(
        profile.name,
        path,
        Counter(states[k] for k in keys),
        tuple(replies),
        tuple(files),
        dict(sorted(by_stage.items())),
        scoped,
        in_cache,
    )


def _shown_path(path: Path) -> Path:
    """``path`` relative to the working folder when it is inside it (shorter to read)."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        return path


def _indent(text: str) -> str:
    return textwrap.indent(text, "    ", lambda line: True) if text else "    (empty)"


def _format_reply(reply: _Reply, number: int, total: int) -> list[str]:
    """One call as text: a header line, each prompt message, then the raw reply."""
    verdict = reply.verdict
    head = [f"{number} of {total}", reply.stage]
    if verdict.tasks:
        more = f" (+{len(verdict.tasks) - 1} more)" if len(verdict.tasks) > 1 else ""
        head.append(f"task {verdict.tasks[0]}{more}")
    head.append(f"{verdict.state}: {verdict.reason}" if verdict.reason else verdict.state)
    judged = {"": "", "spec": " · judged by the request's output spec"}.get(
        verdict.source, f" · judged by {Path(verdict.source).name}"
    )
    lines = [f"── {' · '.join(head)}", f"key {reply.key}{judged}"]
    if reply.state == "failed":
        lines.append("no reply: the request failed (the next run of the command retries it)")
        return lines
    for message in reply.messages:
        lines += [f"prompt [{message.get('role', '?')}]:", _indent(str(message.get("content")))]
    finish = f"{reply.finish_reason or 'unknown finish'}, {reply.completion_tokens} tokens"
    lines += [f"reply ({finish}):", _indent(reply.text)]
    return lines


def format_selection(selection: _ReplySelection) -> list[str]:
    """Counts by state, then every reply read in full."""
    total = sum(selection.matched.values())
    if not selection.cache.is_file():
        return [f"{selection.profile}: no response cache at {selection.cache} (nothing ran yet)"]
    counts = ", ".join(f"{selection.matched[s]} {s}" for s in STATES if selection.matched[s])
    if selection.scope is None:
        scope = f"of every call in the cache ({selection.in_cache:,})"
    else:
        named = ", ".join(str(_shown_path(p)) for p in selection.scope)
        scope = (
            f"of the calls the rows {named} name (--all: every call in the cache,"
            f" {selection.in_cache:,})"
        )
    lines = [
        f"{selection.profile}: {total} call(s) match ({counts or 'none'}) {scope};"
        f" showing {len(selection.replies)}"
    ]
    if not selection.rows_files:
        lines.append(
            "(no rows files found: validity comes from each request's output spec; pass --rows)"
        )
    for number, reply in enumerate(selection.replies, 1):
        lines += ["", *_format_reply(reply, number, total)]
    return lines
