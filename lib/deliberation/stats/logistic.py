"""Logistic models of correctness with cluster-robust standard errors.

Paper 1 asks whether accuracy follows the evidence the memory kept rather than the policy that
kept it: regress ``correct`` on net evidence lead and tone lead (both signed relative to the
options: the correct option's score or tone minus the best competitor's), then ask whether policy
terms add anything (likelihood-ratio test, plus a cluster-robust Wald test, which
does not assume rows of one template are independent).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import statsmodels.formula.api as smf
from scipy import stats as sps

from deliberation.stats.bootstrap import require_columns

logger = logging.getLogger(__name__)

# Tone enters signed (``tone_lead``), not summed over options (``irrelevant_tone``): a decision
# maker pulled by tone favours the option whose noise sounds best, and on a bank whose tones
# balance across options the unsigned sum cancels and cannot show that pull.
EVIDENCE_FORMULA = "correct ~ net_lead + tone_lead"
POLICY_FORMULA = "correct ~ net_lead + tone_lead + C(policy)"

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True, eq=False)
class LogisticFit:
    """A fitted logit of a 0/1 outcome with cluster-robust covariance (statsmodels result inside)."""

    formula: str
    cluster: str
    n_obs: int
    n_clusters: int
    result: Any  # statsmodels BinaryResultsWrapper

    @property
    def params(self) -> pd.Series:
        return self.result.params

    @property
    def bse(self) -> pd.Series:
        return self.result.bse

    @property
    def converged(self) -> bool:
        return bool(self.result.mle_retvals.get("converged", True))

    def coefficients(self, ci: float = 0.95) -> pd.DataFrame:
        """Coefficient table: estimate, cluster-robust SE, z, p, interval, odds ratio."""
        low, high = self.result.conf_int(alpha=1 - ci).T.to_numpy()
        return pd.DataFrame(
            {
                "term": self.params.index,
                "coef": self.params.to_numpy(),
                "se": self.bse.to_numpy(),
                "z": self.result.tvalues.to_numpy(),
                "p_value": self.result.pvalues.to_numpy(),
                "low": low,
                "high": high,
                "odds_ratio": np.exp(self.params.to_numpy()),
            }
        )


def _formula_columns(frame: pd.DataFrame, formula: str) -> list[str]:
    names = set(_NAME.findall(formula))
    return [c for c in frame.columns if c in names]


def _outcome_column(formula: str) -> str:
    if "~" not in formula:
        raise ValueError(f"formula {formula!r} has no '~'")
    lhs = formula.split("~", 1)[0].strip()
    if not _NAME.fullmatch(lhs):
        raise ValueError(f"formula {formula!r}: the outcome must be a plain column name")
    return lhs


def _model_data(frame: pd.DataFrame, formulas: Sequence[str], cluster: str) -> pd.DataFrame:
    """The columns the formulas use, checked: present, no missing values, 0/1 outcome."""
    outcomes = {_outcome_column(f) for f in formulas}
    require_columns(frame, [*outcomes, cluster], f"logistic model {formulas[0]!r}")
    columns = list(dict.fromkeys([c for f in formulas for c in _formula_columns(frame, f)]))
    data = frame[list(dict.fromkeys([*columns, cluster]))].copy()
    for column in data.columns:
        n_missing = int(data[column].isna().sum())
        if n_missing:
            raise ValueError(
                f"logistic model {formulas[0]!r}: column {column!r} has {n_missing} missing "
                "value(s); drop or fill them explicitly first"
            )
    for outcome in outcomes:
        if data[outcome].dtype == bool:
            data[outcome] = data[outcome].astype(int)
        bad = ~data[outcome].isin([0, 1])
        if bad.any():
            raise ValueError(
                f"logistic model: outcome {outcome!r} must be 0/1; found "
                f"{sorted(map(str, data.loc[bad, outcome].unique()))[:5]}"
            )
    return data


def _fit(data: pd.DataFrame, formula: str, cluster: str) -> LogisticFit:
    groups = pd.factorize(data[cluster])[0]
    try:
        model = smf.logit(formula, data)
    except Exception as exc:  # patsy/formulaic errors: re-raise naming the formula
        raise ValueError(f"cannot build logistic model {formula!r}: {exc}") from exc
    result = model.fit(disp=0, maxiter=200, cov_type="cluster", cov_kwds={"groups": groups})
    fit = LogisticFit(
        formula=formula,
        cluster=cluster,
        n_obs=int(result.nobs),
        n_clusters=int(groups.max()) + 1,
        result=result,
    )
    if not fit.converged:
        logger.warning("logistic model %r did not converge", formula)
    return fit


def logistic_accuracy(
    frame: pd.DataFrame, formula: str = POLICY_FORMULA, cluster: str = "template"
) -> LogisticFit:
    """Fit ``formula`` (patsy syntax, 0/1 outcome) by logit with standard errors clustered by
    ``cluster``; coefficients are exactly those of ``statsmodels.formula.api.logit``."""
    return _fit(_model_data(frame, [formula], cluster), formula, cluster)


def _design_matrix(fit: LogisticFit, data: pd.DataFrame) -> np.ndarray:
    """The model's design matrix for new rows, built with the fitted formula's encoding."""
    spec = fit.result.model.data.model_spec
    if hasattr(spec, "get_model_matrix"):  # formulaic engine
        return np.asarray(spec.get_model_matrix(data), dtype=float)
    import patsy

    return np.asarray(patsy.build_design_matrices([spec], data)[0], dtype=float)


def predicted_accuracy(
    fit: LogisticFit,
    frame: pd.DataFrame,
    factor: str = "net_lead",
    levels: Sequence[Any] | None = None,
    *,
    ci: float = 0.95,
    n_draws: int = 2000,
    seed: int = 0,
) -> pd.DataFrame:
    """Average predicted accuracy with ``factor`` set to each level for every row of ``frame``.

    This is the model's accuracy "as if every decision had lead = level" (standardisation over the
    observed rows). The interval comes from ``n_draws`` coefficient vectors drawn from the
    normal approximation with the cluster-robust covariance. ``observed`` is the raw accuracy of
    rows that actually have that level (NaN if none).
    """
    outcome = _outcome_column(fit.formula)
    data = _model_data(frame, [fit.formula], fit.cluster)
    if factor not in data.columns:
        raise KeyError(f"predicted_accuracy: factor {factor!r} is not a column the model uses")
    if levels is None:
        levels = sorted(data[factor].unique())
    rng = np.random.default_rng(seed)
    params = fit.params.to_numpy()
    draws = rng.multivariate_normal(params, fit.result.cov_params().to_numpy(), size=n_draws)
    alpha = (1 - ci) / 2
    rows = []
    for level in levels:
        x = _design_matrix(fit, data.assign(**{factor: level}))
        unique, weight = np.unique(x, axis=0, return_counts=True)
        weight = weight / weight.sum()
        point = float(weight @ (1 / (1 + np.exp(-(unique @ params)))))
        sampled = (1 / (1 + np.exp(-(unique @ draws.T)))).T @ weight
        observed = data.loc[data[factor] == level, outcome]
        rows.append(
            {
                factor: level,
                "predicted": point,
                "low": float(np.quantile(sampled, alpha)),
                "high": float(np.quantile(sampled, 1 - alpha)),
                "observed": float(observed.mean()) if len(observed) else float("nan"),
                "n": int(len(observed)),
            }
        )
    return pd.DataFrame(rows)


@dataclass(frozen=True, eq=False)
class LikelihoodRatioTest:
    """Does the full model beat the nested reduced one? LR test plus cluster-robust Wald test."""

    statistic: float
    df: int
    p_value: float
    wald_statistic: float
    wald_p_value: float
    added_terms: tuple[str, ...]
    full: LogisticFit
    reduced: LogisticFit


def likelihood_ratio_test(
    frame: pd.DataFrame,
    full: str = POLICY_FORMULA,
    reduced: str = EVIDENCE_FORMULA,
    cluster: str = "template",
) -> LikelihoodRatioTest:
    """Test whether the terms in ``full`` but not ``reduced`` (by default the policy terms) add
    anything once net lead and tone lead are in; both models are fit on the same rows.

    The LR statistic 2 (llf_full - llf_reduced) ~ chi2(df) treats rows as independent; the Wald
    test of the added coefficients uses the cluster-robust covariance and is the safer reading
    when rows of a template are correlated.
    """
    data = _model_data(frame, [full, reduced], cluster)
    full_fit = _fit(data, full, cluster)
    reduced_fit = _fit(data, reduced, cluster)
    full_names = list(full_fit.params.index)
    missing = [n for n in reduced_fit.params.index if n not in full_names]
    if missing:
        raise ValueError(f"reduced model {reduced!r} is not nested in {full!r}: {missing}")
    added = [n for n in full_names if n not in set(reduced_fit.params.index)]
    if not added:
        raise ValueError(f"full model {full!r} adds no terms to {reduced!r}")
    statistic = max(0.0, 2 * (full_fit.result.llf - reduced_fit.result.llf))
    df = len(added)
    restriction = np.zeros((df, len(full_names)))
    for row, name in enumerate(added):
        restriction[row, full_names.index(name)] = 1.0
    wald = full_fit.result.wald_test(restriction, scalar=True, use_f=False)
    return LikelihoodRatioTest(
        statistic=float(statistic),
        df=df,
        p_value=float(sps.chi2.sf(statistic, df)),
        wald_statistic=float(np.squeeze(wald.statistic)),
        wald_p_value=float(np.squeeze(wald.pvalue)),
        added_terms=tuple(added),
        full=full_fit,
        reduced=reduced_fit,
    )
