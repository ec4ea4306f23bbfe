"""Multiplicity adjustments: Holm (family-wise error) and Benjamini-Hochberg (false discovery rate)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def _check(pvalues: Sequence[float] | np.ndarray, what: str) -> np.ndarray:
    p = np.asarray(pvalues, dtype=float)
    if p.ndim != 1:
        raise ValueError(f"{what}: p-values must be one-dimensional, got shape {p.shape}")
    if np.isnan(p).any() or (p < 0).any() or (p > 1).any():
        raise ValueError(f"{what}: p-values must lie in [0, 1] and not be NaN: {p.tolist()}")
    return p


def holm(pvalues: Sequence[float] | np.ndarray) -> np.ndarray:
    """Holm step-down adjusted p-values, in the input order.

    Sorted ascending, the i-th (0-based) of m is adjusted to max_{j<=i} min(1, (m - j) p_(j)).
    """
    p = _check(pvalues, "holm")
    m = p.size
    order = np.argsort(p, kind="stable")
    stepped = np.minimum(1.0, (m - np.arange(m)) * p[order])
    adjusted = np.empty(m)
    adjusted[order] = np.maximum.accumulate(stepped)
    return adjusted


def benjamini_hochberg(pvalues: Sequence[float] | np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg step-up adjusted p-values (q-values), in the input order.

    Sorted ascending, the i-th (1-based) of m is adjusted to min_{j>=i} min(1, m p_(j) / j).
    """
    p = _check(pvalues, "benjamini_hochberg")
    m = p.size
    order = np.argsort(p, kind="stable")
    stepped = np.minimum(1.0, m * p[order] / np.arange(1, m + 1))
    adjusted = np.empty(m)
    adjusted[order] = np.minimum.accumulate(stepped[::-1])[::-1]
    return adjusted
