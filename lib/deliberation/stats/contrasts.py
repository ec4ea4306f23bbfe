"""Contrasts of policies' accuracy built on the cluster bootstrap.

- ``policy_difference``: accuracy of policy ``a`` minus policy ``b`` (optionally an equal-weight
  average over cells of ``average_over`` columns).
- ``paired_difference``: the mean of within-cluster (or within matched-unit) differences.
- ``interaction_contrast``: the 2x2 interaction (a - b | factor = level 1) - (a - b | factor =
  level 2), averaged with equal weight over the cells of the other factors (H1 of paper 1).

Each has a ``*_statistic`` twin returning the ``CellStatistic`` so several can be bootstrapped
together with ``cluster_bootstrap_many``.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import pandas as pd

from deliberation.stats.bootstrap import (
    BootstrapResult,
    CellStatistic,
    Weighting,
    cluster_bootstrap,
    linear_contrast,
    mean_of,
    numeric_values,
    require_columns,
)


def _combos(frame: pd.DataFrame, columns: Sequence[str]) -> list[tuple[Hashable, ...]]:
    """Distinct value combinations of ``columns`` present in ``frame``, in sorted order."""
    if not columns:
        return [()]
    distinct = frame[list(columns)].drop_duplicates()
    combos = list(distinct.itertuples(index=False, name=None))
    return sorted(combos, key=lambda c: tuple(str(v) for v in c))


def _require_levels(
    frame: pd.DataFrame, column: str, levels: Sequence[Hashable], what: str
) -> None:
    present = set(frame[column].unique())
    missing = [level for level in levels if level not in present]
    if missing:
        raise ValueError(
            f"{what}: no rows with {column} == {missing[0]!r}; "
            f"{column} has {sorted(map(str, present))[:12]}"
        )


def difference_statistic(
    frame: pd.DataFrame,
    a: Hashable,
    b: Hashable,
    *,
    by: str = "policy",
    value: str = "correct",
    average_over: Sequence[str] = (),
    weighting: Weighting = "rows",
    label: str = "",
) -> CellStatistic:
    """Mean of ``value`` for ``by == a`` minus ``by == b``.

    With ``average_over`` the difference is taken within each combination of those columns seen
    in ``frame`` and averaged with equal weight; every combination must hold both policies.
    """
    require_columns(frame, [by, *average_over], f"difference {a} - {b}")
    _require_levels(frame, by, [a, b], f"difference {a} - {b}")
    rows = frame[frame[by].isin([a, b])]
    combos = _combos(rows, average_over)
    weights: dict[tuple[Hashable, ...], float] = {}
    for combo in combos:
        weights[(a, *combo)] = 1 / len(combos)
        weights[(b, *combo)] = -1 / len(combos)
    return linear_contrast(
        weights, (by, *average_over), value, weighting=weighting, label=label or f"{a} - {b}"
    )


def interaction_statistic(
    frame: pd.DataFrame,
    a: Hashable = "R1",
    b: Hashable = "B4",
    *,
    factor: str = "decoy",
    levels: tuple[Hashable, Hashable] = ("shared", "private"),
    by: str = "policy",
    value: str = "correct",
    average_over: Sequence[str] = ("support", "irrelevant"),
    weighting: Weighting = "rows",
    label: str = "",
) -> CellStatistic:
    """(a - b | factor = levels[0]) - (a - b | factor = levels[1]), equal-weight over ``average_over``.

    The default is H1 of paper 1: the R1-minus-B4 advantage when decoys are shared minus when
    they are private, averaged over the four support x irrelevant ownership cells.
    """
    if len(levels) != 2 or levels[0] == levels[1]:
        raise ValueError(f"interaction needs two distinct levels of {factor!r}, got {levels!r}")
    what = f"interaction of {a} - {b} with {factor!r}"
    require_columns(frame, [by, factor, *average_over], what)
    _require_levels(frame, by, [a, b], what)
    _require_levels(frame, factor, levels, what)
    rows = frame[frame[by].isin([a, b]) & frame[factor].isin(levels)]
    combos = _combos(rows, average_over)
    weights: dict[tuple[Hashable, ...], float] = {}
    share = 1 / len(combos)
    for combo in combos:
        for level, sign in ((levels[0], 1.0), (levels[1], -1.0)):
            weights[(a, level, *combo)] = sign * share
            weights[(b, level, *combo)] = -sign * share
    return linear_contrast(
        weights,
        (by, factor, *average_over),
        value,
        weighting=weighting,
        label=label or f"({a} - {b} | {factor}={levels[0]}) - ({a} - {b} | {factor}={levels[1]})",
    )


def policy_difference(
    frame: pd.DataFrame,
    a: Hashable,
    b: Hashable,
    *,
    by: str = "policy",
    value: str = "correct",
    cluster: str = "template",
    average_over: Sequence[str] = (),
    weighting: Weighting = "rows",
    n_resamples: int = 10_000,
    ci: float = 0.95,
    seed: int = 0,
) -> BootstrapResult:
    """Cluster-bootstrapped accuracy difference of two policies (see ``difference_statistic``)."""
    stat = difference_statistic(
        frame, a, b, by=by, value=value, average_over=average_over, weighting=weighting
    )
    return cluster_bootstrap(frame, stat, cluster, n_resamples, ci, seed)


def interaction_contrast(
    frame: pd.DataFrame,
    a: Hashable = "R1",
    b: Hashable = "B4",
    *,
    factor: str = "decoy",
    levels: tuple[Hashable, Hashable] = ("shared", "private"),
    by: str = "policy",
    value: str = "correct",
    cluster: str = "template",
    average_over: Sequence[str] = ("support", "irrelevant"),
    weighting: Weighting = "rows",
    n_resamples: int = 10_000,
    ci: float = 0.95,
    seed: int = 0,
) -> BootstrapResult:
    """Cluster-bootstrapped 2x2 interaction contrast (see ``interaction_statistic``)."""
    stat = interaction_statistic(
        frame,
        a,
        b,
        factor=factor,
        levels=levels,
        by=by,
        value=value,
        average_over=average_over,
        weighting=weighting,
    )
    return cluster_bootstrap(frame, stat, cluster, n_resamples, ci, seed)


def paired_differences(
    frame: pd.DataFrame,
    a: Hashable,
    b: Hashable,
    *,
    by: str = "policy",
    value: str = "correct",
    cluster: str = "template",
    pair_on: Sequence[str] | None = None,
) -> pd.DataFrame:
    """One row per matched unit with ``difference`` = value under ``a`` minus under ``b``.

    Units are the clusters (``pair_on=None``: each cluster's mean under ``a`` minus its mean under
    ``b``) or the ``(cluster, *pair_on)`` keys, each of which must have exactly one row per policy.
    """
    keys = [cluster, *(pair_on or ())]
    what = f"paired difference {a} - {b}"
    require_columns(frame, [*keys, by, value], what)
    rows = frame[frame[by].isin([a, b])]
    values = pd.Series(numeric_values(rows, value, what), index=rows.index)
    grouped = values.groupby([rows[k] for k in keys] + [rows[by]], sort=True)
    if pair_on:
        sizes = grouped.size()
        if (sizes > 1).any():
            dup = sizes[sizes > 1].index[0]
            raise ValueError(
                f"{what}: key {dict(zip([*keys, by], dup, strict=True))} has {sizes[dup]} rows; "
                f"pair_on={list(pair_on)} must identify one row per policy"
            )
    table = grouped.mean().unstack(by)
    for arm in (a, b):
        if arm not in table.columns:
            raise ValueError(f"{what}: no rows with {by} == {arm!r}")
    unmatched = table[[a, b]].isna().any(axis=1)
    if unmatched.any():
        first = table.index[unmatched.to_numpy()][0]
        raise ValueError(
            f"{what}: {int(unmatched.sum())} unit(s) lack one of the two policies, "
            f"first {dict(zip(keys, _as_tuple(first), strict=True))}"
        )
    out = table.reset_index()[keys]
    out["difference"] = (table[a] - table[b]).to_numpy()
    return out


def _as_tuple(key: Hashable) -> tuple[Hashable, ...]:
    return key if isinstance(key, tuple) else (key,)


def paired_difference(
    frame: pd.DataFrame,
    a: Hashable,
    b: Hashable,
    *,
    by: str = "policy",
    value: str = "correct",
    cluster: str = "template",
    pair_on: Sequence[str] | None = None,
    n_resamples: int = 10_000,
    ci: float = 0.95,
    seed: int = 0,
) -> BootstrapResult:
    """Mean within-unit difference ``a - b``, resampling clusters (see ``paired_differences``)."""
    pairs = paired_differences(frame, a, b, by=by, value=value, cluster=cluster, pair_on=pair_on)
    stat = mean_of("difference", label=f"{a} - {b} (paired)")
    return cluster_bootstrap(pairs, stat, cluster, n_resamples, ci, seed)


def cell_means(frame: pd.DataFrame, by: str | Sequence[str], value: str = "correct") -> pd.Series:
    """Observed mean of ``value`` per cell of ``by`` (a quick table for notebooks)."""
    by = [by] if isinstance(by, str) else list(by)
    require_columns(frame, [*by, value], "cell_means")
    values = pd.Series(numeric_values(frame, value, "cell_means"), index=frame.index)
    return values.groupby([frame[c] for c in by]).mean().rename(value)
