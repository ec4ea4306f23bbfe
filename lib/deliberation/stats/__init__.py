"""Statistics every notebook uses: cluster bootstrap, contrasts, Holm/BH, logistic models,
permutation tests and cross-fitting. Depends only on numpy, scipy, pandas and statsmodels.

Results frames (paper 1) have one row per decision call. The default column names are:

==================  ============================================================================
``template``        cluster id; the bootstrap resamples templates, never rows
``policy``          memory policy label: "R1", "B4", "Random", "R1-rel", "B3", "oracle", ...
``budget``          budget fraction r (0.4, 0.6, 0.8)
``support``         ownership of the support facts: "shared" or "private"
``decoy``           ownership of the decoy facts: "shared" or "private"
``irrelevant``      ownership of the irrelevant facts: "shared" or "private"
``variant``         the same three as one label, e.g. "SP-DS-IP" (support private, decoys
                    shared, irrelevant private: the classic cell)
``correct``         1 if the decision was right, else 0 (an invalid answer counts as 0)
``net_lead``        score(correct option) - max score(competitors) of the kept memory
``irrelevant_tone`` summed tone of the kept irrelevant facts (whatever option they concern)
``tone_lead``       tone on the correct option minus the largest tone on a competitor
``valid``           whether the answer parsed
==================  ============================================================================

Replay frames (paper 2) have one row per integrator replay: ``problem`` (the block), an arm or
treatment column naming the condition, and ``correct``. Every function takes the column names
as arguments, so other layouts only need different arguments.
"""

from deliberation.stats.bootstrap import (
    BootstrapResult,
    CellStatistic,
    ClusterTable,
    bootstrap_p_value,
    cluster_bootstrap,
    cluster_bootstrap_many,
    linear_contrast,
    mean_of,
    percentile_interval,
    resample_counts,
    results_frame,
    tabulate_clusters,
)
from deliberation.stats.contrasts import (
    cell_means,
    difference_statistic,
    interaction_contrast,
    interaction_statistic,
    paired_difference,
    paired_differences,
    policy_difference,
)
from deliberation.stats.crossfit import CrossFitResult, cross_fit, fold_assignment
from deliberation.stats.logistic import (
    EVIDENCE_FORMULA,
    POLICY_FORMULA,
    LikelihoodRatioTest,
    LogisticFit,
    likelihood_ratio_test,
    logistic_accuracy,
    predicted_accuracy,
)
from deliberation.stats.multiple import benjamini_hochberg, holm
from deliberation.stats.permutation import (
    MaxStatisticResult,
    PermutationResult,
    ProblemPermutationTests,
    max_statistic_by_problem,
    max_statistic_test,
    permutation_p_value,
    permutation_test,
)
from deliberation.stats.preregistered import PreregisteredTests, preregistered_tests

__all__ = [
    "EVIDENCE_FORMULA",
    "POLICY_FORMULA",
    "BootstrapResult",
    "CellStatistic",
    "ClusterTable",
    "CrossFitResult",
    "LikelihoodRatioTest",
    "LogisticFit",
    "MaxStatisticResult",
    "PermutationResult",
    "PreregisteredTests",
    "ProblemPermutationTests",
    "benjamini_hochberg",
    "bootstrap_p_value",
    "cell_means",
    "cluster_bootstrap",
    "cluster_bootstrap_many",
    "cross_fit",
    "difference_statistic",
    "fold_assignment",
    "holm",
    "interaction_contrast",
    "interaction_statistic",
    "likelihood_ratio_test",
    "linear_contrast",
    "logistic_accuracy",
    "max_statistic_by_problem",
    "max_statistic_test",
    "mean_of",
    "paired_difference",
    "paired_differences",
    "percentile_interval",
    "permutation_p_value",
    "permutation_test",
    "policy_difference",
    "predicted_accuracy",
    "preregistered_tests",
    "resample_counts",
    "results_frame",
    "tabulate_clusters",
]
