"""Parameter recovery for the natural discussion: plant a disclosure probability or an
evidence-first effect in the sim, run the experiment, let the statistics find it.

As in experiments/memory/test_recovery.py: a 95% interval misses its true value one time in twenty, so checks
that could fail by chance run on three independent replications (profile seeds 0-2: new fact
orders, holders and sim draws) and must hold in at least two; a planted effect must exclude 0
in every replication.
"""

from __future__ import annotations

import pandas as pd
import pytest
from helpers.natural_profiles import sim_profile

from deliberation.experiments.memory.runs import crossprofile_tasks
from deliberation.experiments.natural import report
from deliberation.experiments.natural.runs import run_natural_experiment
from deliberation.inference import make_client

# Parameter recovery runs whole experiments on the sim: the `make experiments` lane, not `make unit`.
pytestmark = pytest.mark.experiments

RESAMPLES = 2000
SEEDS = range(3)


def run(tmp_path, profile, templates, variants=("plain",), policies=("empty",)):
    tasks = crossprofile_tasks("main", templates, seed=profile.seed)
    client = make_client(profile, cache_file=tmp_path / f"{profile.name}.sqlite", progress=False)
    return run_natural_experiment(
        "crossprofile", tasks, profile, client, variants=variants, policies=policies,
        progress=False,
    )  # fmt: skip


def contrast(result, a, b):
    table = report.policy_contrasts(result.rows, [(a, b)], n_resamples=RESAMPLES, seed=1)
    assert len(table) == 1
    return table.iloc[0]


def test_with_no_disclosure_the_transcript_does_not_beat_an_empty_memory(tmp_path):
    beaten = []
    for seed in SEEDS:
        profile = sim_profile(tmp_path, "p0", seed, natural_disclosure=0.0)
        result = run(tmp_path, profile, templates=10)
        assert result.disclosure.loc[result.disclosure["private"] == 1, "full"].sum() == 0
        beaten.append(contrast(result, "transcript", "empty")["low"] > 0)
    assert sum(beaten) <= 1, beaten


def test_with_full_disclosure_the_transcript_approaches_every_fact(tmp_path):
    # Holder counts carry no weight here (social_weight 0), so the transcript holds exactly the
    # evidence of every fact; only the choice noise differs.
    frames = []
    for seed in (0, 1):
        profile = sim_profile(tmp_path, "p1", seed, natural_disclosure=1.0, social_weight=0.0)
        result = run(tmp_path, profile, templates=20)
        assert result.disclosure["full"].all()
        frames.append(result.rows.assign(template=lambda f, s=seed: f"{s}:" + f["template"]))
    rows = pd.concat(frames, ignore_index=True).assign(profile="pooled")
    table = report.accuracy_table(rows, n_resamples=RESAMPLES, seed=1).set_index("measure")
    transcript = table.loc["decision: transcript", "estimate"]
    assert abs(transcript - table.loc["decision: every-fact", "estimate"]) <= 0.1
    against_empty = report.policy_contrasts(
        rows, [("transcript", "empty")], n_resamples=RESAMPLES, seed=1
    ).iloc[0]
    assert against_empty["low"] > 0


def evidence_first_effect(tmp_path, seed, boost):
    profile = sim_profile(
        tmp_path, f"boost{boost}", seed, natural_disclosure=0.2, natural_evidence_first_boost=boost
    )
    result = run(tmp_path, profile, templates=10, variants=("plain", "evidence-first"), policies=())
    table = report.paired_effect(
        result.rows, result.disclosure, measures=[report.FULL_PRIVATE], n_resamples=RESAMPLES
    )
    assert len(table) == 1
    return table.iloc[0]


def test_a_planted_evidence_first_effect_is_recovered(tmp_path):
    effects = [evidence_first_effect(tmp_path, seed, 0.3) for seed in SEEDS]
    assert all(e["low"] > 0 for e in effects), effects
    assert sum(e["low"] <= 0.3 <= e["high"] for e in effects) >= 2, effects


def test_no_evidence_first_effect_stays_inside_noise(tmp_path):
    effects = [evidence_first_effect(tmp_path, seed, 0.0) for seed in SEEDS]
    assert sum(e["low"] <= 0 <= e["high"] for e in effects) >= 2, effects
