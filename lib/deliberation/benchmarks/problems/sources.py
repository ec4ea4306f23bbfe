"""Pinned public sources of the benchmarks (DHD's five, and HiddenBench for paper 1): repository,
commit, path, sha256 and size per file.

``deliberation data fetch`` downloads each file from its raw GitHub URL at the pinned commit
into ``data/external/<benchmark>/<local path>`` (the same layout as ``../shared/data``) and
refuses any file whose sha256 differs. Nothing is redistributed with this repository.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PinnedFile:
    """One file: where it goes (relative to the benchmark folder), where it comes from, its hash."""

    local_path: str
    upstream_path: str
    sha256: str
    size: int


@dataclass(frozen=True)
class BenchmarkSource:
    """A benchmark's repository at one commit, its licence, and the files taken from it."""

    name: str
    repository: str
    commit: str
    licence: str
    note: str
    files: tuple[PinnedFile, ...]

    def url(self, pinned: PinnedFile) -> str:
        return f"https://raw.githubusercontent.com/{self.repository}/{self.commit}/{pinned.upstream_path}"


def _pin(local_path: str, upstream_path: str, sha256: str, size: int) -> PinnedFile:
    return PinnedFile(local_path, upstream_path, sha256, size)


SOURCES: tuple[BenchmarkSource, ...] = (
    BenchmarkSource(
        name="jeebench",
        repository="somethingdevs/cs678-jeebench",
        commit="c640d56ad8fd0fad12e19cc0f86867fbb234b754",
        licence="MIT (dair-iitd/jeebench, Copyright (c) 2023 DAIR Group, IIT Delhi)",
        note=(
            "A declared fork of dair-iitd/jeebench whose data/dataset.json is the unzipped content "
            "of the canonical data.zip (which also bundles model responses)."
        ),
        files=(
            _pin(
                "dataset.json",
                "data/dataset.json",
                "c9e46ee7585ff83711e89f18e067ee447c88c08602f837b328c5a169c3011de0",
                374_599,
            ),
        ),
    ),
    BenchmarkSource(
        name="scibench",
        repository="mandyyyyii/scibench",
        commit="e14e0ca3d3db0f02928a18d435b9c3d15656a7c5",
        licence="MIT (Copyright (c) 2023 Xiaoxuan Wang)",
        note="Textbook split, the ten test files (580 problems).",
        files=(
            _pin(
                "atkins.json",
                "dataset/original/atkins.json",
                "d2dd481ade7a3a2c6a108e2539bddaf2df83ecb5ef4021f04f520d55ec51f5ac",
                60_902,
            ),
            _pin(
                "calculus.json",
                "dataset/original/calculus.json",
                "69779c85d33afe2bf17d6f2a0cb7ccbb172e609cc21c3e86b17e1c21eb9fb2c6",
                19_450,
            ),
            _pin(
                "chemmc.json",
                "dataset/original/chemmc.json",
                "134baf281dc7636fd01729b7f3b52465a44ea55fec5cb00e76a5fe809da520a0",
                15_124,
            ),
            _pin(
                "class.json",
                "dataset/original/class.json",
                "113f73bf829e73ed4ab7ccb97a3a8cc50531075ebdb13e5421d62230a96e239a",
                33_182,
            ),
            _pin(
                "diff.json",
                "dataset/original/diff.json",
                "009547bcb646c7c88532908b9c3a689f02af66233869ea6e35c2d7c676478565",
                22_193,
            ),
            _pin(
                "fund.json",
                "dataset/original/fund.json",
                "d6b90173970bfa5ed04355c77731c5a28921a0224a0fb7240817f6cb18ea3790",
                39_573,
            ),
            _pin(
                "matter.json",
                "dataset/original/matter.json",
                "641291cb3d62b18bd73daa1f62988733d039f4df940f77f46052e92ac284ea94",
                23_846,
            ),
            _pin(
                "quan.json",
                "dataset/original/quan.json",
                "a3c4f483b5dd7ce162d3d95610bb56614b5003ecba80f450c79755811176e4f1",
                13_582,
            ),
            _pin(
                "stat.json",
                "dataset/original/stat.json",
                "a0f84cf8fbb94512174e4ecddb5a7bfa2b6ce7ddde0094c70d886a51a003dcfb",
                32_125,
            ),
            _pin(
                "thermo.json",
                "dataset/original/thermo.json",
                "723e550d350dbb13644bf72eda5f19a5d8978aa5abd1c779399051618604494b",
                32_399,
            ),
        ),
    ),
    BenchmarkSource(
        name="mascqa",
        repository="M3RG-IITD/MaScQA",
        commit="f524889b9cbcec15f4d6216a3c66f9e6c57f0712",
        licence="CC BY-NC-SA 4.0 (non-commercial use only, share-alike)",
        note="Questions in mascqa-eval.json; answers from the scoresheet all_questions.xlsx.",
        files=(
            _pin(
                "mascqa-eval.json",
                "mascqa-eval.json",
                "545669a0474df358e096aaac5e780602c06ddf132a7d84225c4b2c336b1e78a2",
                216_272,
            ),
            _pin(
                "all_questions.xlsx",
                "scoresheets/all_questions.xlsx",
                "00c3e95d63c5765aef49f07e13bb00313c8a51856f81ff0a6986e542440003c3",
                41_442,
            ),
        ),
    ),
    BenchmarkSource(
        name="labbench",
        repository="ScienceOne-AI/ScienceEval",
        commit="1683e4987bab03b706307b5cb9b4a46e8fed5e89",
        licence="CC BY-SA 4.0 (LAB-Bench, Future-House); records carry a canary: never train on them",
        note=(
            "Vendored copy of Future-House/LAB-Bench data folders (benchmarks/LAB-Bench/); "
            "SeqQA, ProtocolQA and CloningScenarios public splits."
        ),
        files=(
            _pin(
                "CloningScenarios/cloningscenarios-v1-public.jsonl",
                "benchmarks/LAB-Bench/CloningScenarios/cloningscenarios-v1-public.jsonl",
                "c033d43480866cbc5568aec2f6a2c5a72fddbeb2ff87e43774e0588b58c4d1cf",
                396_292,
            ),
            _pin(
                "ProtocolQA/protocolqa-v1-public.jsonl",
                "benchmarks/LAB-Bench/ProtocolQA/protocolqa-v1-public.jsonl",
                "08e85d9c0afb85a3919b78a44095eabdc031ad77652da2ccc59407a162bd63a4",
                735_214,
            ),
            _pin(
                "SeqQA/ORF-seq-AAid-v1-public.jsonl",
                "benchmarks/LAB-Bench/SeqQA/ORF-seq-AAid-v1-public.jsonl",
                "1e7a372d1dcbe31c34f031e2decadf678adbf17aac388cc1e7099dd23fcca985",
                82_133,
            ),
            _pin(
                "SeqQA/ORF-seq-AAseq-v1-public.jsonl",
                "benchmarks/LAB-Bench/SeqQA/ORF-seq-AAseq-v1-public.jsonl",
                "1b24f9dad3c03ad4c6b6cb13b98d843a1c97a9da30b9bbe669103abf01715310",
                100_172,
            ),
            _pin(
                "SeqQA/ORF-seq-numlen-v1-public.jsonl",
                "benchmarks/LAB-Bench/SeqQA/ORF-seq-numlen-v1-public.jsonl",
                "d1a30f7f711f6e4d0c70ededfd2872d7a19d58f370bcea67fd9c4b1cff255872",
                79_396,
            ),
            _pin(
                "SeqQA/ORF-transeff-v1-public.jsonl",
                "benchmarks/LAB-Bench/SeqQA/ORF-transeff-v1-public.jsonl",
                "21e1e7a97d2fde4848bbc5c5db7a40e96fd5e7682d0db05fe1a860c1b66b02ca",
                187_828,
            ),
            _pin(
                "SeqQA/PCR-gene-enzprimers-v1-public.jsonl",
                "benchmarks/LAB-Bench/SeqQA/PCR-gene-enzprimers-v1-public.jsonl",
                "24d55adc31361efc03cbe37aac6b1074333f47500a27cef28ccbfca46d40d49e",
                28_828,
            ),
            _pin(
                "SeqQA/PCR-gene-gibshindprimers-v1-public.jsonl",
                "benchmarks/LAB-Bench/SeqQA/PCR-gene-gibshindprimers-v1-public.jsonl",
                "a3c7b0a84c19a9c9c79d5802d4c1e0b5b35719fa22c5555ea081eab24e85daca",
                37_024,
            ),
            _pin(
                "SeqQA/PCR-gene-gibssmaprimers-v1-public.jsonl",
                "benchmarks/LAB-Bench/SeqQA/PCR-gene-gibssmaprimers-v1-public.jsonl",
                "3430b857ec30fbe5455a188e24d37a6bcf3a2d844457e3d32692ac5d587df367",
                36_954,
            ),
            _pin(
                "SeqQA/PCR-geneprimers-enz-v1-public.jsonl",
                "benchmarks/LAB-Bench/SeqQA/PCR-geneprimers-enz-v1-public.jsonl",
                "07d8914cd9e7418cd0eb4da1f3275e8e5acb0a132088d77370f2599f4a0b22d8",
                22_397,
            ),
            _pin(
                "SeqQA/PCR-len-primers-v1-public.jsonl",
                "benchmarks/LAB-Bench/SeqQA/PCR-len-primers-v1-public.jsonl",
                "ebed4d7c3d114afc684f1a82deb648b1acc1f54aba74aa863295c93cbb681577",
                62_558,
            ),
            _pin(
                "SeqQA/PCR-primers-len-v1-public.jsonl",
                "benchmarks/LAB-Bench/SeqQA/PCR-primers-len-v1-public.jsonl",
                "5bb867229b4b7c95ccef673a8075ca9c530d7a411fc1dcb61735a3414e193701",
                57_434,
            ),
            _pin(
                "SeqQA/PCR-seq-enzprimers-v1-public.jsonl",
                "benchmarks/LAB-Bench/SeqQA/PCR-seq-enzprimers-v1-public.jsonl",
                "b94226553586c53a8cce4144bd0df800fbc7865f7fd228150dde286463850387",
                62_742,
            ),
            _pin(
                "SeqQA/PCR-seq-primers-v1-public.jsonl",
                "benchmarks/LAB-Bench/SeqQA/PCR-seq-primers-v1-public.jsonl",
                "f0d0c19431225d27b3ea3a956274b84e12cc516227fb4ac5dd3e9cd0a3104b41",
                83_634,
            ),
            _pin(
                "SeqQA/Prop-seq-gcpercent-v1-public.jsonl",
                "benchmarks/LAB-Bench/SeqQA/Prop-seq-gcpercent-v1-public.jsonl",
                "5953270ab0363ee13361e40227a21e136583fa658c94f79a58d4bbd324aa31d5",
                46_326,
            ),
            _pin(
                "SeqQA/RE-seq-lenfrags-v1-public.jsonl",
                "benchmarks/LAB-Bench/SeqQA/RE-seq-lenfrags-v1-public.jsonl",
                "595911e3379560b19c555800a27f8c4eac5aee021110899524ae10e6efd8391a",
                58_898,
            ),
            _pin(
                "SeqQA/RE-seq-numfrags-v1-public.jsonl",
                "benchmarks/LAB-Bench/SeqQA/RE-seq-numfrags-v1-public.jsonl",
                "3e66bea302788b6172327dfbc69be3ec0509bad2ddf9f5b088de800dc56e0bfc",
                54_929,
            ),
        ),
    ),
    BenchmarkSource(
        name="hiddenbench",
        repository="Yassellee/HiddenBench",
        commit="8c5b54c2601a5c1e26dec5644dde0d7141b14968",
        licence="no licence file in the repository (data licence not stated; not redistributed)",
        note="65 hidden-profile tasks (paper 1); loaded by deliberation.benchmarks.hiddenbench.tasks.",
        files=(
            _pin(
                "benchmark_all_clean.json",
                "benchmark_all_clean.json",
                "2815afffca4e470d1dfbc81e625160447df1109ce371968181c9e1e6b90443a3",
                220_086,
            ),
        ),
    ),
    BenchmarkSource(
        name="dhd_reference",
        repository="ChihHsuan-Yang/AAAI_Wrong-but-Useful",
        commit="a0c477250ecb27a284dcb5a75b6c98c3421ab80e",
        licence="MIT (Copyright (c) 2026 Chih-Hsuan Yang et al.)",
        note=(
            "The DHD authors' released tables (paper 2): flip counts, LOO by K, masking pilot, "
            "cross-fitted selection rows; re-analysed by deliberation.experiments.dhd.reference."
        ),
        files=(
            _pin(
                "data/derived/component_masking_pilot_summary.json",
                "data/derived/component_masking_pilot_summary.json",
                "e80abc8201eb42668875e4762076523348bc9a77e9f39c84ce736f796250e223",
                1_698,
            ),
            _pin(
                "data/derived/correctness_oracle_regret_decomposition.csv",
                "data/derived/correctness_oracle_regret_decomposition.csv",
                "36594931113fee9e02a229a1f3436d73e6bd8e7b03e97c375f851359016dd603",
                790,
            ),
            _pin(
                "data/derived/gemma_repeated_benchmark_summary.json",
                "data/derived/gemma_repeated_benchmark_summary.json",
                "ef75719f013f9cdde309392c75db7581cbc39f8c9cb49b165e5791f11714218c",
                2_795,
            ),
            _pin(
                "data/derived/integrator_uptake_audit.csv",
                "data/derived/integrator_uptake_audit.csv",
                "a69ceac9c88307725d74645def4a7d54961d1a595b9f01339b673ce5b2763ca8",
                3_126,
            ),
            _pin(
                "data/derived/majority_diagnostic.csv",
                "data/derived/majority_diagnostic.csv",
                "aeb01b40ebe6d7d690f0221d62b8b3b739bc33b8387366cdb0a29eaf3e97b47f",
                1_252,
            ),
            _pin(
                "data/derived/majority_diagnostic.json",
                "data/derived/majority_diagnostic.json",
                "297363f51f9568f86a26bd1bef3079fdfbf2f113ecc4af0504ebc4b93e983b91",
                4_775,
            ),
            _pin(
                "data/derived/offline_policy_bootstrap.csv",
                "data/derived/offline_policy_bootstrap.csv",
                "4bac546c4e2e2c69b08f9e8ad242be5f9db2ba7df08fad9c6ab1def741a35a6e",
                1_846,
            ),
            _pin(
                "data/derived/offline_policy_by_benchmark.csv",
                "data/derived/offline_policy_by_benchmark.csv",
                "fb17be26b9fe16679a2f62c46d70ea63048ceea31b4ce3ea990b8bd87ac5dc1e",
                1_332,
            ),
            _pin(
                "data/derived/offline_review_closure.json",
                "data/derived/offline_review_closure.json",
                "b5e5efd50baa7d5c1d1ae419f778e3aec4237f228519fb88036926d3107bb9b9",
                8_984,
            ),
            _pin(
                "data/derived/oss_proposal_answer_audit.json",
                "data/derived/oss_proposal_answer_audit.json",
                "cb64334da71141e57310daa937cb523848b580696766ea7944c03bfec78fc070",
                8_741,
            ),
            _pin(
                "data/derived/problem_blocked_replay_multiplicity.json",
                "data/derived/problem_blocked_replay_multiplicity.json",
                "35100a064fa03014bdf7e1a8dc14da771590dfd890ce1560d47cc5d757498873",
                43_902,
            ),
            _pin(
                "data/derived/proposal_answer_coverage.csv",
                "data/derived/proposal_answer_coverage.csv",
                "06fbdcab86a0a34ba2769918be6fb65590a77f3c6f1384c8c6c572bd6a80d145",
                531,
            ),
            _pin(
                "data/derived/repeated_effect_by_correctness.json",
                "data/derived/repeated_effect_by_correctness.json",
                "22491f9886c7da1c4382fd6bfec7d72e3a054942e76299fdd0a3f00e01ff3b11",
                5_053,
            ),
            _pin(
                "data/derived/signal_labels/matched_sensitivity_integrator_gemma_to_oss.csv",
                "data/derived/signal_labels/matched_sensitivity_integrator_gemma_to_oss.csv",
                "62ab35de6ef1a0dd2925ec62ef1b049d3aacb1352a70b9a0747bc86d33a07944",
                43_195,
            ),
            _pin(
                "data/derived/signal_labels/matched_sensitivity_order_gemma.csv",
                "data/derived/signal_labels/matched_sensitivity_order_gemma.csv",
                "bb71c31f1711d9b323b120a48d7d89cd41dbb5e2a090a6d9ab24611e8198d496",
                41_901,
            ),
            _pin(
                "data/derived/signal_labels/matched_sensitivity_order_oss.csv",
                "data/derived/signal_labels/matched_sensitivity_order_oss.csv",
                "a11edc7db5b47eb54d0bae6bee31af489b21b85b88326afadd2d2661faefd235",
                43_378,
            ),
            _pin(
                "data/fixtures/smoke_pool.jsonl",
                "data/fixtures/smoke_pool.jsonl",
                "9ac9deb9471082d7d6d5862b0f472ec07a48e607dae2e6cfecec484f6a90f421",
                3_780,
            ),
            _pin(
                "data/manifests/expected_signal_tables.json",
                "data/manifests/expected_signal_tables.json",
                "e1e10aa08649cce160c5578bfefefe8ad4f57af6367550dd1a4eebfbf5c88cde",
                1_199,
            ),
            _pin(
                "data/manifests/expected_summaries.json",
                "data/manifests/expected_summaries.json",
                "4cc59e8f530ec314023b40b5cf1f56434c0ca2fc31ef033db26f9a1f6a647f3e",
                1_086,
            ),
            _pin(
                "figures/benchmark_properties_source.csv",
                "figures/benchmark_properties_source.csv",
                "f0797872ba2974cbaec9dc08e4c6647c68f484f171a9c4aefdacd1b7ffcebf88",
                604,
            ),
            _pin(
                "figures/evaluator_agreement_source.csv",
                "figures/evaluator_agreement_source.csv",
                "7b6f70abaf571ea4ac7ab9db2431bd8fe1879c720ecd925e2af550aa6713157f",
                211,
            ),
            _pin(
                "figures/fig_correctness_flip_direction_source.csv",
                "figures/fig_correctness_flip_direction_source.csv",
                "7ff16bb9065b779b86573cbca20179ad7a39464c730eb15dc460220c5658d030",
                1_058,
            ),
            _pin(
                "figures/fig_cross_benchmark_trajectory_value_source.csv",
                "figures/fig_cross_benchmark_trajectory_value_source.csv",
                "0b677abb62c4b2f5c08d144258226a31f7b792e0c4e8f07e6898c6c695f17b3f",
                2_546,
            ),
            _pin(
                "figures/fig_generation_integration_gap_gemma_source.csv",
                "figures/fig_generation_integration_gap_gemma_source.csv",
                "17e881331cd065ad10db9cc7af9e272a2484f83048bced5c8c423e5262c066c0",
                372,
            ),
            _pin(
                "figures/fig_generation_integration_gap_source.csv",
                "figures/fig_generation_integration_gap_source.csv",
                "b834eb4a54a806fdee039b89a82dc19b3ac18cc4097f6adcc5009eeea01d5d6a",
                405,
            ),
            _pin(
                "figures/fig_loo_by_k_appendix_source.csv",
                "figures/fig_loo_by_k_appendix_source.csv",
                "3784c0911b2983ceb2c7def71a4d64688728a9f1f92ce7ef8ffe4ec045dad987",
                4_092,
            ),
            _pin(
                "data/derived/signal_labels/value_aware_one_removal_per_fold.csv",
                "data/derived/signal_labels/value_aware_one_removal_per_fold.csv",
                "803cd1fb46224c8bc208ededd78696234c4048acffabcbab4dacc7d0ce73f71f",
                1_107_185,
            ),
        ),
    ),
    BenchmarkSource(
        name="omnimath",
        repository="KbsdJames/omni-math-rule",
        commit="4793415ef37d31c9cdb4e5b82dbe172f76f8cf08",
        licence="no licence file for the dataset (the repository's evaluation code is MIT)",
        note=(
            "The authors' rule-checkable subset (2,821 of 4,428 problems). The full Omni-MATH file "
            "and Omni-MATH-2 have no pinned public copy; place them by hand to use them."
        ),
        files=(
            _pin(
                "omni_math_rule.jsonl",
                "omni_math_rule.jsonl",
                "d566d5b5a9865a04b507fdc4c0669cf0ff391748e13f190ecc925e78b584b172",
                3_998_868,
            ),
        ),
    ),
)


def source(name: str) -> BenchmarkSource:
    for entry in SOURCES:
        if entry.name == name:
            return entry
    raise KeyError(f"no pinned source for {name!r}; known: {[s.name for s in SOURCES]}")
