"""``deliberation run dhd``: the whole DHD experiment for a profile, stage by stage, through the cache.

Stages (each reuses what the earlier ones stored):

- ``pool``: recruit and hypothesize for every sampled problem; pools stored once under
  ``<pool_dir>/<benchmark>/`` and never edited.
- ``replay``: the no-message solver, every single-message replay and in-pool leave-one-out for
  K = 2..5.
- ``repeated``: repeated-replay blocks (two full calls and one removal per message, per block) on
  a stratified sample of the problems.

Problems: the synthetic bank on the sim (``synthetic``), or the five benchmarks
(``jeebench``, ``scibench``, ``mascqa``, ``labbench``, ``omnimath``) loaded from ``make data``'s
folder. A sample of ``limit`` problems per benchmark is stratified by the benchmark's subject and
seeded, so the same profile always runs the same problems.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from deliberation.benchmarks import problems as problem_sets
from deliberation.benchmarks.problems import Item
from deliberation.experiments.dhd import synthetic
from deliberation.experiments.dhd.pool import Pool, PoolStore
from deliberation.experiments.dhd.protocol import (
    PROPOSAL_COLUMNS,
    REPLAY_COLUMNS,
    PoolStageCounts,
    build_pools,
    proposal_rows,
    run_replays,
)
from deliberation.experiments.dhd.replay import (
    leave_one_out_design,
    repeated_design,
    single_message_design,
)
from deliberation.inference.batch import StageCounts
from deliberation.inference.client import Client
from deliberation.io import paths
from deliberation.io.atomic import atomic_write_text
from deliberation.profiles.profile import Profile, check_distinct, check_limit

log = logging.getLogger(__name__)

STAGES = ("pool", "replay", "repeated")


def _stratified_sample(items: Sequence[Item], limit: int | None, seed: int) -> list[Item]:
    """``limit`` items spread over subjects in proportion to their size (largest remainders),
    each subject's picks drawn at random with ``seed``; all items when ``limit`` is None or
    not smaller. The result keeps the benchmark's own order."""
    if limit is None or limit >= len(items):
        return list(items)
    subjects = sorted({item.subject for item in items})
    sizes = np.array([sum(item.subject == s for item in items) for s in subjects])
    exact = sizes * limit / sizes.sum()
    quota = np.floor(exact).astype(int)
    for index in np.argsort(-(exact - quota), kind="stable")[: limit - quota.sum()]:
        quota[index] += 1
    rng = np.random.default_rng([seed, len(items)])
    chosen: set[str] = set()
    for subject, count in zip(subjects, quota, strict=True):
        members = [item.id for item in items if item.subject == subject]
        chosen.update(rng.choice(members, size=int(count), replace=False).tolist())
    return [item for item in items if item.id in chosen]


def load_problems(
    benchmark: str, limit: int | None, *, seed: int = 0, root: str | Path | None = None
) -> list[Item]:
    """The problems of one benchmark for a run (synthetic: ``limit`` generated problems)."""
    check_limit(limit)
    if benchmark == synthetic.BENCHMARK:
        return synthetic.synthetic_bank(100 if limit is None else limit, seed=seed)
    return _stratified_sample(problem_sets.load(benchmark, root), limit, seed)


@dataclass
class _DHDResults:
    """What a run produced: proposal rows (one per pool message), replay rows (one per
    integrator call), and counts per stage."""

    proposals: pd.DataFrame
    replays: pd.DataFrame
    pool_counts: PoolStageCounts | None = None
    calls: list[StageCounts] = field(default_factory=list)
    items: dict[str, Item] = field(default_factory=dict)
    pools: dict[str, Pool] = field(default_factory=dict)

    def lines(self) -> list[str]:
        """What the run did, for a person: calls per stage, pool problems, failures."""
        out = [c.line() for c in self.calls]
        if self.pool_counts is not None:
            p = self.pool_counts
            out.append(
                f"pools: {p.problems} problems, {p.messages} messages; recruiter failures "
                f"{p.recruiter_failures}, call failures {p.call_failures}, replies that did not "
                f"parse {p.parse_failures} (kept as they came back)"
            )
            if p.failed_pools:
                out.append(
                    f"FAILED pools: {p.failed_pools} hold a failed call; not stored, and none of"
                    " their replays was run (the next run sends their failed calls)"
                )
        invalid = int((self.replays["valid"] == 0).sum()) if len(self.replays) else 0
        out.append(f"integrator calls: {len(self.replays)}, operational failures: {invalid}")
        return out

    def headline(self) -> pd.DataFrame:
        """Accuracy (%) by replay arm over the graded rows, with the failed (operational:
        no usable reply, or a grade that could not be decided) count beside it."""
        table = []
        for arm, group in self.replays.groupby("arm", sort=False):
            graded = group[group["valid"] == 1]
            accuracy = 100 * graded["correct"].astype(float).mean() if len(graded) else float("nan")
            table.append(
                {
                    "arm": arm,
                    "rows": len(group),
                    "accuracy": round(accuracy, 1),
                    "failed": int((group["valid"] == 0).sum()),
                }
            )
        return pd.DataFrame(table, columns=["arm", "rows", "accuracy", "failed"])


def run_dhd(
    profile: Profile,
    client: Client,
    problems: Sequence[Item],
    pool_dir: str | Path,
    *,
    stages: Sequence[str] = STAGES,
    blocks: int = 4,
    repeated_limit: int | None = None,
    sizes: Sequence[int] = (2, 3, 4, 5),
    seed: int = 0,
) -> _DHDResults:
    """Run the named stages; later stages build any pool they need (the pool stage is never run
    twice for a problem, since pools are stored)."""
    unknown = set(stages) - set(STAGES)
    if unknown:
        raise ValueError(f"unknown DHD stages {sorted(unknown)}; known: {list(STAGES)}")
    by_id = {item.id: item for item in problems}
    store = PoolStore(pool_dir)
    calls: list[StageCounts] = []
    pools, counts = build_pools(profile, client, problems, store, calls)
    # A pool with a failed call is failed, and so is every replay over it: none is run.
    usable: dict[str, Pool] = {
        k: p for k, p in pools.items() if p.recruiter_error is None and not p.failed_calls
    }
    proposals = proposal_rows(by_id, pools)
    frames: list[pd.DataFrame] = [pd.DataFrame(columns=REPLAY_COLUMNS)]
    if "replay" in stages:
        replays = [
            r
            for pool in usable.values()
            for r in single_message_design(pool) + leave_one_out_design(pool, sizes)
        ]
        frames.append(run_replays(profile, client, by_id, usable, replays, counts=calls))
    if "repeated" in stages:
        sample = _stratified_sample([by_id[k] for k in usable], repeated_limit, seed=seed + 1)
        replays = [r for item in sample for r in repeated_design(usable[item.id], blocks)]
        frames.append(
            run_replays(
                profile,
                client,
                by_id,
                usable,
                replays,
                label="dhd.integrator (repeated)",
                counts=calls,
            )
        )
    filled = [f for f in frames if len(f)]
    rows = pd.concat(filled, ignore_index=True) if filled else frames[0]
    return _DHDResults(
        proposals=proposals[PROPOSAL_COLUMNS],
        replays=rows,
        pool_counts=counts,
        calls=calls,
        items=by_id,
        pools=usable,
    )


def pool_dir(profile: Profile) -> Path:
    """Where a profile's pools are stored: beside its response cache (they are paid for)."""
    return paths.cache_dir() / "dhd-pools" / profile.name


def run_profile(
    profile: Profile,
    client: Client,
    *,
    stages: Sequence[str] = STAGES,
    benchmarks: Sequence[str] | None = None,
    limit: int | None = None,
    data_root: str | Path | None = None,
) -> _DHDResults:
    """The run the profile's ``experiments.dhd`` section describes (``benchmarks`` and
    ``limit`` override it): every benchmark's sampled problems through the named stages."""
    options = profile.experiments.dhd
    check_distinct(benchmarks, "benchmarks")
    problems: list[Item] = []
    for name in benchmarks or options.benchmarks:
        root = None if data_root is None else Path(data_root) / name
        problems += load_problems(
            name, limit if limit is not None else options.problems, seed=profile.seed, root=root
        )
    return run_dhd(
        profile,
        client,
        problems,
        pool_dir(profile),
        stages=stages,
        blocks=options.blocks,
        repeated_limit=options.repeated_problems,
        sizes=options.sizes,
        seed=profile.seed,
    )


def write_results(
    results: _DHDResults, out: str | Path, profile: Profile | None = None
) -> tuple[Path, Path]:
    """The replay rows to ``out`` and the proposal rows beside it (``<stem>_proposals.csv``),
    each written whole or not at all. With ``profile`` (``deliberation run dhd``), both carry
    ``profile`` and ``model`` columns and the cache key as ``request_key``; replay rows also
    ``gold`` (the item's answer) and ``outcome`` (``answered``, or ``failed``: ``valid`` 0, no
    usable reply or a grade that could not be decided), with a provenance sidecar
    (``<out>.provenance.json``)."""
    out = Path(out)
    proposals_out = out.with_name(f"{out.stem}_proposals{out.suffix or '.csv'}")
    replays, proposals = results.replays, results.proposals
    if profile is None:
        for frame, path in ((replays, out), (proposals, proposals_out)):
            atomic_write_text(path, frame.to_csv(index=False, lineterminator="\n"))
        return out, proposals_out
    from deliberation.experiments.memory.summary import write_command_rows

    model = f"{profile.backend}:{profile.model}"
    replays = replays.rename(columns={"key": "request_key"})
    replays.insert(0, "profile", profile.name)
    replays.insert(1, "model", model)
    replays.insert(
        list(replays.columns).index("answer"),
        "gold",
        [results.items[p].gold if p in results.items else "" for p in replays["problem"]],
    )
    replays.insert(
        list(replays.columns).index("valid") + 1,
        "outcome",
        ["answered" if v == 1 else "failed" for v in replays["valid"]],
    )
    proposals = proposals.rename(columns={"key": "request_key"})
    proposals.insert(0, "profile", profile.name)
    proposals.insert(1, "model", model)
    failed = int((replays["outcome"] == "failed").sum())
    write_command_rows(replays, out, profile, command="run dhd", failed=failed)
    atomic_write_text(proposals_out, proposals.to_csv(index=False, lineterminator="\n"))
    return out, proposals_out
