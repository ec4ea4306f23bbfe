"""K-fold cross-fitting: choose on some units, score on the others, never both on the same draws.

Units are the distinct values of ``by`` (a problem, or a replay block such as (problem, replay)).
Each fold's ``fit`` sees only the other folds' rows; ``evaluate`` scores that fitted choice on the
held-out fold. Paper 2 uses it to compare a trajectory-value selector with a correctness-only
baseline without selecting and scoring on the same replays.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from deliberation.stats.bootstrap import require_columns

_Evaluation = float | Mapping[str, Any] | pd.Series | pd.DataFrame


def fold_assignment(n_units: int, folds: int, rng: np.random.Generator) -> np.ndarray:
    """Fold index (0..folds-1) for each of ``n_units`` units: balanced sizes, random order."""
    if int(folds) != folds or folds < 2:
        raise ValueError(f"folds must be an integer >= 2, not {folds!r}")
    if n_units < folds:
        raise ValueError(f"cannot split {n_units} unit(s) into {folds} folds")
    assignment = np.empty(n_units, dtype=np.int64)
    assignment[rng.permutation(n_units)] = np.arange(n_units) % folds
    return assignment


@dataclass(frozen=True, eq=False)
class CrossFitResult:
    """Held-out scores per fold (with ``fold`` and ``n_test`` columns), fold of each unit, models."""

    scores: pd.DataFrame
    assignment: pd.DataFrame  # the ``by`` columns + fold
    models: tuple[Any, ...]
    by: tuple[str, ...]


def _rows(evaluation: _Evaluation, fold: int, n_test: int) -> pd.DataFrame:
    if isinstance(evaluation, pd.DataFrame):
        table = evaluation.copy()
    elif isinstance(evaluation, pd.Series):
        table = evaluation.to_frame().T.reset_index(drop=True)
    elif isinstance(evaluation, Mapping):
        table = pd.DataFrame([dict(evaluation)])
    elif np.isscalar(evaluation):
        table = pd.DataFrame({"score": [evaluation]})
    else:
        raise TypeError(
            "cross_fit: evaluate must return a number, a mapping, a Series or a DataFrame, "
            f"not {type(evaluation).__name__}"
        )
    table.insert(0, "n_test", n_test)
    table.insert(0, "fold", fold)
    return table


def cross_fit(
    frame: pd.DataFrame,
    fit: Callable[[pd.DataFrame], Any],
    evaluate: Callable[[Any, pd.DataFrame], _Evaluation],
    folds: int = 5,
    by: str | Sequence[str] = "problem",
    seed: int = 0,
) -> CrossFitResult:
    """For each fold: ``model = fit(train)``, ``evaluate(model, test)``; units of ``by`` never
    straddle folds. Fold assignment is deterministic given ``seed`` and the set of units."""
    by = (by,) if isinstance(by, str) else tuple(by)
    require_columns(frame, by, "cross_fit")
    if frame[list(by)].isna().any().any():
        raise ValueError(f"cross_fit: fold columns {list(by)} have missing values")
    units = frame[list(by)].drop_duplicates()
    units = units.sort_values(list(by), key=lambda col: col.astype(str)).reset_index(drop=True)
    units["fold"] = fold_assignment(len(units), folds, np.random.default_rng(seed))
    row_fold = frame[list(by)].merge(units, on=list(by), how="left")["fold"].to_numpy()
    tables: list[pd.DataFrame] = []
    models: list[Any] = []
    for k in range(folds):
        held_out = row_fold == k
        train, test = frame.loc[~held_out], frame.loc[held_out]
        model = fit(train)
        models.append(model)
        tables.append(_rows(evaluate(model, test), k, int(held_out.sum())))
    scores = pd.concat(tables, ignore_index=True)
    return CrossFitResult(scores=scores, assignment=units, models=tuple(models), by=by)
