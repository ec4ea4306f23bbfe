"""Accuracy against the balance of evidence the memory kept (notebook 05).

The *net evidence lead* of a memory is score(correct) - the best competitor's score over its
kept facts (``net_lead`` in the results frame). The copy policies (R1, B4, Random, R1-rel)
keep facts verbatim, so their rows can be pooled and read against the lead; B3 writes free
text and has no lead.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from deliberation.benchmarks.crossprofile import CLASSIC
from deliberation.experiments.memory.analyses.accuracy import accuracy_table, answered
from deliberation.memory_policies import PRIMARY_FRACTION
from deliberation.stats import (
    EVIDENCE_FORMULA,
    POLICY_FORMULA,
    likelihood_ratio_test,
    mean_of,
)
from deliberation.stats.cluster_t import cluster_t_many
from deliberation.stats.logistic import EQUIVALENCE_ODDS_RATIO
from deliberation.stats.small_samples import (
    MIN_CLUSTERS,
    call_set,
    distinct_calls,
    reading,
    with_same_calls,
    withhold_inference,
)

COPY_POLICIES = ("R1", "B4", "Random", "R1-rel")


def copy_policy_rows(
    rows: pd.DataFrame, budgets: Sequence[float], policies: Sequence[str] = COPY_POLICIES
) -> pd.DataFrame:
    """Main-template rows of the copy policies at ``budgets`` with tags kept, with ``lead_bin``
    (see :func:`lead_bins`)."""
    keep = (rows["pilot"] == 0) & (rows["tags"] == "keep") & rows["policy"].isin(policies)
    keep &= rows["budget"].isin(list(budgets))
    out = rows[keep].copy()
    out["net_lead"] = out["net_lead"].astype(int)
    out["irrelevant_tone"] = out["irrelevant_tone"].astype(int)
    out["tone_lead"] = out["tone_lead"].astype(int)
    out["lead_bin"] = lead_bins(out["net_lead"])
    return out


_PAPER_LEAD_BINS = (-2, 4)  # paper 1 pools "-2 or less" and "+4 or more"


def lead_bins(
    leads: pd.Series, low: int = _PAPER_LEAD_BINS[0], high: int = _PAPER_LEAD_BINS[1]
) -> pd.Series:
    """Leads clipped to [low, high] (the paper's end bins). Only leads that occur get a bin, so
    a bank whose memories never reach ``high`` has no empty "or more" bin: its top bin is
    the largest lead seen, labelled as such (:func:`accuracy_by_lead`)."""
    return leads.astype(int).clip(lower=low, upper=high)


def lead_label(value: int, *, below: bool = False, above: bool = False) -> str:
    """``+3``; ``-2 or less`` when the bin pooled smaller leads, ``+4 or more`` larger ones."""
    text = f"{value:+d}"
    return f"{text} or less" if below else f"{text} or more" if above else text


def lead_range(rows: pd.DataFrame) -> tuple[int, int]:
    """The smallest and largest net lead in ``rows`` (what the bins must cover)."""
    leads = rows["net_lead"].astype(int)
    return int(leads.min()), int(leads.max())


def accuracy_by_lead(rows: pd.DataFrame, *, n_resamples: int, seed: int) -> pd.DataFrame:
    """Accuracy (%) per lead bin, pooled over the policies in ``rows`` (cluster-robust t over templates);
    a bin's label says "or less" / "or more" only if it pooled leads beyond its value."""
    table = accuracy_table(rows, ["lead_bin"], n_resamples=n_resamples, seed=seed)
    table = table.sort_values("lead_bin").reset_index(drop=True)
    leads = rows["net_lead"].astype(int)
    labels = []
    for value in table["lead_bin"].astype(int):
        mine = leads[rows["lead_bin"].astype(int) == value]
        labels.append(
            lead_label(value, below=bool((mine < value).any()), above=bool((mine > value).any()))
        )
    table.insert(1, "lead", labels)
    return table


def evidence_model(
    rows: pd.DataFrame,
    *,
    min_clusters: int = MIN_CLUSTERS,
    equivalence_odds_ratio: float = EQUIVALENCE_ODDS_RATIO,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Logistic model of correctness on net lead and tone lead (tone on the correct option minus
    the best-sounding competitor's); do policy terms add anything? Returns (coefficients of both
    models, and the likelihood-ratio and cluster-robust Wald tests of the policy terms with what
    they show: ``reading``). Each distinct call weighs 1 (copies share it); failed rows are
    left out; below ``min_clusters`` templates only the coefficients remain."""
    used = answered(rows)
    test = likelihood_ratio_test(used, POLICY_FORMULA, EVIDENCE_FORMULA)
    coefficients = pd.concat(
        [
            test.reduced.coefficients(equivalence_odds_ratio=equivalence_odds_ratio).assign(
                model="lead + tone"
            ),
            test.full.coefficients(equivalence_odds_ratio=equivalence_odds_ratio).assign(
                model="lead + tone + policy"
            ),
        ],
        ignore_index=True,
    )
    coefficients = coefficients[["model", *[c for c in coefficients if c != "model"]]]
    coefficients["n_clusters"] = test.full.n_clusters
    coefficients["n_rows"] = test.full.n_obs  # both models are fitted on the same rows
    coefficients["n_calls"] = distinct_calls(used)
    policy = coefficients[coefficients["term"].isin(test.added_terms)]
    tests = pd.DataFrame(
        [
            {
                "added terms": ", ".join(test.added_terms),
                "LR statistic": test.statistic,
                "df": test.df,
                "p_LR": test.p_value,
                "Wald F statistic (cluster-robust)": test.wald_statistic,
                "p_Wald": test.wald_p_value,
                "p_equivalence (largest)": float(policy["p_equivalence"].max()),
                "reading": policy_terms_reading(
                    test.wald_p_value,
                    float(policy["p_equivalence"].max()),
                    equivalence_odds_ratio,
                ),
                "n_rows": test.full.n_obs,
                "n_calls": distinct_calls(used),
                "n_clusters": test.full.n_clusters,
            }
        ]
    )
    tests = withhold_inference(tests, min_clusters)
    if tests.loc[0, "interval"]:
        tests.loc[0, "reading"] = "no test: " + tests.loc[0, "interval"]
    return withhold_inference(coefficients, min_clusters), tests


def term_reading(
    coefficients: pd.DataFrame, term: str, *, model: str = "lead + tone", label: str = ""
) -> str:
    """One coefficient of :func:`evidence_model` in words (``tone_lead`` -> "tone lead: +0.885
    (cluster-robust SE ..., p = ...; 60 clusters, ...)", or below the floor the estimate, n and
    why): what the notebook prints (:func:`~deliberation.stats.small_samples.reading`)."""
    row = coefficients.set_index(["model", "term"]).loc[(model, term)]
    return reading(row, label or term.replace("_", " "), "coef")


def policy_terms_reading(
    p_wald: float, p_equivalence: float, odds_ratio: float, alpha: float = 0.05
) -> str:
    """What the policy-terms tests show, in words: a difference, equivalence within the odds-ratio
    bound (every term's TOST), or neither (absence of evidence, not evidence of absence)."""
    if p_wald == p_wald and p_wald < alpha:
        return "policy terms add to the evidence (Wald p < .05)"
    bound = f"odds ratios within [{1 / odds_ratio:.2f}, {odds_ratio:g}]"
    if p_equivalence == p_equivalence and p_equivalence < alpha:
        return f"policy terms near zero: every one shown within {bound} (TOST p < .05)"
    return (
        "neither shown: no evidence that policy terms add anything, and none that they are"
        f" near zero ({bound} not shown); absence of evidence, not evidence of absence"
    )


def decoy_choices(
    rows: pd.DataFrame,
    *,
    n_resamples: int,
    seed: int,
    variant: str = CLASSIC.id,
    budget: float = PRIMARY_FRACTION,
) -> pd.DataFrame:
    """How often the answer is the decoy option (the wrong option two decoys favour), per
    policy in ``variant`` at ``budget`` (main templates, tags kept): among all decisions and
    among wrong ones (%), with cluster-robust t intervals (``n_resamples`` and ``seed`` are
    unused since the cluster t replaced the bootstrap, kept for the notebook's call) and the
    policy whose decisions were the very same calls (``same_calls_as``). Only templates that
    have a decoy option count (in bank v5 the key in slot P or N: ``chose_decoy`` is empty
    where the decoys favour both wrong options)."""
    del n_resamples, seed
    rows = answered(rows)
    keep = (rows["pilot"] == 0) & (rows["tags"] == "keep") & rows["chose_decoy"].notna()
    cell = rows[keep & (rows["variant"] == variant) & (rows["budget"] == budget)]
    out, read = [], []
    for policy in dict.fromkeys(cell["policy"]):
        mine = cell[cell["policy"] == policy]
        read.append(call_set(mine))
        statistics = {"decoy": mean_of("chose_decoy", {"policy": policy})}
        wrong = int((mine["correct"] == 0).sum())
        if wrong:
            statistics["decoy | wrong"] = mean_of("chose_decoy", {"policy": policy, "correct": 0})
        r = cluster_t_many(mine, statistics, "template")
        out.append(
            {
                "policy": policy,
                "decisions": len(mine),
                "wrong": wrong,
                "decoy %": 100 * r["decoy"].estimate,
                "low": 100 * r["decoy"].low,
                "high": 100 * r["decoy"].high,
                "interval": r["decoy"].note,
                "decoy among wrong %": 100 * r["decoy | wrong"].estimate if wrong else float("nan"),
                "n_clusters": r["decoy"].n_clusters,
                **({} if r["decoy"].n_calls is None else {"n_calls": r["decoy"].n_calls}),
            }
        )
    return with_same_calls(pd.DataFrame(out), read, ("policy",))
