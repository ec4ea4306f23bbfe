"""Multiplicity adjustments: Holm (family-wise error) and Benjamini-Hochberg (false discovery
rate), computed by ``statsmodels.stats.multitest.multipletests``; this module adds input checks."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from statsmodels.stats.multitest import multipletests


def _check(pvalues: Sequence[float] | np.ndarray, what: str) -> np.ndarray:
    p = np.asarray(pvalues, dtype=float)
    if p.ndim != 1:
        raise ValueError(f"{what}: p-values must be one-dimensional, got shape {p.shape}")
    if np.isnan(p).any() or (p < 0).any() or (p > 1).any():
        raise ValueError(f"{what}: p-values must lie in [0, 1] and not be NaN: {p.tolist()}")
    return p


def _adjusted(pvalues: Sequence[float] | np.ndarray, method: str, what: str) -> np.ndarray:
    p = _check(pvalues, what)
    if p.size == 0:
        return p.copy()
    return np.asarray(multipletests(p, method=method)[1], dtype=float)


def holm(pvalues: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm step-down adjusted p-values, in the input order (statsmodels' ``holm``).

    Sorted ascending, the i-th (0-based) of m is adjusted to max_{j<=i} min(1, (m - j) p_(j)).
    """
    return _adjusted(pvalues, "holm", "holm")


def benjamini_hochberg(pvalues: Sequence[float] | np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg step-up adjusted p-values (q-values), in the input order
    (statsmodels' ``fdr_bh``).

    Sorted ascending, the i-th (1-based) of m is adjusted to min_{j>=i} min(1, m p_(j) / j).
    """
    return _adjusted(pvalues, "fdr_bh", "benjamini_hochberg")
