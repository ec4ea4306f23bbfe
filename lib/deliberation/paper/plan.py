"""``deliberation plan PROFILE``: what a run would send, before anything runs.

Each notebook's experiment function (``notebooks/manifest.yaml``) runs with a
:class:`PlanningClient` in place of the :class:`~deliberation.inference.client.CachedClient`.
It builds the very requests the run builds and keys them with the profile's own backend
(:meth:`Backend.for_planning`: no API key, no GPU, no network), looks each key up in the
profile's response cache (read only), and answers the misses with the sim so that multi-stage
protocols, whose later prompts depend on earlier answers, can proceed. Nothing is sent and
nothing is written: experiments run with the cache and output folders pointed at a scratch
folder (so e.g. stored DHD pools are not written), and the real cache is opened read-only.

Counts are exact for the sim, and for every stage whose prompts do not depend on model answers.
For a real model, the prompts of later stages are built from the sim's answers where the real
answers are not yet cached, so their counts and tokens are estimates. Tokens of a call not yet
made are the project's deterministic counter (prompt) and the sim answer's length
(completion); the ceiling prices every completion at its ``max_tokens``.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import pandas as pd

from deliberation.inference import cache_path, served_profile
from deliberation.inference.backends import backend_class
from deliberation.inference.base import Backend, ChatRequest, ChatResponse
from deliberation.inference.cache import ResponseCache
from deliberation.inference.client import keys_or_failures, prefix_order, remembered_key
from deliberation.inference.sim import SimBackend
from deliberation.inference.tokens import count_tokens
from deliberation.paper.manifest import NotebookEntry, load_manifest
from deliberation.profiles.cost import amount, duration_warning, estimate
from deliberation.profiles.profile import Profile, load_profile
from deliberation.profiles.throughput import priced_cost

_ESTIMATE_NOTE = (
    "For a real model, the prompts of a stage that depend on earlier answers are built from the"
    " sim's answers where the real ones are not cached yet: later-stage counts and tokens are"
    " estimates. Tokens not yet spent: the project's token counter (prompts) and the sim's"
    " answer lengths (completions), or for a stage already answered in the cache the mean length"
    " of its answers there."
)
PLAN_COLUMNS = [
    "notebook",
    "stage",
    "requests",
    "unique",
    "cached",
    "to_send",
    "invalid",
    "prompt_tokens",
    "completion_tokens",
    "completion_ceiling",
    "cached_server_tokens",
    "cached_counter_tokens",
    "new_prompt_tokens",
]


@dataclass(frozen=True)
class _PlannedCall:
    notebook: str
    stage: str
    key: str
    # "cached" (in the profile's cache), "send" (first time), "repeat" (sent earlier in this
    # plan), "invalid" (cannot be sent; the run records it as failed)
    state: str
    prompt_tokens: int
    completion_tokens: int
    max_tokens: int
    counter_tokens: int = 0  # the project's model-free count of the prompt (budgets use it)
    # Of prompt_tokens, those not shared with the prompt sent just before (calls are sent in
    # prefix order): what a server that keeps the previous prompt's KV cache processes.
    new_prompt_tokens: int = 0


class PlanningClient:
    """The :class:`~deliberation.inference.client.Client` that sends nothing: keys from the
    profile's backend, hits from its cache (read only), misses answered by ``answerer`` (the
    sim) and remembered, as the cache would."""

    def __init__(
        self,
        backend: Backend,
        cache: ResponseCache,
        answerer: Backend,
        *,
        profile: str,
        observed_lengths: bool = False,
    ) -> None:
        self.backend = backend
        self.cache = cache
        self.answerer = answerer
        self.profile = profile
        self.progress = False
        self.notebook = ""
        self.calls: list[_PlannedCall] = []
        self._answered: dict[str, ChatResponse] = {}
        # A real model's answers are seldom as long as the sim's: a stage already answered in
        # this profile's cache prices its calls still to send at the mean length found there.
        self.completion_means = (
            _observed_completion_means(cache, profile) if observed_lengths else {}
        )
        # Keys of the requests keyed since the last batch, by identity: a stage keys its
        # requests for its counts and then again in generate(); hashing them once is enough.
        self._keys: dict[int, tuple[ChatRequest, str]] = {}
        # The first request of each stage and kind of constraint (choice, JSON schema, free
        # text): what the engine contract checks validate (deliberation.paper.stage_examples).
        self.examples: dict[tuple[str, str], ChatRequest] = {}

    def key(self, request: ChatRequest) -> str:
        return remembered_key(self._keys, self.backend, request)

    def generate(self, requests: Sequence[ChatRequest], *, desc: str = "") -> list[ChatResponse]:
        for request in requests:
            self.examples.setdefault((request.stage, _constraint_kind(request)), request)
        keys, invalid = keys_or_failures(self.key, requests)  # as CachedClient decides
        self._keys.clear()
        fresh = [k for k in dict.fromkeys(keys) if k is not None and k not in self._answered]
        cached = self.cache.get_many(fresh, count_hits=False)
        first: dict[str, ChatRequest] = {}
        for key, request in zip(keys, requests, strict=True):
            if key is not None and key not in self._answered and key not in cached:
                first.setdefault(key, request)
        answers = self.answerer.generate(list(first.values())) if first else []
        new = dict(zip(first, answers, strict=True))
        unshared = unshared_prompt_shares(list(first.values()))
        key_index = {key: position for position, key in enumerate(first)}
        out = []
        for index, (key, request) in enumerate(zip(keys, requests, strict=True)):
            new_tokens = 0
            if key is None:
                state, response = "invalid", invalid[index]
            elif key in cached:
                state, response = "cached", cached[key]
            elif key in new:
                state, response = "send", new.pop(key)
                self._answered[key] = response
                new_tokens = round(response.prompt_tokens * unshared[key_index[key]])
                completion = self.completion_means.get(request.stage)
                if completion is not None:
                    response = replace(
                        response, completion_tokens=min(round(completion), request.max_tokens)
                    )
            else:
                state, response = "repeat", self._answered[key]
            self.calls.append(
                _PlannedCall(
                    self.notebook,
                    request.stage,
                    key or "",
                    state,
                    response.prompt_tokens,
                    response.completion_tokens,
                    request.max_tokens,
                    sum(count_tokens(m.content) for m in request.messages),
                    new_tokens,
                )
            )
            out.append(response)
        return out


def _constraint_kind(request: ChatRequest) -> str:
    """``choice``, ``json`` (a JSON schema) or ``free`` (no structured output)."""
    if request.structured is None:
        return "free"
    return "choice" if request.structured.choices is not None else "json"


_MIN_OBSERVED_CALLS = 3  # answers of a stage in the cache before their mean length is used


def _observed_completion_means(cache: ResponseCache, profile: str) -> dict[str, float]:
    """Mean completion tokens per stage of ``profile``'s answers in ``cache`` (stages with at
    least :data:`_MIN_OBSERVED_CALLS` answers): how long this model's answers really run."""
    return cache.completion_means(profile, min_calls=_MIN_OBSERVED_CALLS)


def _prompt_text(request: ChatRequest) -> str:
    return "".join(f"{m.role}\n{m.content}\n" for m in request.messages)


def unshared_prompt_shares(requests: Sequence[ChatRequest]) -> list[float]:
    """Per request, the share of its prompt's tokens (by the project's counter) that the prompt
    sent just before it does not share, when the batch is sent in :func:`prefix_order` as the
    cached client sends it: 1.0 for the first, less for prompts that repeat a long prefix."""
    shares = [1.0] * len(requests)
    previous = ""
    for index in prefix_order(requests):
        text = _prompt_text(requests[index])
        shared = len(os.path.commonprefix([previous, text]))
        total = count_tokens(text)
        if total:
            shares[index] = max(total - count_tokens(text[:shared]), 0) / total
        previous = text
    return shares


def planning_answerer(profile: Profile) -> Backend:
    """The sim that answers the calls not in the cache: the profile's own sim for a sim
    profile (so the plan is exact), else the ``sim`` profile's mechanism with this seed."""
    if issubclass(backend_class(profile.backend), SimBackend):
        return SimBackend.from_profile(profile)
    sim = load_profile("sim").model_copy(update={"seed": profile.seed})
    return SimBackend.from_profile(sim)


@contextlib.contextmanager
def _scratch_folders() -> Iterator[Path]:
    """Point the cache and output folders at a scratch folder while experiments plan, so
    nothing they store beside the cache is written; restore them afterwards."""
    names = ("DELIBERATION_CACHE_DIR", "DELIBERATION_OUTPUT_ROOT")
    old = {n: os.environ.get(n) for n in names}
    with tempfile.TemporaryDirectory(prefix="deliberation-plan-") as scratch:
        os.environ["DELIBERATION_CACHE_DIR"] = str(Path(scratch) / "cache")
        os.environ["DELIBERATION_OUTPUT_ROOT"] = str(Path(scratch) / "out")
        try:
            yield Path(scratch)
        finally:
            for name, value in old.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


@dataclass
class Plan:
    profile: Profile
    calls: list[_PlannedCall] = field(default_factory=list)
    notebooks: list[str] = field(default_factory=list)
    without_model: list[str] = field(default_factory=list)
    not_planned: dict[str, str] = field(default_factory=dict)  # notebook -> why (e.g. no data)
    # (stage, constraint kind) -> the first request of it (PlanningClient.examples)
    examples: dict[tuple[str, str], ChatRequest] = field(default_factory=dict)

    def table(self) -> pd.DataFrame:
        """One row per notebook and stage (columns :data:`PLAN_COLUMNS`)."""
        if not self.calls:
            return pd.DataFrame(columns=PLAN_COLUMNS)
        frame = pd.DataFrame([c.__dict__ for c in self.calls])
        send = frame["state"] == "send"
        frame["to_send"] = send.astype(int)
        frame["cached_"] = (frame["state"] == "cached").astype(int)
        frame["invalid_"] = (frame["state"] == "invalid").astype(int)
        # Calls already answered: the prompt tokens the backend reported (a real server's own
        # tokenizer) beside the model-free counter's, so the difference is visible per stage.
        cached = frame["state"] == "cached"
        frame["cached_server_tokens"] = frame["prompt_tokens"].where(cached, 0)
        frame["cached_counter_tokens"] = frame["counter_tokens"].where(cached, 0)
        for column in ("prompt_tokens", "new_prompt_tokens", "completion_tokens", "max_tokens"):
            frame[column] = frame[column].where(send, 0)
        grouped = frame.groupby(["notebook", "stage"], sort=False)
        table = grouped.agg(
            requests=("key", "size"),
            unique=("key", lambda keys: keys[keys != ""].nunique()),
            cached=("cached_", "sum"),
            to_send=("to_send", "sum"),
            invalid=("invalid_", "sum"),
            prompt_tokens=("prompt_tokens", "sum"),
            completion_tokens=("completion_tokens", "sum"),
            completion_ceiling=("max_tokens", "sum"),
            cached_server_tokens=("cached_server_tokens", "sum"),
            cached_counter_tokens=("cached_counter_tokens", "sum"),
            new_prompt_tokens=("new_prompt_tokens", "sum"),
        ).reset_index()
        return table[PLAN_COLUMNS]

    def totals(self) -> dict[str, int]:
        table = self.table()
        return {c: int(table[c].sum()) for c in PLAN_COLUMNS[2:]}


def plan_calls(
    profile: Profile | str,
    entries: Sequence[NotebookEntry] | None = None,
    *,
    ask_server: bool = True,
) -> Plan:
    """Run each entry's experiment with a :class:`PlanningClient`; the calls it would send.
    ``ask_server``: label the profile as what its server says it is (serve-sim: synthetic);
    a replay asks no server."""
    if not isinstance(profile, Profile):
        profile = load_profile(profile)
    if ask_server:  # labelled as what answers: a profile naming a serve-sim endpoint is synthetic
        profile = served_profile(profile)
    entries = list(entries) if entries is not None else load_manifest()
    backend = backend_class(profile.backend).for_planning(profile)
    real_cache = cache_path(profile)  # resolved before the folders are redirected
    plan = Plan(profile)
    with _scratch_folders() as scratch:
        # The profile's cache read-only (hits are not counted); no cache yet: an empty one.
        if real_cache.is_file():
            reader = ResponseCache(real_cache, read_only=True)
        else:
            reader = ResponseCache(scratch / "empty.sqlite")
        client = PlanningClient(
            backend,
            reader,
            planning_answerer(profile),
            profile=profile.name,
            observed_lengths=not profile.synthetic,  # the sim answers a sim plan exactly
        )
        try:
            for entry in entries:
                function = entry.experiment_function()
                if function is None:
                    plan.without_model.append(entry.name)
                    continue
                plan.notebooks.append(entry.name)
                client.notebook = entry.stem
                before = len(client.calls)
                try:
                    function(profile=profile, client=client, **entry.kwargs)
                except Exception as exc:  # the run would fail the same way: say so, plan the rest
                    del client.calls[before:]
                    plan.not_planned[entry.name] = f"{type(exc).__name__}: {exc}"
        finally:
            reader.close()
    plan.calls = client.calls
    plan.examples = client.examples
    return plan


# The terminal table's columns under short headers, so it fits about 120 characters; the cached
# calls' token counts and the unshared prompt tokens are totalled in the lines below it, and
# `deliberation plan --csv` keeps every column.
_SHOWN_COLUMNS = {
    "notebook": "nb",
    "stage": "stage",
    "requests": "calls",
    "unique": "unique",
    "cached": "cached",
    "to_send": "send",
    "invalid": "invalid",
    "prompt_tokens": "prompt",
    "completion_tokens": "~compl",
    "completion_ceiling": "ceiling",
}
_SHOWN_LEGEND = (
    "(send: calls to send; prompt, ~compl: their prompt and estimated completion tokens;"
    " ceiling: all at max_tokens)"
)


def shown_table(table: pd.DataFrame) -> pd.DataFrame:
    """The plan table as the terminal shows it: a notebook by its number, short headers."""
    shown = table[list(_SHOWN_COLUMNS)].copy()
    shown["notebook"] = shown["notebook"].str.split("_").str[0]
    return shown.rename(columns=_SHOWN_COLUMNS)


def format_plan(plan: Plan) -> list[str]:
    profile = plan.profile
    # The one label of the profile's outputs: synthetic, or the model's (not the backend's name).
    lines = [f"plan: profile {profile.name}, {profile.label}; nothing below has been sent"]
    table = plan.table()
    if len(table):
        lines += (
            shown_table(table).to_markdown(index=False, intfmt=",", tablefmt="simple").splitlines()
        )
        lines.append(_SHOWN_LEGEND)
    totals = plan.totals()
    lines.append(
        f"total: {totals['requests']:,} requests, {totals['cached']:,} already in the cache"
        f" ({cache_path(profile)}), {totals['to_send']:,} to send: {totals['prompt_tokens']:,}"
        f" prompt and ~{totals['completion_tokens']:,} completion tokens"
        f" (at most {totals['completion_ceiling']:,})"
    )
    if totals["cached"] and not profile.synthetic:
        server, counter = totals["cached_server_tokens"], totals["cached_counter_tokens"]
        ratio = f" ({server / counter:.2f}x)" if counter else ""
        lines.append(
            f"prompt tokens of the cached calls: {server:,} by the server's count, {counter:,} by"
            f" the project's model-free counter{ratio}; budgets use the counter"
        )
    if plan.without_model:
        lines.append(f"no model calls: {', '.join(plan.without_model)}")
    for name, reason in plan.not_planned.items():
        lines.append(f"NOT PLANNED {name} (its run would fail too): {reason}")
    if profile.synthetic:
        lines.append("cost: none (the sim runs on the CPU)")
    else:
        priced, measured = priced_cost(profile)
        if measured:
            lines.append(measured)
        cost = estimate(
            priced,
            totals["prompt_tokens"],
            totals["completion_tokens"],
            totals["completion_ceiling"],
            unshared_prompt_tokens=totals["new_prompt_tokens"],
        )
        if priced.gpu is not None and priced.gpu.prefix_cache:
            lines.append(
                f"prefix cache: {totals['new_prompt_tokens']:,} of the {totals['prompt_tokens']:,}"
                " prompt tokens to send are not shared with the prompt sent before them (calls"
                " go out in prefix order); the wall time counts those"
            )
        lines += cost.lines()
        if cost.gpu_hours is None and cost.money is None:
            lines.append(
                f"time: `make check-real PROFILE={profile.name}` measures this server's"
                " throughput, and the next plan prices the calls with it"
            )
        lines.append(_ESTIMATE_NOTE)
        warning = duration_warning(priced, cost, totals["to_send"])
        if warning:
            lines.append(warning)
    return lines


def summary_row(plan: Plan) -> dict[str, str]:
    """One line of ``deliberation plan --summary``: the whole plan's calls, tokens and cost."""
    totals = plan.totals()
    profile = plan.profile
    cost = estimate(
        priced_cost(profile)[0],
        totals["prompt_tokens"],
        totals["completion_tokens"],
        totals["completion_ceiling"],
        unshared_prompt_tokens=totals["new_prompt_tokens"],
    )
    if profile.synthetic:
        money = "none (sim, CPU)"
    elif cost.gpu_hours is not None:
        money = (
            f"{amount(cost.wall_hours)} h wall, {amount(cost.gpu_hours)} {cost.device} h"
            f" (at most {amount(cost.gpu_hours_ceiling)})"
        )
    elif cost.money is not None:
        money = (
            f"{amount(cost.money)} {cost.currency} (at most {amount(cost.money_ceiling)};"
            f" prices of {cost.price_date.isoformat()})"
        )
    else:
        money = "no cost section"
    return {
        "profile": f"`{profile.name}`",
        "calls to send": f"{totals['to_send']:,}",
        "already cached": f"{totals['cached']:,}",
        "prompt tokens": f"{totals['prompt_tokens'] / 1e6:,.2f} M",
        "completion tokens": f"~{totals['completion_tokens'] / 1e6:,.2f} M",
        "cost": money,
        "not planned": ", ".join(plan.not_planned) or "",
    }
