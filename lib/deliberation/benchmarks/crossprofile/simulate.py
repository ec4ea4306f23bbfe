"""Synthetic clustered results frames with planted cell accuracies, for checking the statistics.

Each template k gets a shared shift u_k ~ U(-a, a) and each (template, cell) a shift
v_kc ~ U(-b, b); the row-level probability of a correct answer is p_kc = accuracy(cell) + u_k +
v_kc. Because the shifts have mean zero and no clipping is needed (this is checked), the
population mean accuracy of a cell over templates is exactly ``accuracy(cell)``, so the true value
of any contrast of cell means is known (``population_value``). Used by the tests (coverage,
parameter recovery) and the benchmark; not a model of LLM behaviour (that is the sim backend).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from deliberation.benchmarks.crossprofile.variants import GROUPS, OWNERSHIP_LEVELS, OwnershipVariant
from deliberation.stats.bootstrap import CellStatistic

# The ownership factors and their levels, and the variant label, are CrossProfile's own.
_OWNERSHIP_FACTORS = GROUPS

_Accuracy = Callable[..., float]  # accuracy(policy=..., support=..., decoy=..., irrelevant=...)


def _design_grid(policies: Sequence[str]) -> pd.DataFrame:
    """Every policy x support x decoy x irrelevant ownership combination, one row each."""
    rows = itertools.product(policies, *(OWNERSHIP_LEVELS,) * len(_OWNERSHIP_FACTORS))
    return pd.DataFrame(list(rows), columns=["policy", *_OWNERSHIP_FACTORS])


def simulate_results_frame(
    accuracy: _Accuracy,
    policies: Sequence[str],
    rng: np.random.Generator,
    *,
    n_templates: int = 60,
    budgets: Sequence[float] = (0.6,),
    replicates: int = 1,
    template_spread: float = 0.1,
    cell_spread: float = 0.1,
) -> pd.DataFrame:
    """One row per template x policy x variant x budget x replicate with a 0/1 ``correct``.

    Columns: template, policy, support, decoy, irrelevant, variant, budget, replicate, correct.
    """
    grid = _design_grid(policies)
    base = np.array([float(accuracy(**row)) for row in grid.to_dict("records")])
    spread = template_spread + cell_spread
    if (base - spread < 0).any() or (base + spread > 1).any():
        raise ValueError(
            f"planted accuracies {base.min():.3f}..{base.max():.3f} +/- {spread:.3f} leave [0, 1]"
        )
    n_cells = len(grid)
    u = rng.uniform(-template_spread, template_spread, size=(n_templates, 1))
    v = rng.uniform(-cell_spread, cell_spread, size=(n_templates, n_cells))
    p = base[None, :] + u + v  # (templates, cells)
    n_rep = len(budgets) * replicates
    draws = rng.random((n_templates, n_cells, n_rep)) < p[:, :, None]
    template = np.repeat(np.arange(n_templates), n_cells * n_rep)
    cell = np.tile(np.repeat(np.arange(n_cells), n_rep), n_templates)
    repeat = np.tile(np.arange(n_rep), n_templates * n_cells)
    variants = np.array(
        [OwnershipVariant(*row).id for row in grid[list(_OWNERSHIP_FACTORS)].to_numpy()]
    )
    columns: dict[str, object] = {
        "template": np.array([f"T{k:03d}" for k in range(n_templates)])[template]
    }
    for column in grid.columns:
        columns[column] = grid[column].to_numpy(dtype=object)[cell]
    columns["variant"] = variants[cell]
    columns["budget"] = np.asarray(budgets, dtype=float)[repeat // replicates]
    columns["replicate"] = repeat % replicates
    columns["correct"] = draws.reshape(-1).astype(np.int64)
    frame = pd.DataFrame(columns)
    return frame


def population_value(
    statistic: CellStatistic, accuracy: _Accuracy, policies: Sequence[str]
) -> float:
    """The statistic's true value: cell means are planted accuracies averaged over the grid."""
    grid = _design_grid(policies)
    grid["accuracy"] = [float(accuracy(**row)) for row in grid.to_dict("records")]
    means = []
    for cell in statistic.cells:
        match = np.ones(len(grid), dtype=bool)
        for column, level in zip(statistic.by, cell, strict=True):
            match &= (grid[column] == level).to_numpy()
        if not match.any():
            raise ValueError(f"cell {cell!r} of {statistic.by!r} is not in the design grid")
        means.append(grid.loc[match, "accuracy"].mean())
    return float(statistic.combine(np.array(means)[None, :])[0])
