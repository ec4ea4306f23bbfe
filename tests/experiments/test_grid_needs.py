"""What the notebooks need of a grid (deliberation.experiments.grid_needs): each kind of need
met or not, the refusal naming the key and a value that works, the starter grid meeting every
need, and every shipped profile accepted (the plan would refuse it otherwise). The whole paper on
the starter grid is built in tests/notebooks/test_starter_paper.py."""

from __future__ import annotations

import pytest

from deliberation.experiments import experiment_options, experiments
from deliberation.experiments.grid_needs import (
    GridNeed,
    GridNeedsError,
    check_grid,
    grid_needs,
    starter_grid,
    unmet_needs,
)
from deliberation.io import paths
from deliberation.paper.manifest import load_manifest
from deliberation.profiles.profile import load_profile, shipped_profiles


def test_each_kind_of_need_says_when_it_is_met_and_the_smallest_change_that_meets_it() -> None:
    policies = GridNeed("02_x.ipynb", "policies", "why", includes=("R1", "B3"))
    assert policies.met_by(("B3", "R1", "B4")) and policies.met_by(None)  # None: every policy
    assert not policies.met_by(("R1",))
    assert policies.met(("B4", "R1")) == ("B4", "R1", "B3")  # order kept, the missing added
    blocks = GridNeed("08_x.ipynb", "blocks", "why", at_least=2)
    assert blocks.met_by(5) and not blocks.met_by(1) and blocks.met(1) == 2
    fixed = GridNeed("03_x.ipynb", "item_limit", "why", equals=7)
    assert fixed.met_by(7) and not fixed.met_by(0) and not fixed.met_by(5) and fixed.met(0) == 7


def test_every_need_names_a_real_option_and_notebook() -> None:
    notebooks = {entry.name for entry in load_manifest()}
    options = experiment_options()
    needs = grid_needs()
    assert set(needs) <= set(experiments())
    assert {"crossprofile", "hiddenbench", "dhd"} <= set(needs)
    for section, declared in needs.items():
        for need in declared:
            assert need.notebook in notebooks, need
            assert need.option in options[section].model_fields, need
            assert need.why and (need.includes or need.at_least or need.equals is not None)


def test_a_grid_missing_a_need_is_refused_naming_the_key_the_value_and_the_notebook(
    tmp_path,
) -> None:
    (tmp_path / "sim.yaml").write_text((paths.params_dir() / "sim.yaml").read_text())
    narrow = tmp_path / "narrow.yaml"
    narrow.write_text(
        "extends: sim\nexperiments:\n  crossprofile:\n    policies: [R1]\n    item_limit: 0\n"
        "  hiddenbench:\n    policies: [B4]\n"
    )
    profile = load_profile(narrow)
    with pytest.raises(GridNeedsError) as refused:
        check_grid(profile)
    text = str(refused.value)
    assert refused.value.exit_code == 2
    assert "experiments.crossprofile.policies: [R1]; set it to [R1, B4, Random, R1-rel," in text
    assert "03_crossprofile_h1_h3 needs B4, Random, R1-rel: H1-H3" in text
    assert "experiments.crossprofile.item_limit: 0; set it to 7" in text
    assert "experiments.hiddenbench.policies: [B4]; set it to [B4, R1, B3]" in text
    assert "nothing was sent" in text
    # Only the needs of the notebooks that would run count.
    assert {u.key for u in unmet_needs(profile, ["02_hiddenbench.ipynb"])} == {
        "experiments.hiddenbench.policies"
    }
    assert unmet_needs(profile, ["00_smoke.ipynb", "07_dhd_replay.ipynb"]) == []


def test_the_starter_grid_meets_every_need_and_each_widened_value_is_needed() -> None:
    grid = starter_grid()
    assert set(grid) == {name for name, r in experiments().items() if r.starter}
    profile = load_profile("sim")
    sections = {
        name: getattr(profile.experiments, name).model_copy(
            update={option: value.value for option, value in options.items()}
        )
        for name, options in grid.items()
    }
    starter = profile.model_copy(
        update={"experiments": profile.experiments.model_copy(update=sections)}
    )
    assert unmet_needs(starter) == []
    for name, options in grid.items():
        for option, value in options.items():
            if not value.needed_by:
                continue
            base = experiments()[name].starter.get(option)
            narrowed = sections[name].model_copy(update={option: base})
            without = starter.model_copy(
                update={"experiments": starter.experiments.model_copy(update={name: narrowed})}
            )
            keys = {u.key for u in unmet_needs(without)}
            assert f"experiments.{name}.{option}" in keys, (name, option)


@pytest.mark.parametrize("name", shipped_profiles())
def test_every_shipped_profile_meets_every_need(name) -> None:
    assert unmet_needs(load_profile(name)) == []
