"""Answer-position bias: how often a model picks the option listed first, second, ...

A small model may answer by position rather than by content (SmolLM2-135M picked the first
listed option in most CrossProfile decisions when the options kept the template's order). Where
two conditions' keys sit in different positions, such a preference passes for an effect; so
every profile publishes, per group of decisions, the share choosing each listed position and
the "first listed" share with its cluster-robust t interval, beside chance (the mean of
1 / number of options). Rows need ``answer_position`` (1 = first listed, empty when the answer
named no single option) and ``n_options``; only decisions with a position are counted (an
invalid answer chose no position). Rows are not observations: ``n_calls`` counts the distinct
model calls behind them (:func:`~deliberation.stats.small_samples.distinct_calls`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from deliberation.stats.bootstrap import mean_of, require_columns
from deliberation.stats.cluster_t import cluster_t_many
from deliberation.stats.small_samples import (
    MIN_CLUSTERS,
    call_set,
    distinct_calls,
    with_same_calls,
    withhold_inference,
)

_POSITION = "answer_position"
N_OPTIONS = "n_options"
ALL = "all"  # the pooled row's value in every ``by`` column
_FIRST = "_first_listed"


def _position_column(position: int) -> str:
    return f"position {position} %"


def position_bias_table(
    rows: pd.DataFrame,
    by: Sequence[str] = (),
    *,
    cluster: str = "template",
    n_resamples: int = 10_000,
    seed: int = 0,
    min_clusters: int = MIN_CLUSTERS,
) -> pd.DataFrame:
    """One row for all decisions with a position (``by`` columns set to ``"all"``), then one
    per combination of ``by`` (in order of appearance): ``decisions``, ``n_calls``,
    ``n_options`` (the largest listing), ``position k %`` for every listed position, ``first
    listed %`` with ``low``/``high`` (95% cluster-robust t over ``cluster``; withheld below
    ``min_clusters`` clusters, ``interval`` says why), ``n_clusters`` and ``chance %`` (mean of
    1/n_options), and ``same_calls_as`` where a group's decisions are the very same calls as an
    earlier row's. Every share's denominator is the group's decisions with a position
    (``n_resamples`` and ``seed`` are unused since the cluster t replaced the bootstrap)."""
    del n_resamples, seed
    by = list(by)
    require_columns(rows, [_POSITION, N_OPTIONS, cluster, *by], "position_bias_table")
    positions = pd.to_numeric(rows[_POSITION], errors="coerce")
    chosen = rows[positions.notna()].assign(**{_POSITION: positions[positions.notna()].astype(int)})
    if chosen.empty:
        raise ValueError("position_bias_table: no decision names a listed option")
    n_options = pd.to_numeric(chosen[N_OPTIONS], errors="raise").astype(int)
    beyond = chosen[chosen[_POSITION] > n_options]
    if not beyond.empty:
        raise ValueError(
            f"position_bias_table: {len(beyond)} row(s) with {_POSITION} above {N_OPTIONS}"
        )
    chosen = chosen.assign(**{N_OPTIONS: n_options, _FIRST: (chosen[_POSITION] == 1).astype(int)})
    most = int(n_options.max())
    groups: list[tuple[dict, pd.DataFrame]] = [({c: ALL for c in by}, chosen)]
    if by:
        for combo, part in chosen.groupby(by, sort=False, dropna=False):
            values = combo if isinstance(combo, tuple) else (combo,)
            groups.append((dict(zip(by, values, strict=True)), part))
    statistics = {
        str(i): mean_of(_FIRST, label=f"first listed {values}")
        for i, (values, _) in enumerate(groups)
    }
    out = []
    for i, (values, part) in enumerate(groups):
        result = cluster_t_many(
            part, {str(i): statistics[str(i)]}, cluster, min_clusters=min_clusters
        )[str(i)]
        counts = part[_POSITION].value_counts()
        out.append(
            {
                **values,
                "decisions": len(part),
                "n_calls": distinct_calls(part),
                N_OPTIONS: int(part[N_OPTIONS].max()),
                **{
                    _position_column(k): 100 * counts.get(k, 0) / len(part)
                    for k in range(1, most + 1)
                },
                "first listed %": 100 * result.estimate,
                "low": 100 * result.low,
                "high": 100 * result.high,
                "interval": result.note,
                "n_clusters": result.n_clusters,
                "chance %": 100 * float(np.mean(1 / part[N_OPTIONS])),
            }
        )
    table = withhold_inference(pd.DataFrame(out), min_clusters)
    return with_same_calls(table, [call_set(part) for _, part in groups], by) if by else table


def position_summary(table: pd.DataFrame) -> str:
    """The pooled row in one sentence, for a notebook's narrative."""
    row = table.iloc[0]
    shares = "/".join(
        f"{row[c]:.1f}" for c in table.columns if c.startswith("position ") and pd.notna(row[c])
    )
    calls = "" if pd.isna(row["n_calls"]) else f" from {int(row['n_calls'])} distinct calls"
    return (
        f"{int(row['decisions'])} decisions{calls}: first/second/... listed {shares}% "
        f"(chance {row['chance %']:.1f}%)"
    )
