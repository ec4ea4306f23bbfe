"""deliberation.stats.power: the planted-effect simulation behind `deliberation power`."""

import time

import numpy as np
import pandas as pd
import pytest

from deliberation.stats import benjamini_hochberg, holm, linear_contrast
from deliberation.stats import power as P
from deliberation.stats.cluster_t import cluster_t

SPREAD = P.Spread(0.05, 0.05, "test")


def design(name: str) -> P.Design:
    return next(d for d in P.designs() if d.name == name)


def test_zero_effect_rejects_at_alpha_within_monte_carlo_error():
    started = time.perf_counter()
    found = P.estimate_power(design("H3"), 0.0, 30, SPREAD, replicates=2000, n_resamples=400)
    seconds = time.perf_counter() - started
    print(f"zero effect: power {found.power:.4f} +/- {found.mc_error:.4f} in {seconds:.2f} s")
    assert abs(found.power - 0.05) <= 3 * found.mc_error


def test_zero_effect_of_the_permutation_test_rejects_at_most_alpha():
    found = P.estimate_power(design("repeated-replay permutation"), 0.0, 20, SPREAD, replicates=300)
    assert found.power <= 0.05 + 3 * found.mc_error


def test_power_rises_with_n():
    powers = [
        P.estimate_power(design("H3"), 8.5, n, SPREAD, replicates=400).power for n in (10, 40, 160)
    ]
    assert powers[0] < powers[1] < powers[2]


@pytest.mark.parametrize(("clusters", "rows"), [(3, 1), (5, 2), (30, 1)])
def test_the_vectorised_t_is_the_notebooks_cluster_t(clusters, rows):
    """Per-cluster contrasts tested by the planner's p and by the notebooks' cluster_t on the
    same balanced rows (2 cells, ``rows`` rows each per cluster): the same p, CR1's small-sample
    factor included (at 3 clusters it moves the variance by (6 - 1) / (6 - 2))."""
    rng = np.random.default_rng(clusters)
    for effect in (0.0, 0.2):
        a = rng.binomial(1, np.clip(0.5 + effect / 2 + rng.normal(0, 0.1, (clusters, rows)), 0, 1))
        b = rng.binomial(1, np.clip(0.5 - effect / 2 + rng.normal(0, 0.1, (clusters, rows)), 0, 1))
        frame = pd.DataFrame(
            {
                "template": np.r_[np.repeat(np.arange(clusters), rows)].tolist() * 2,
                "arm": ["a"] * clusters * rows + ["b"] * clusters * rows,
                "correct": np.r_[a.ravel(), b.ravel()],
            }
        )
        reference = cluster_t(frame, linear_contrast({"a": 1.0, "b": -1.0}, by="arm"))
        per_cluster = (a.mean(axis=1) - b.mean(axis=1))[None, :].astype(float)
        ours = P.t_p_values(per_cluster, cells=2, rows=rows)[0]
        if np.isnan(reference.p_value):  # the clusters agree exactly: no test, p = 1 here
            assert ours == 1.0
        else:
            assert ours == pytest.approx(reference.p_value, rel=1e-9)


def test_vectorised_holm_and_bh_equal_the_stats_functions():
    rng = np.random.default_rng(0)
    p = rng.random((20, 4)) ** 3
    np.testing.assert_allclose(P.holm_rows(p), np.array([holm(row) for row in p]))
    np.testing.assert_allclose(P.bh_rows(p), np.array([benjamini_hochberg(row) for row in p]))


def test_smallest_n_finds_the_first_n_reaching_the_target():
    assert P.smallest_n(lambda n: n / 100, 0.8, 10)[0] in range(80, 85)
    assert P.smallest_n(lambda n: 0.1, 0.8, 10, cap=64) == (None, 0.1)


def test_spread_is_estimated_from_rows_with_enough_clusters():
    rng = np.random.default_rng(0)
    level = rng.normal(0, 0.2, 40)
    rows = pd.DataFrame(
        {
            "template": np.repeat(np.arange(40), 50),
            "correct": rng.binomial(1, np.clip(0.5 + np.repeat(level, 50), 0, 1)),
        }
    )
    found = P.estimate_spread(rows, "template")
    assert found is not None and 0.12 < found.level < 0.28
    assert P.estimate_spread(rows[rows["template"] < 3], "template") is None


def test_bank_shortfall_is_reported():
    from deliberation.paper.power import default_effects
    from deliberation.profiles.profile import load_profile

    profile = load_profile("sim")
    effects = default_effects("qwen", {"H3": 2.0})
    rows = P.power_table(profile.experiments, effects, None, replicates=100, search_replicates=100)
    h3 = next(r for r in rows if r.design.name == "H3")
    assert h3.recommended is None or h3.recommended > 60
    if h3.recommended is not None:
        assert h3.bank_short == h3.recommended - 60


def test_an_interaction_carries_a_quarter_of_the_effect_per_cell_so_twice_the_noise():
    """H1 is (a - b | x) - (a - b | y): the same planted effect on average, but the statistic
    doubles the cell-mean difference, so its binomial noise is twice a plain difference's."""
    rng = np.random.default_rng(0)
    flat = P.Spread(0.0, 0.0, "test")
    h1 = P.simulate_cluster_contrasts(design("H1"), 0.2, 20, flat, 500, rng)
    h3 = P.simulate_cluster_contrasts(design("H3"), 0.2, 20, flat, 500, rng)
    assert design("H1").interaction and not design("H3").interaction
    assert h1.mean() == pytest.approx(0.2, abs=0.02)  # SE 0.005
    assert h3.mean() == pytest.approx(0.2, abs=0.01)  # SE 0.0025
    assert h1.std() / h3.std() == pytest.approx(2.0, rel=0.05)


def write_rows(folder, name, clusters, rng):
    folder.mkdir(parents=True, exist_ok=True)
    level = rng.normal(0, 0.2, clusters)
    pd.DataFrame(
        {
            "template": np.repeat(np.arange(clusters), 40),
            "pilot": 0,
            "correct": rng.binomial(1, np.clip(0.5 + np.repeat(level, 40), 0, 1)),
        }
    ).to_csv(folder / name, index=False)


def test_spread_falls_back_to_the_sim_rows_then_to_assumed_and_says_so(tmp_path):
    rng = np.random.default_rng(1)
    h3 = design("H3")
    published, sim = tmp_path / "tables" / "profile", tmp_path / "tables" / "sim"
    write_rows(published, h3.rows_file, 3, rng)  # too few clusters to estimate
    write_rows(sim, h3.rows_file, 30, rng)
    found = P.spread_for(h3, published, sim, worst_case=True)
    assert found.kind == "sim" and "synthetic (sim backend)" in found.source
    # the file as the repository names it, never this machine's path (the docs print it)
    assert found.source.startswith(f"tables/sim/{h3.rows_file} (30 clusters)")
    assert str(tmp_path) not in found.source and 0.1 < found.level < 0.3
    write_rows(published, h3.rows_file, 30, rng)
    assert P.spread_for(h3, published, sim, worst_case=True).kind == "published"
    assumed = P.spread_for(h3, None, None, worst_case=True)
    assert assumed.kind == "assumed" and assumed.level == P.ASSUMED_SD["level"]
    (sim / h3.rows_file).unlink()
    write_rows(published, h3.rows_file, 3, rng)
    few = P.spread_for(h3, published, sim, worst_case=True)
    assert few.kind == "assumed" and "fewer than 5 clusters" in few.source


def test_grid_without_a_limit_is_the_whole_bank_and_unknown_without_one():
    from deliberation.profiles.profile import load_profile

    experiments = load_profile("qwen2.5-7b-vllm").experiments
    assert experiments.hiddenbench.limit is None
    hb = design("HiddenBench R1 - B3")
    assert P.grid_size(hb, experiments, {"templates": 60, "tasks": 65}) == 65
    assert P.grid_size(hb, experiments, {"templates": 60}) is None
    assert P.grid_size(design("H1"), experiments) == experiments.crossprofile.limit or 60
