"""HiddenBench as a memory benchmark: the public tasks split into atomic facts (``make data``),
no true roles (so no oracle policies), rows with the shared columns only."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from deliberation.benchmarks.hiddenbench.sim import read_statement
from deliberation.benchmarks.hiddenbench.tasks import HiddenBenchTask
from deliberation.benchmarks.memory_benchmark import common_row, typed_frame
from deliberation.profiles.profile import check_limit

# HiddenBench has no true roles, so no oracle policies.
_HIDDENBENCH_POLICIES: tuple[str, ...] = (
    "R1", "B4", "Random", "B3", "R1-rel", "balance", "all", "empty", "private-only",
    "shared-only",
)  # fmt: skip

HIDDENBENCH_COLUMNS = [
    "task", "policy", "budget", "item_limit", "tags", "kept_facts", "kept_tokens",
    "budget_tokens", "answer", "answer_position", "n_options", "correct", "valid", "error", "key",
]  # fmt: skip


def hiddenbench_rows(decisions: Sequence[Any]) -> pd.DataFrame:
    rows = [common_row(d, d.task.correct) for d in decisions]
    return typed_frame(pd.DataFrame(rows, columns=HIDDENBENCH_COLUMNS))


class _HiddenBench:
    """The HiddenBench benchmark (``deliberation run hiddenbench``)."""

    name = "hiddenbench"
    title = "HiddenBench"
    description = "HiddenBench tasks (atomic facts)"
    columns = HIDDENBENCH_COLUMNS
    policies = _HIDDENBENCH_POLICIES
    has_truth = False
    selects_templates = False
    sim_reader = staticmethod(read_statement)
    notebooks = {"02_hiddenbench.ipynb": {"item_limit": 0}}  # the paper's notebook, its options
    smoke = {"limit": 4, "n_resamples": 200}

    def tasks(
        self,
        seed: int,
        *,
        templates: str | None,
        limit: int | None,
        option_order: str = "rotate",
        names: Sequence[str] | None = None,
    ) -> list[HiddenBenchTask]:
        from deliberation.benchmarks.hiddenbench.tasks import load_hiddenbench

        check_limit(limit)
        if names is not None:
            raise ValueError("experiments.hiddenbench.templates: HiddenBench has no templates")
        return load_hiddenbench(seed=seed, option_order=option_order)[:limit]  # type: ignore[arg-type]

    def truth(self, task: HiddenBenchTask) -> None:
        return None

    def rows(self, decisions: Sequence[Any]) -> pd.DataFrame:
        return hiddenbench_rows(decisions)


HIDDENBENCH = _HiddenBench()
