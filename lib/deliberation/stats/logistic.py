"""Logistic models of correctness with cluster-robust standard errors, counting calls.

Paper 1 asks whether accuracy follows the evidence the memory kept rather than the policy that
kept it: regress ``correct`` on net evidence lead and tone lead (both signed relative to the
options: the correct option's score or tone minus the best competitor's), then ask whether policy
terms add anything (likelihood-ratio test, plus a cluster-robust Wald test, which
does not assume rows of one template are independent).

Rows are not observations: identical requests are one call, so each row is weighted by one over
the rows sharing its call (a call copied into two grid cells weighs 1 in all), and likelihoods,
likelihood-ratio tests and standard errors count calls, not copies (``statsmodels`` GLM with
``freq_weights``). Inference uses Student's t and F with G - 1 denominator degrees of freedom
(``use_t``), as the cluster t of :mod:`deliberation.stats.cluster_t`. A non-significant test of
the policy terms is absence of evidence; :func:`equivalence_p` (two one-sided tests against a
stated odds-ratio bound) is what would show they are near zero.
"""

from __future__ import annotations

import logging
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import statsmodels.api as sm
import statsmodels.formula.api as smf
from scipy import stats as sps

from deliberation.stats.bootstrap import require_columns
from deliberation.stats.small_samples import call_column

# A policy term is "near zero" when its odds ratio lies within [1/bound, bound] (TOST).
EQUIVALENCE_ODDS_RATIO = 1.5

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
    n_obs: int  # rows
    n_clusters: int
    result: Any  # statsmodels GLMResultsWrapper (binomial, weighted by call)
    n_calls: float | None = None  # the rows' weight: distinct calls (None: rows name no call)

    @property
    def params(self) -> pd.Series:
        return self.result.params

    @property
    def bse(self) -> pd.Series:
        return self.result.bse

    @property
    def converged(self) -> bool:
        return bool(getattr(self.result, "converged", True))

    @property
    def df(self) -> int:
        """Degrees of freedom of the cluster-robust t: clusters - 1."""
        return max(self.n_clusters - 1, 1)

    def coefficients(
        self, ci: float = 0.95, equivalence_odds_ratio: float = EQUIVALENCE_ODDS_RATIO
    ) -> pd.DataFrame:
        """Coefficient table: estimate, cluster-robust SE, t (G - 1 df), p, interval, odds
        ratio, and the equivalence p against ``equivalence_odds_ratio`` (:func:`equivalence_p`)."""
        low, high = self.result.conf_int(alpha=1 - ci).T.to_numpy()
        params, se = self.params.to_numpy(), self.bse.to_numpy()
        return pd.DataFrame(
            {
                "term": self.params.index,
                "coef": params,
                "se": se,
                "t": self.result.tvalues.to_numpy(),
                "p_value": self.result.pvalues.to_numpy(),
                "low": low,
                "high": high,
                "odds_ratio": np.exp(params),
                "p_equivalence": equivalence_p(params, se, self.df, equivalence_odds_ratio),
            }
        )


def equivalence_p(
    coef: np.ndarray, se: np.ndarray, df: int, odds_ratio: float = EQUIVALENCE_ODDS_RATIO
) -> np.ndarray:
    """Two one-sided t tests (TOST) that a log odds ratio lies within +-log(``odds_ratio``):
    the larger of the two one-sided p-values; small means "near zero" is shown, not assumed."""
    bound = np.log(odds_ratio)
    coef, se = np.asarray(coef, dtype=float), np.asarray(se, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        lower = sps.t.sf((coef + bound) / se, df)
        upper = sps.t.cdf((coef - bound) / se, df)
    return np.maximum(lower, upper)


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
    calls = call_column(frame)
    keep = [*columns, cluster, *([calls] if calls else [])]
    data = frame[list(dict.fromkeys(keep))].copy()
    for column in [c for c in data.columns if c != calls]:
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


def call_weights(data: pd.DataFrame) -> np.ndarray:
    """One over the rows sharing each row's call (1 for a row naming no call), so every
    distinct call weighs 1 however many grid cells copied it."""
    calls = call_column(data)
    if calls is None:
        return np.ones(len(data))
    keys = data[calls].astype(object)
    named = keys.notna() & (keys.astype(str) != "")
    copies = keys.map(keys[named].value_counts()).fillna(1).to_numpy(dtype=float)
    return np.where(named.to_numpy(), 1.0 / copies, 1.0)


def _fit(data: pd.DataFrame, formula: str, cluster: str) -> LogisticFit:
    groups = pd.factorize(data[cluster])[0]
    weights = call_weights(data)
    try:
        model = smf.glm(formula, data, family=sm.families.Binomial(), freq_weights=weights)
    except Exception as exc:  # patsy/formulaic errors: re-raise naming the formula
        raise ValueError(f"cannot build logistic model {formula!r}: {exc}") from exc
    with warnings.catch_warnings():
        # statsmodels warns that freq_weights are not supported by every covariance; the
        # cluster sandwich sums weighted scores, as expanding the copies would
        # (tests/stats/test_stats_logistic.py checks it against the expanded rows).
        warnings.filterwarnings("ignore", "cov_type not fully supported", Warning)
        result = model.fit(maxiter=200, cov_type="cluster", cov_kwds={"groups": groups}, use_t=True)
    fit = LogisticFit(
        formula=formula,
        cluster=cluster,
        n_obs=len(data),
        n_clusters=int(groups.max()) + 1,
        result=result,
        n_calls=float(weights.sum()) if call_column(data) else None,
    )
    if not fit.converged:
        logger.warning("logistic model %r did not converge", formula)
    return fit


def logistic_accuracy(
    frame: pd.DataFrame, formula: str = POLICY_FORMULA, cluster: str = "template"
) -> LogisticFit:
    """Fit ``formula`` (patsy syntax, 0/1 outcome) by logit, each row weighted by one over the
    copies of its call, with standard errors clustered by ``cluster`` (t with G - 1 df);
    without copies the coefficients are exactly those of ``statsmodels.formula.api.logit``."""
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
    """Does the full model beat the nested reduced one? LR test (calls as observations) plus
    the cluster-robust Wald F test (G - 1 denominator df)."""

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

    The LR statistic 2 (llf_full - llf_reduced) ~ chi2(df) counts each distinct call once but
    treats calls as independent; the Wald F test of the added coefficients uses the
    cluster-robust covariance with G - 1 denominator df and is the safer reading when calls of
    a template are correlated.
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
    with warnings.catch_warnings():  # a singular covariance (fewer clusters than terms): NaN
        warnings.simplefilter("ignore")
        try:
            wald = full_fit.result.wald_test(restriction, scalar=True, use_f=True)
            wald_statistic, wald_p = (
                float(np.squeeze(wald.statistic)),
                float(np.squeeze(wald.pvalue)),
            )
        except (np.linalg.LinAlgError, ValueError):
            wald_statistic = wald_p = float("nan")
    return LikelihoodRatioTest(
        statistic=float(statistic),
        df=df,
        p_value=float(sps.chi2.sf(statistic, df)),
        wald_statistic=wald_statistic,
        wald_p_value=wald_p,
        added_terms=tuple(added),
        full=full_fit,
        reduced=reduced_fit,
    )
