"""deliberation compare: several profiles' headline tables side by side, rows matched by what
identifies them (not by counts), missing tables named, a report page written."""

from __future__ import annotations

import pandas as pd
from helpers.published import publish_table

from deliberation.cli import main
from deliberation.io import paths
from deliberation.results.compare import compare_profiles, headline_tables, interval_layout


def _table(profile: str, name: str, frame: pd.DataFrame) -> None:
    publish_table(profile, name, frame)


def test_the_claims_tables_name_the_headline_tables():
    stems = [h.table for h in headline_tables()]
    assert {"03_h1_h3", "03_accuracy_by_policy", "07_helpful_share", "08_selection_gains"} <= set(
        stems
    )
    assert not [s for s in stems if s.endswith("_rows")]
    h1 = next(h for h in headline_tables() if h.table == "03_h1_h3")
    assert h1.notebook == "03_crossprofile_h1_h3" and h1.claim.startswith("H1")


def test_value_and_keys_are_found_by_role_not_position():
    coefficients = pd.DataFrame(
        {"model": ["m"], "term": ["x"], "coef": [1.5], "se": [0.1], "z": [15.0],
         "p_value": [0.0], "low": [1.3], "high": [1.7]}
    )  # fmt: skip
    layout = interval_layout(coefficients)
    assert (layout.keys, layout.value) == (("model", "term"), "coef")
    shares = pd.DataFrame(
        {"design": ["single"], "flips": [3], "helpful_share": [0.5], "bootstrap_low": [0.1],
         "bootstrap_high": [0.9], "wilson_low": [0.2], "wilson_high": [0.8]}
    )  # fmt: skip
    layout = interval_layout(shares)
    assert (layout.keys, layout.value, layout.low) == (
        ("design",),
        "helpful_share",
        "bootstrap_low",
    )
    assert interval_layout(pd.DataFrame({"calls": [1], "accuracy": [0.9]})) is None


def test_two_profiles_side_by_side_with_a_missing_table_and_a_missing_row(tmp_path, capsys):
    _table("sim", "03_accuracy_by_policy", pd.DataFrame(
        {"policy": ["R1", "B4"], "budget": [0.6, 0.6], "accuracy": [64.0, 50.5],
         "low": [60.1, 45.0], "high": [68.2, 55.9], "n_rows": [480, 480]}))  # fmt: skip
    _table("smoke", "03_accuracy_by_policy", pd.DataFrame(
        {"policy": ["B4", "R1", "Random"], "budget": [0.6, 0.6, 0.6], "accuracy": [40.0, 70.25, 66.0],
         "low": [30.0, 61.0, 50.0], "high": [50.0, 79.0, 80.0], "n_rows": [24, 24, 24]}))  # fmt: skip
    _table("smoke", "03_h1_h3", pd.DataFrame(
        {"label": ["H1"], "estimate": [12.0], "low": [2.0], "high": [22.0]}))  # fmt: skip

    comparison = compare_profiles(["sim", "smoke"], tables=["03_accuracy_by_policy", "03_h1_h3"])
    accuracy, h1 = comparison.blocks
    frame = accuracy.frame.set_index("policy")
    assert (
        frame.loc["R1", "sim"] == "64 [60.1, 68.2]" and frame.loc["R1", "smoke"] == "70.2 [61, 79]"
    )
    assert frame.loc["Random", "sim"] == "-" and list(frame.index) == ["R1", "B4", "Random"]
    assert h1.missing == ["sim"] and h1.frame["smoke"].tolist() == ["12 [2, 22]"]

    out = tmp_path / "page"
    assert (
        main(
            [
                "compare",
                "sim",
                "smoke",
                "--full",
                "--tables",
                "03_accuracy_by_policy",
                "--out",
                str(out),
            ]
        )  # fmt: skip
        == 0
    )
    text = capsys.readouterr().out
    assert "sim (synthetic), smoke (synthetic)" in text and "| R1 " in text
    page = (out / "index.html").read_text()
    assert "70.2 [61, 79]" in page and 'class="banner synthetic"' in page


def test_compare_without_any_table_says_what_to_run(capsys):
    assert main(["compare", "sim", "smoke", "--full", "--out", str(paths.build_dir() / "c")]) == 1
    assert "make paper PROFILE" in capsys.readouterr().out


def test_tables_copied_from_elsewhere_compare_without_their_profile_file():
    import json

    _table("their-model", "03_h1_h3", pd.DataFrame(
        {"label": ["H1"], "estimate": [30.0], "low": [20.0], "high": [40.0]}))  # fmt: skip
    sidecar = paths.output_root() / "tables" / "their-model" / "03_h1_h3.provenance.json"
    sidecar.write_text(json.dumps({**json.loads(sidecar.read_text()), "synthetic": False}))
    comparison = compare_profiles(["their-model"], tables=["03_h1_h3"])
    assert comparison.synthetic == {"their-model": False}
    assert comparison.blocks[0].frame["their-model"].tolist() == ["30 [20, 40]"]
