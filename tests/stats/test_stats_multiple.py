"""Holm and Benjamini-Hochberg adjustments (through statsmodels): hand-worked values, the
defining properties on random p-values, and input checks."""

from __future__ import annotations

import numpy as np
import pytest

from deliberation.stats import benjamini_hochberg, holm


def test_holm_by_hand_for_three_tests():
    # sorted 0.01, 0.02, 0.04 -> 3 x 0.01, max(0.03, 2 x 0.02), max(0.04, 1 x 0.04)
    assert holm([0.04, 0.01, 0.02]).tolist() == pytest.approx([0.04, 0.03, 0.04])
    # step-down monotonicity: 0.5 x 2 = 1.0 caps, later ones inherit at least that
    assert holm([0.5, 0.9]).tolist() == pytest.approx([1.0, 1.0])


@pytest.mark.parametrize("m", [1, 3, 10, 57])
def test_holm_matches_its_step_down_formula_in_input_order(m):
    p = np.random.default_rng(m).uniform(0, 0.2, size=m) ** 2
    p[::4] = p[0]  # ties
    order = np.argsort(p, kind="stable")
    stepped = np.maximum.accumulate(np.minimum(1.0, (m - np.arange(m)) * p[order]))
    np.testing.assert_allclose(holm(p)[order], stepped)


def test_benjamini_hochberg_by_hand():
    # sorted 0.01, 0.03, 0.04 with m = 3: 0.03, min(0.045, 0.04), 0.04
    assert benjamini_hochberg([0.04, 0.01, 0.03]).tolist() == pytest.approx([0.04, 0.03, 0.04])


@pytest.mark.parametrize("m", [1, 4, 25, 200])
def test_benjamini_hochberg_matches_its_step_up_formula_in_input_order(m):
    p = np.random.default_rng(100 + m).uniform(size=m) ** 3
    order = np.argsort(p, kind="stable")
    stepped = np.minimum(1.0, m * p[order] / np.arange(1, m + 1))
    expected = np.minimum.accumulate(stepped[::-1])[::-1]
    np.testing.assert_allclose(benjamini_hochberg(p)[order], expected)


def test_no_p_values_give_no_adjusted_values():
    assert holm([]).size == 0 and benjamini_hochberg([]).size == 0


@pytest.mark.parametrize("bad", [[0.1, np.nan], [1.2], [-0.1], [[0.1, 0.2]]])
def test_invalid_p_values_are_rejected(bad):
    with pytest.raises(ValueError):
        holm(bad)
    with pytest.raises(ValueError):
        benjamini_hochberg(bad)
