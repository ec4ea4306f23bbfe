"""A profile that lists CrossProfile templates (``experiments.crossprofile.templates: [ids]``),
and a grid that bounds what every notebook runs: a slow model's small grid spread over domains."""

from __future__ import annotations

import pandas as pd
import pytest
from pydantic import ValidationError

from deliberation.benchmarks import memory_benchmark
from deliberation.benchmarks.crossprofile.memory import crossprofile_tasks, verified_bank
from deliberation.experiments.grid_needs import unmet_needs
from deliberation.experiments.memory.analyses.crossprofile import (
    policy_accuracy,
    relevance_labels,
)
from deliberation.experiments.memory.analyses.notebook_runs import (
    notebook_rows,
    within_profile_grid,
)
from deliberation.experiments.memory.analyses.settings import resolve
from deliberation.experiments.memory.options import MemoryGridOptions
from deliberation.inference import make_client
from deliberation.io import paths
from deliberation.profiles.profile import load_profile
from deliberation.stats import power


def _first_of_each_domain(count: int, *, pilot: bool = False) -> list[str]:
    """Template ids from ``count`` different domains, taken from the bank (not typed in)."""
    chosen: dict[str, str] = {}
    for template in verified_bank():
        if template.pilot == pilot and template.domain not in chosen:
            chosen[template.domain] = template.id
    return list(chosen.values())[:count]


def _profile(tmp_path, section: str):
    (tmp_path / "sim.yaml").write_text((paths.params_dir() / "sim.yaml").read_text())
    path = tmp_path / "listed.yaml"
    path.write_text(f"extends: sim\nexperiments:\n  crossprofile:\n{section}")
    return load_profile(path)


def test_listed_templates_are_the_only_ones_asked_about_in_each_set() -> None:
    main = _first_of_each_domain(3)
    pilot = _first_of_each_domain(1, pilot=True)
    tasks = crossprofile_tasks("main", names=main + pilot)
    assert {t.template for t in tasks} == set(main)
    assert len(tasks) == 8 * len(main)  # every ownership variant of each
    assert {t.template for t in crossprofile_tasks("pilot", names=main + pilot)} == set(pilot)
    assert crossprofile_tasks("pilot", names=main) == []
    assert len({t.template for t in crossprofile_tasks("main", 2, names=main)}) == 2


def test_a_template_id_not_in_the_bank_is_refused_naming_it_and_the_key() -> None:
    with pytest.raises(ValueError, match="experiments.crossprofile.templates: no template nope-07"):
        crossprofile_tasks("main", names=[_first_of_each_domain(1)[0], "nope-07"])
    with pytest.raises(ValueError, match="HiddenBench has no templates"):
        memory_benchmark("hiddenbench").tasks(0, templates=None, limit=1, names=["education-01"])


def test_the_power_grid_counts_the_listed_main_templates_only() -> None:
    listed = _first_of_each_domain(3) + _first_of_each_domain(2, pilot=True)
    assert MemoryGridOptions(templates=listed).listed_main_templates() == 3
    assert MemoryGridOptions().listed_main_templates() is None


@pytest.mark.parametrize("listed", [[], ["education-01", "education-01"]])
def test_an_empty_or_repeated_template_list_is_refused(listed) -> None:
    with pytest.raises(ValidationError):
        MemoryGridOptions(templates=listed)


def test_a_run_of_a_profile_listing_templates_has_rows_of_those_only(tmp_path) -> None:
    listed = _first_of_each_domain(2)
    profile = _profile(
        tmp_path,
        f"    templates: [{', '.join(listed)}]\n    budgets: [0.6]\n    item_limit: 0\n"
        "    policies: [R1, all]\n    tags: [keep, remove]\n",
    )
    run_profile, analysis = resolve(profile, "crossprofile", n_resamples=2)
    client = make_client(run_profile, cache_file=tmp_path / "c.sqlite", progress=False)
    rows, _ = notebook_rows(
        "crossprofile",
        run_profile,
        client,
        analysis,
        policies=("all", "R1", "B4"),
        tags=("keep", "remove", "shuffle"),
        templates=("main", "pilot"),
        item_limit=0,
    )
    assert set(rows["template"]) == set(listed)
    assert rows["pilot"].eq(0).all()
    # The notebook asked for B4 and shuffle: the profile's grid lists neither, so none ran.
    assert set(rows["policy"]) == {"all", "R1"} and set(rows["tags"]) == {"keep", "remove"}
    assert pd.api.types.is_numeric_dtype(rows["correct"])  # the empty pilot set added nothing
    # Notebook 03's pilot table says there is no pilot template instead of failing.
    pilot = policy_accuracy(rows, pilot=True, n_resamples=2, seed=0)
    assert "no pilot template" in pilot["note"].iloc[0]
    assert power.grid_size(power.designs()[0], profile.experiments) == 2
    # Notebook 03's labeller table reads the same tasks (once it read the first 60 templates).
    labels = relevance_labels(run_profile, client)
    assert set(labels["template"]) == set(listed) and labels["task"].nunique() == 16


def test_a_notebook_runs_what_it_asks_for_within_the_profiles_grid(tmp_path) -> None:
    profile = _profile(tmp_path, "    policies: [all, R1]\n    tags: [remove, keep]\n")
    asked = ("B4", "R1", "all")
    assert within_profile_grid("crossprofile", profile, asked, ("keep", "shuffle")) == (
        ("R1", "all"),  # the notebook's order
        ("keep",),
    )
    assert within_profile_grid("crossprofile", profile, None, ("keep",)) == (None, ("keep",))
    with pytest.raises(ValueError, match="lists none of the notebook's policies"):
        within_profile_grid("crossprofile", profile, ("B4",), ("keep",))


def test_the_tag_ablation_needs_all_facts_and_tags_removed(tmp_path) -> None:
    profile = _profile(
        tmp_path, "    policies: [R1, B4, Random, R1-rel, oracle-rel]\n    tags: [keep]\n"
    )
    unmet = {(u.need.notebook, u.key) for u in unmet_needs(profile, ["04_tag_ablation.ipynb"])}
    assert unmet == {
        ("04_tag_ablation.ipynb", "experiments.crossprofile.policies"),
        ("04_tag_ablation.ipynb", "experiments.crossprofile.tags"),
    }
