"""Logistic wrapper: same coefficients as statsmodels, cluster-robust SEs, predictions, LR test."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
import statsmodels.formula.api as smf
from scipy import stats as sps

from deliberation.stats import (
    EVIDENCE_FORMULA,
    POLICY_FORMULA,
    likelihood_ratio_test,
    logistic_accuracy,
    predicted_accuracy,
)


def decisions(policy_effect: float, seed: int, n_templates: int = 40) -> pd.DataFrame:
    """Rows from a known logit: -0.3 + 0.9 lead + 0.3 tone + template effect (+ effect if B4)."""
    rng = np.random.default_rng(seed)
    n = n_templates * 30
    frame = pd.DataFrame(
        {
            "template": np.repeat([f"T{k}" for k in range(n_templates)], 30),
            "policy": rng.choice(["R1", "B4", "Random"], size=n),
            "net_lead": rng.integers(-2, 5, size=n),
            "tone_lead": rng.integers(-2, 3, size=n),
        }
    )
    template_effect = np.repeat(rng.normal(0, 0.5, n_templates), 30)
    logit = (
        -0.3
        + 0.9 * frame["net_lead"]
        + 0.3 * frame["tone_lead"]
        + template_effect
        + policy_effect * (frame["policy"] == "B4")
    )
    frame["correct"] = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)
    return frame


def test_coefficients_and_cluster_robust_errors_equal_a_direct_statsmodels_fit():
    frame = decisions(0.0, seed=1)
    fit = logistic_accuracy(frame, POLICY_FORMULA, cluster="template")
    direct = smf.logit(POLICY_FORMULA, frame).fit(disp=0)
    clustered = smf.logit(POLICY_FORMULA, frame).fit(
        disp=0, cov_type="cluster", cov_kwds={"groups": pd.factorize(frame["template"])[0]}
    )
    glm = smf.glm(POLICY_FORMULA, frame, family=sm.families.Binomial()).fit()
    pd.testing.assert_series_equal(fit.params, direct.params)
    np.testing.assert_allclose(fit.params, glm.params, rtol=1e-6)
    np.testing.assert_allclose(fit.bse, clustered.bse)
    assert not np.allclose(fit.bse, direct.bse)  # the clustered errors are really different
    assert fit.n_clusters == 40 and fit.n_obs == len(frame) and fit.converged
    table = fit.coefficients()
    assert table["term"].tolist() == list(direct.params.index)
    np.testing.assert_allclose(table["odds_ratio"], np.exp(direct.params))
    assert (table["low"] < table["coef"]).all() and (table["coef"] < table["high"]).all()


def test_recovers_the_planted_lead_coefficient():
    fit = logistic_accuracy(decisions(0.0, seed=2, n_templates=80), EVIDENCE_FORMULA)
    low, high = fit.result.conf_int().loc["net_lead"]
    # the template effect attenuates the marginal slope a little below 0.9
    assert 0.6 < fit.params["net_lead"] < 1.0
    assert low < fit.params["net_lead"] < high


def test_predicted_accuracy_by_lead_is_the_fitted_curve_when_lead_is_the_only_term():
    frame = decisions(0.0, seed=3)
    fit = logistic_accuracy(frame, "correct ~ net_lead")
    table = predicted_accuracy(fit, frame, "net_lead", levels=range(-2, 5), seed=0)
    b0, b1 = fit.params["Intercept"], fit.params["net_lead"]
    expected = 1 / (1 + np.exp(-(b0 + b1 * np.arange(-2, 5))))
    np.testing.assert_allclose(table["predicted"], expected)
    assert table["net_lead"].tolist() == list(range(-2, 5))
    assert (np.diff(table["predicted"]) > 0).all()
    assert (table["low"] <= table["predicted"]).all() and (
        table["predicted"] <= table["high"]
    ).all()
    observed = frame.groupby("net_lead")["correct"].mean()
    np.testing.assert_allclose(table["observed"], observed.loc[range(-2, 5)])
    assert table["n"].sum() == len(frame)


def test_predicted_accuracy_averages_over_the_other_covariates():
    frame = decisions(0.0, seed=4)
    fit = logistic_accuracy(frame, POLICY_FORMULA)
    table = predicted_accuracy(fit, frame, "net_lead", levels=[0, 2], n_draws=500)
    manual = [fit.result.predict(frame.assign(net_lead=level)).mean() for level in (0, 2)]
    np.testing.assert_allclose(table["predicted"], manual)


def test_intercept_only_prediction_is_the_overall_accuracy():
    frame = decisions(0.0, seed=5)
    fit = logistic_accuracy(frame, "correct ~ 1")
    predicted = 1 / (1 + np.exp(-fit.params["Intercept"]))
    assert predicted == pytest.approx(frame["correct"].mean())


def test_likelihood_ratio_statistic_matches_direct_fits():
    frame = decisions(0.0, seed=6)
    test = likelihood_ratio_test(frame)
    full = smf.logit(POLICY_FORMULA, frame).fit(disp=0)
    reduced = smf.logit(EVIDENCE_FORMULA, frame).fit(disp=0)
    assert test.statistic == pytest.approx(2 * (full.llf - reduced.llf))
    assert test.df == 2
    assert test.p_value == pytest.approx(sps.chi2.sf(test.statistic, 2))
    assert set(test.added_terms) == {"C(policy)[T.R1]", "C(policy)[T.Random]"}


def test_policy_terms_are_detected_when_planted_and_not_when_absent():
    planted = likelihood_ratio_test(decisions(-1.0, seed=7))
    assert planted.p_value < 1e-3 and planted.wald_p_value < 1e-3
    absent = likelihood_ratio_test(decisions(0.0, seed=7))
    assert absent.p_value > 0.01 and absent.wald_p_value > 0.01


def test_clear_errors_for_missing_values_bad_outcomes_and_non_nested_models():
    frame = decisions(0.0, seed=8)
    with_gap = frame.astype({"net_lead": float})
    with_gap.loc[3, "net_lead"] = np.nan
    with pytest.raises(ValueError, match="'net_lead' has 1 missing"):
        logistic_accuracy(with_gap)
    with pytest.raises(ValueError, match="must be 0/1"):
        logistic_accuracy(frame.assign(correct=frame["correct"] * 2))
    with pytest.raises(KeyError, match="'template'"):
        logistic_accuracy(frame.drop(columns="template"))
    with pytest.raises(ValueError, match="not nested"):
        likelihood_ratio_test(frame, POLICY_FORMULA, "correct ~ C(template)")
    boolean = logistic_accuracy(frame.assign(correct=frame["correct"].astype(bool)))
    np.testing.assert_allclose(boolean.params, logistic_accuracy(frame).params)
