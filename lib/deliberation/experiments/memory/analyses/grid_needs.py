"""What notebooks 02-05 need of a memory benchmark's grid (``experiments.crossprofile``,
``experiments.hiddenbench``), from the constants the analyses use: the policies each comparison
reads, the fixed item count, the primary budget (:mod:`deliberation.experiments.grid_needs`)."""

from __future__ import annotations

from deliberation.benchmarks import memory_benchmark
from deliberation.experiments.grid_needs import GridNeed
from deliberation.experiments.memory.analyses.crossprofile import CLASSIC_COMPARISONS, H1_POLICIES
from deliberation.experiments.memory.analyses.evidence import COPY_POLICIES
from deliberation.memory_policies import FIXED_ITEM_COUNT, PRIMARY_FRACTION

# Notebook 04 reads social proof on the all-facts memory and compares tags removed with kept;
# the notebook's other policies and tags (shuffle) run where the profile's grid lists them.
SOCIAL_PROOF_POLICY = "all"
ABLATION_TAGS = ("keep", "remove")
# Notebook 02's one contrast (its cell calls difference_by_budget(rows, "R1", "B3", ...)).
HIDDENBENCH_CONTRAST = ("R1", "B3")
# Notebook 05's logistic model has template-clustered standard errors: one template gives none
# (the model stops with a division by zero), two give a number.
MODEL_TEMPLATES = 2

_NEEDS = {
    "crossprofile": (
        GridNeed(
            "03_crossprofile_h1_h3.ipynb",
            "policies",
            "H1-H3 compare R1 with B4, Random and R1-rel",
            includes=H1_POLICIES,
        ),
        GridNeed(
            "03_crossprofile_h1_h3.ipynb",
            "policies",
            "the classic-cell contrasts compare the relevance filters with R1",
            includes=tuple(dict.fromkeys(p for pair in CLASSIC_COMPARISONS for p in pair)),
        ),
        GridNeed(
            "03_crossprofile_h1_h3.ipynb",
            "item_limit",
            f"H1 at a fixed item count reads the memories of exactly {FIXED_ITEM_COUNT} items",
            equals=FIXED_ITEM_COUNT,
        ),
        GridNeed(
            "04_tag_ablation.ipynb",
            "policies",
            "social proof is read on the all-facts memory",
            includes=(SOCIAL_PROOF_POLICY,),
        ),
        GridNeed(
            "04_tag_ablation.ipynb",
            "tags",
            "the tag ablation compares tags removed with tags kept",
            includes=ABLATION_TAGS,
        ),
        GridNeed(
            "05_evidence_balance.ipynb",
            "policies",
            "the evidence analyses pool the copy policies",
            includes=COPY_POLICIES,
        ),
        GridNeed(
            "05_evidence_balance.ipynb",
            "limit",
            "the logistic model's template-clustered standard errors need two templates",
            at_least=MODEL_TEMPLATES,
        ),
    ),
    "hiddenbench": (
        GridNeed(
            "02_hiddenbench.ipynb",
            "policies",
            "its table of R1 minus B3",
            includes=HIDDENBENCH_CONTRAST,
        ),
    ),
}


def grid_needs(benchmark: str) -> tuple[GridNeed, ...]:
    """The needs of ``benchmark``'s notebooks: the primary budget in every one (the notebooks'
    ``resolve`` refuses a grid without it), and each analysis' own."""
    primary = tuple(
        GridNeed(
            notebook,
            "budgets",
            f"the pre-specified tests are defined at the primary budget r = {PRIMARY_FRACTION:g}",
            includes=(PRIMARY_FRACTION,),
        )
        for notebook in memory_benchmark(benchmark).notebooks
    )
    return primary + _NEEDS.get(benchmark, ())
