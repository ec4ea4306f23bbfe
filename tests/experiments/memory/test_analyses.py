"""Paper 1's analysis library (deliberation.experiments.memory.analyses) and the memory viewer, on hand-made frames
whose answers can be worked out by hand."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from deliberation.benchmarks.crossprofile import CLASSIC, derive_task, load_bank
from deliberation.benchmarks.crossprofile.audit import audit
from deliberation.discussion import memory_candidates, scripted_discussion
from deliberation.experiments.memory.analyses import accuracy, crossprofile, evidence, tags
from deliberation.experiments.memory.analyses.settings import resolve
from deliberation.experiments.memory.display import ROLE_COLOURS, memory_html
from deliberation.experiments.memory.grid import Cell
from deliberation.experiments.memory.pipeline import Decision
from deliberation.memory_policies import Capacity, MemoryPool, build_memory
from deliberation.profiles.profile import load_profile

R = 400


def frame(rows: list[dict]) -> pd.DataFrame:
    base = {"valid": 1, "budget": 0.6, "item_limit": None, "tags": "keep", "pilot": 0}
    return pd.DataFrame([{**base, **r} for r in rows])


def test_capacity_names_budgets_item_counts_and_references():
    rows = pd.DataFrame({"budget": [0.6, None, None], "item_limit": [None, 7, None]})
    assert list(accuracy.with_capacity(rows)["capacity"]) == ["r=0.6", "7 items", "reference"]


def test_accuracy_table_pools_rows_and_counts_invalid_answers():
    rows = frame(
        [
            {"template": "t1", "policy": "A", "correct": 1},
            {"template": "t1", "policy": "A", "correct": 0, "valid": 0},
            {"template": "t2", "policy": "A", "correct": 1},
            {"template": "t2", "policy": "A", "correct": 1},
            {"template": "t1", "policy": "B", "correct": 0},
            {"template": "t2", "policy": "B", "correct": 0},
        ]
    )
    table = accuracy.accuracy_table(rows, ["policy"], n_resamples=R, seed=0)
    a, b = table.set_index("policy").loc["A"], table.set_index("policy").loc["B"]
    assert a["accuracy"] == 75 and a["n_rows"] == 4 and a["invalid"] == 1
    # two templates: below the floor, the estimate and counts only
    assert np.isnan(a["low"]) and np.isnan(a["high"]) and "fewer than" in a["interval"]
    assert b["accuracy"] == 0 and np.isnan(b["low"])
    assert list(table["n_clusters"]) == [2, 2]


def test_rows_of_the_same_calls_say_so_and_their_matrix_names_them():
    # R1 at 7 items is the memory R1 keeps at r = .6 (same prompts, same cached calls), and the
    # labeller kept every fact, so R1-rel is R1 too; B4 scores the same from other calls.
    rows = []
    for template in ("t1", "t2", "t3"):
        for policy, budget, limit, key in (
            ("R1", 0.6, None, "r1"), ("R1", None, 7, "r1"), ("R1-rel", 0.6, None, "r1"),
            ("B4", 0.6, None, "b4"),
        ):  # fmt: skip
            rows.append({"template": template, "policy": policy, "budget": budget,
                         "item_limit": limit, "correct": int(template != "t1"),
                         "key": f"{template}/{key}"})  # fmt: skip
    table = accuracy.accuracy_table(
        accuracy.with_capacity(frame(rows)), ["policy", "capacity"], n_resamples=R, seed=0
    )
    assert table["same_calls_as"].tolist() == ["", "r=0.6", "R1", ""]
    assert table["accuracy"].nunique() == 1  # equal numbers, but only three rows are one
    wide = accuracy.accuracy_matrix(table).set_index("policy")
    assert wide.loc["R1", "same_calls_as"] == "7 items: r=0.6"
    assert wide.loc["R1-rel", "same_calls_as"] == "r=0.6: R1"
    assert wide.loc["B4", "same_calls_as"] == ""
    # no row repeats another's calls: the column is there, empty
    distinct = accuracy.accuracy_matrix(table[table["same_calls_as"] == ""])
    assert distinct["same_calls_as"].tolist() == ["", ""]
    decoys = evidence.decoy_choices(
        frame([{**r, "variant": CLASSIC.id, "chose_decoy": 0} for r in rows if r["budget"]]),
        n_resamples=R,
        seed=0,
    ).set_index("policy")
    assert decoys["same_calls_as"].to_dict() == {"R1": "", "R1-rel": "R1", "B4": ""}
    # rows naming no call: nothing to compare, no column
    keyless = accuracy.accuracy_table(
        frame([{k: v for k, v in r.items() if k != "key"} for r in rows]),
        ["policy"],
        n_resamples=R,
        seed=0,
    )
    assert "same_calls_as" not in keyless


def test_difference_by_budget_reports_each_budget_and_their_equal_weight_mean():
    rows = []
    for template, budget in itertools.product(("t1", "t2", "t3"), (0.4, 0.6)):
        rows.append({"template": template, "policy": "R1", "budget": budget, "correct": 1})
        b3 = 0 if budget == 0.4 else 1
        rows.append({"template": template, "policy": "B3", "budget": budget, "correct": b3})
    rows.append({"template": "t1", "policy": "all", "budget": None, "correct": 0})  # ignored
    table = accuracy.difference_by_budget(frame(rows), "R1", "B3", n_resamples=R, seed=0)
    assert list(table["where"]) == ["r=0.4", "r=0.6", "mean over budgets"]
    assert list(table["estimate"]) == [100, 0, 50]


def test_cue_baseline_is_the_best_thresholded_heuristic():
    bank = [t for t in load_bank() if not t.pilot][:12]
    row = accuracy.cue_baseline(bank, seed=0).iloc[0]
    table = audit(bank, seed=0, draws=0).table
    thresholded = table[table["thresholded"]]
    assert row["policy"].removeprefix("cue baseline: ") in set(thresholded["heuristic"])
    assert row["accuracy"] == pytest.approx(100 * thresholded["accuracy"].max())
    # 12 templates: below the percentile bootstrap's own floor (20), so no interval, and why
    assert row["n_clusters"] == 12 and np.isnan(row["low"]) and np.isnan(row["high"])
    assert "12" in row["interval"]
    wide = accuracy.cue_baseline([t for t in load_bank() if not t.pilot][:24], seed=0).iloc[0]
    assert wide["low"] <= wide["accuracy"] <= wide["high"] and not wide["interval"]


def _h1_rows(advantage_shared: int, advantage_private: int) -> pd.DataFrame:
    """R1 always right; B4 right unless decoys are shared (first arg) / private."""
    rows = []
    for template, support, decoy, irrelevant in itertools.product(
        ("t1", "t2", "t3"), ("shared", "private"), ("shared", "private"), ("shared", "private")
    ):
        cell = {"template": template, "support": support, "decoy": decoy, "irrelevant": irrelevant}
        variant = f"S{support[0].upper()}-D{decoy[0].upper()}-I{irrelevant[0].upper()}"
        lost = advantage_shared if decoy == "shared" else advantage_private
        for policy, correct in (("R1", 1), ("B4", 1 - lost), ("Random", 1), ("R1-rel", 0)):
            rows.append({**cell, "variant": variant, "policy": policy, "correct": correct})
    return frame(rows)


def test_h1_h3_table_reads_main_rows_at_the_primary_budget_only():
    rows = _h1_rows(advantage_shared=1, advantage_private=0)
    noise = rows.assign(budget=0.4, correct=0)  # another budget: must not count
    pilot = rows.assign(pilot=1, correct=0)  # pilot templates: must not count
    table = crossprofile.h1_h3_table(
        pd.concat([rows, noise, pilot]), n_resamples=R, seed=0
    ).set_index("test")
    assert table.loc["H1", "estimate"] == 100  # (1 - 0) - (1 - 1)
    assert table.loc["H2", "estimate"] == 0
    assert table.loc["H3", "estimate"] == -100
    assert table.loc["H1", "family"] == "primary"
    # every template gives the same contrasts: no variation to test against, so no Holm p
    assert np.isnan(table.loc["H1", "p_holm"]) and "agree exactly" in table.loc["H1", "interval"]
    assert set(table.loc[["H1", "H2", "H3", "H1 vs Random"], "budgets"]) == {"r=0.6"}


def test_h2_h3_pooled_over_budgets_follow_their_primary_rows_and_the_caption_names_both():
    rows = _h1_rows(advantage_shared=1, advantage_private=0)
    other = rows.assign(budget=0.4, correct=0)  # every policy wrong at r = 0.4
    pilot = rows.assign(pilot=1, correct=0)  # pilot templates: never pooled
    table = crossprofile.h1_h3_table(pd.concat([rows, other, pilot]), n_resamples=R, seed=0)
    assert table["test"].tolist() == [
        "H1", "H2", "H2, budgets pooled", "H3", "H3, budgets pooled", "H1 vs Random"
    ]  # fmt: skip
    pooled = table.set_index("test").loc[["H2, budgets pooled", "H3, budgets pooled"]]
    assert pooled["budgets"].tolist() == ["r=0.4/0.6 pooled"] * 2
    assert pooled["family"].tolist() == ["secondary"] * 2 and pooled["p_holm"].isna().all()
    assert pooled["estimate"].tolist() == [0, -50]  # H3: -100 at r = .6, 0 at r = .4
    caption = crossprofile.h1_h3_caption(table)
    assert "H1-H3 at r=0.6" in caption and "budgets 0.4/0.6 pooled" in caption
    alone = crossprofile.h1_h3_table(rows, n_resamples=R, seed=0)  # one budget: no pooled rows
    assert not alone["test"].str.contains("pooled").any()
    assert "pooled" not in crossprofile.h1_h3_caption(alone)


def test_cell_accuracy_spells_out_ownership_and_matrix_orders_cells():
    cells = crossprofile.cell_accuracy(_h1_rows(1, 0), n_resamples=R, seed=0)
    b4 = cells[cells["policy"] == "B4"].set_index("variant")
    assert b4.loc[CLASSIC.id, ["support", "decoy", "irrelevant"]].tolist() == [
        "private", "shared", "private",
    ]  # fmt: skip
    assert b4.loc[CLASSIC.id, "accuracy"] == 0 and b4.loc["SP-DP-IP", "accuracy"] == 100
    matrix = crossprofile.cell_matrix(cells)
    assert list(matrix.index) == ["R1", "B4", "Random", "R1-rel"]
    assert list(matrix.columns) == [*crossprofile.VARIANT_ORDER, "n_clusters"]
    # the labeller kept every fact: R1-rel's decisions are R1's calls in every cell, once
    rows = _h1_rows(1, 0)
    keys = rows["template"] + "/" + rows["variant"] + "/" + rows["policy"].replace("R1-rel", "R1")
    rows = rows.assign(key=keys, correct=rows["correct"].where(rows["policy"] != "R1-rel", 1))
    matrix = crossprofile.cell_matrix(crossprofile.cell_accuracy(rows, n_resamples=R, seed=0))
    assert matrix["same_calls_as"].to_dict() == {
        "R1": "", "B4": "", "Random": "", "R1-rel": "R1 (every cell)"
    }  # fmt: skip
    one = rows[~((rows["policy"] == "R1-rel") & (rows["variant"] == CLASSIC.id))]
    one = one.assign(key=one["key"].where(one["policy"] != "R1-rel", one["key"] + "-rel"))
    one.loc[(one["policy"] == "R1-rel") & (one["variant"] == "SP-DP-IP"), "key"] = (
        one["template"] + "/SP-DP-IP/R1"
    )
    partly = crossprofile.cell_matrix(crossprofile.cell_accuracy(one, n_resamples=R, seed=0))
    assert partly.loc["R1-rel", "same_calls_as"] == "SP-DP-IP: R1"


def test_classic_contrasts_use_the_classic_cell_only():
    rows = _h1_rows(1, 0)
    table = crossprofile.classic_contrasts(
        rows, [("R1", "B4"), ("R1-rel", "R1")], n_resamples=R, seed=0
    )
    assert list(table["estimate"]) == [100, -100]


def test_labeller_precision_and_recall_against_true_roles():
    labels = pd.DataFrame(
        {
            "template": ["t1"] * 5 + ["t2"] * 5,
            "role": ["support", "support", "decoy", "irrelevant", "irrelevant"] * 2,
            "labelled": [1, 0, 1, 1, 0] * 2,
        }
    )
    labels["relevant"] = labels["role"].isin(["support", "decoy"]).astype(int)
    scores = crossprofile.labeller_scores(labels, n_resamples=R, seed=0).set_index("measure")
    assert scores.loc["precision", "estimate"] == pytest.approx(100 * 2 / 3)
    assert scores.loc["recall", "estimate"] == pytest.approx(100 * 2 / 3)
    assert scores.loc["labelled relevant | irrelevant", "estimate"] == 50


def _tag_rows() -> pd.DataFrame:
    """All-facts rows: with tags kept, support shared is always right and private always
    wrong; without tags everything is right; reassigned tags halve the gap."""
    rows = []
    for template, support, decoy, irrelevant, mode in itertools.product(
        ("t1", "t2"), ("shared", "private"), ("shared", "private"), ("shared", "private"),
        ("keep", "remove", "shuffle"),
    ):  # fmt: skip
        correct = {
            "keep": int(support == "shared"),
            "remove": 1,
            "shuffle": int(support == "shared" or decoy == "private"),
        }[mode]
        variant = f"S{support[0].upper()}-D{decoy[0].upper()}-I{irrelevant[0].upper()}"
        rows.append(
            {"template": template, "support": support, "decoy": decoy, "irrelevant": irrelevant,
             "variant": variant, "tags": mode, "policy": "all", "correct": correct}
        )  # fmt: skip
    return frame(rows)


def _with_other_policy(rows: pd.DataFrame) -> pd.DataFrame:
    """The same cells for R1, always wrong: must not leak into the all-facts contrasts."""
    return pd.concat([rows, rows.assign(policy="R1", correct=0)], ignore_index=True)


def test_social_proof_gap_and_how_much_removing_tags_narrows_it():
    rows = _with_other_policy(_tag_rows())
    table = tags.social_proof_table(rows, n_resamples=R, seed=0).set_index("contrast")
    assert table.loc["gap, tags keep", "estimate"] == 100
    assert table.loc["gap, tags remove", "estimate"] == 0
    assert table.loc["gap, tags shuffle", "estimate"] == 50
    assert table.loc["narrowing: gap(keep) - gap(remove)", "estimate"] == 100
    assert table.loc["narrowing: gap(keep) - gap(shuffle)", "estimate"] == 50


def test_tag_effects_by_cell_are_paired_differences_from_tags_kept():
    table = tags.tag_effects_by_cell(_with_other_policy(_tag_rows()), n_resamples=R, seed=0)
    assert table.groupby("policy").size().to_dict() == {"all": 8, "R1": 8}
    assert (table.loc[table["policy"] == "R1", "acc keep"] == 0).all()
    table = table[table["policy"] == "all"].set_index("variant")
    assert table.loc[CLASSIC.id, "remove - keep"] == 100
    assert table.loc[CLASSIC.id, "shuffle - keep"] == 0
    assert table.loc["SS-DS-IS", "remove - keep"] == 0
    # two templates: below the floor, no interval
    assert table.loc[CLASSIC.id, ["remove low", "remove high"]].isna().all()
    assert "fewer than" in table.loc[CLASSIC.id, "interval"]


def test_lead_bins_clip_both_ends_and_label_them():
    bins = evidence.lead_bins(pd.Series([-5, -2, 0, 3, 4, 7]))
    assert bins.tolist() == [-2, -2, 0, 3, 4, 4]
    assert evidence.lead_label(-2, below=True) == "-2 or less"
    assert [evidence.lead_label(v) for v in (0, 4)] == ["+0", "+4"]
    assert evidence.lead_label(4, above=True) == "+4 or more"


def test_accuracy_by_lead_pools_policies_per_lead():
    rows = frame(
        [
            {"template": t, "policy": p, "net_lead": lead, "correct": int(lead > 0)}
            for t in ("t1", "t2")
            for p in ("R1", "B4")
            for lead in (-3, 1, 2)
        ]
    ).assign(lead_bin=lambda f: evidence.lead_bins(f["net_lead"]))
    table = evidence.accuracy_by_lead(rows, n_resamples=R, seed=0)
    # -3 was pooled into "-2 or less"; +2 is the largest lead seen, so no "or more" and no
    # empty bin up to the paper's +4
    assert table["lead"].tolist() == ["-2 or less", "+1", "+2"]
    assert table["accuracy"].tolist() == [0, 100, 100] and table["n_rows"].tolist() == [4, 4, 4]
    assert evidence.lead_range(rows) == (-3, 2)
    exact = rows.assign(net_lead=rows["net_lead"].clip(lower=-2))  # nothing below -2 now
    exact = exact.assign(lead_bin=evidence.lead_bins(exact["net_lead"]))
    assert evidence.accuracy_by_lead(exact, n_resamples=R, seed=0)["lead"].iloc[0] == "-2"


def test_decoy_choices_among_all_and_among_wrong_decisions():
    rows = frame(
        [
            {"template": "t1", "policy": "B4", "variant": CLASSIC.id, "correct": 0, "chose_decoy": 1},
            {"template": "t2", "policy": "B4", "variant": CLASSIC.id, "correct": 0, "chose_decoy": 0},
            {"template": "t3", "policy": "B4", "variant": CLASSIC.id, "correct": 1, "chose_decoy": 0},
            {"template": "t1", "policy": "R1", "variant": CLASSIC.id, "correct": 1, "chose_decoy": 0},
            {"template": "t1", "policy": "R1", "variant": "SS-DP-IP", "correct": 0, "chose_decoy": 1},
        ]
    )  # fmt: skip
    table = evidence.decoy_choices(rows, n_resamples=R, seed=0).set_index("policy")
    assert table.loc["B4", "decoy %"] == pytest.approx(100 / 3)
    assert table.loc["B4", "decoy among wrong %"] == 50
    assert table.loc["R1", "decisions"] == 1 and pd.isna(table.loc["R1", "decoy among wrong %"])
    # a template without a decoy option (bank v5, key in slot E) does not count at all
    none = frame([{"template": "t4", "policy": "B4", "variant": CLASSIC.id, "correct": 0,
                   "chose_decoy": None}])  # fmt: skip
    with_none = pd.concat([rows, none], ignore_index=True).astype({"chose_decoy": "Int64"})
    again = evidence.decoy_choices(with_none, n_resamples=R, seed=0).set_index("policy")
    assert again.loc["B4", "decisions"] == 3 and again.loc["B4", "decoy %"] == pytest.approx(
        100 / 3
    )


def test_evidence_model_tests_the_policy_terms():
    rows = []
    for t, p, lead in itertools.product(range(12), ("R1", "B4"), (-1, 0, 1, 2)):
        correct = int((lead + (t % 3) - 1) > 0)
        rows.append({"template": f"t{t}", "policy": p, "net_lead": lead,
                     "tone_lead": (t + lead) % 3 - 1, "correct": correct})  # fmt: skip
    coefficients, test = evidence.evidence_model(pd.DataFrame(rows))
    assert set(coefficients["model"]) == {"lead + tone", "lead + tone + policy"}
    assert test.loc[0, "df"] == 1 and test.loc[0, "n_clusters"] == 12
    assert "absence of evidence" in test.loc[0, "reading"] or "near zero" in test.loc[0, "reading"]
    # the policy label carries no information here: the LR statistic is ~0
    assert test.loc[0, "LR statistic"] == pytest.approx(0, abs=1e-6)
    # rows that share a prompt share a call: both policies' rows of a (template, lead) here
    keyed = pd.DataFrame(rows).assign(key=lambda f: f["template"] + "/" + f["net_lead"].astype(str))
    coefficients, _ = evidence.evidence_model(keyed)
    assert coefficients["n_rows"].eq(96).all() and coefficients["n_calls"].eq(48).all()


def test_a_coefficient_is_printed_from_the_library_with_no_inference_below_the_floor():
    rows = []
    for t, p, lead in itertools.product(range(12), ("R1", "B4"), (-1, 0, 1, 2)):
        rows.append({"template": f"t{t}", "policy": p, "net_lead": lead,
                     "tone_lead": (t + lead) % 3 - 1, "correct": int((lead + (t % 3) - 1) > 0)})  # fmt: skip
    frame_ = pd.DataFrame(rows)
    coefficients, _ = evidence.evidence_model(frame_)
    tone = coefficients.set_index(["model", "term"]).loc[("lead + tone", "tone_lead")]
    above = evidence.term_reading(coefficients, "tone_lead")
    assert above.startswith(f"tone lead: {tone['coef']:+.3f} (cluster-robust SE")
    assert "p = " in above and "12 clusters" in above
    # two templates: the estimate, n and why; no SE, p or interval (not even as "nan")
    two = frame_[frame_["template"].isin(["t0", "t2"])]
    coefficients, _ = evidence.evidence_model(two)
    below = evidence.term_reading(coefficients, "tone_lead")
    assert "n = 2 clusters, fewer than" in below and "16 rows" in below
    assert not any(word in below for word in ("SE", "p =", "nan", "["))


def test_resolve_takes_the_profile_values_unless_the_notebook_sets_them():
    smoke, sim = load_profile("smoke"), load_profile("sim")
    assert resolve(smoke, "crossprofile")[1].n_resamples == 200
    assert resolve(sim, "hiddenbench")[1].n_resamples == 10_000
    profile, chosen = resolve(sim, "crossprofile", budgets=[0.6], n_resamples=50, seed=7)
    assert (chosen.budgets, chosen.n_resamples, chosen.seed, profile.seed) == ((0.6,), 50, 7, 7)
    with pytest.raises(ValueError, match="primary budget"):
        resolve(sim, "crossprofile", budgets=[0.4, 0.8])


@pytest.mark.parametrize(
    ("parameters", "message"),
    [
        ({"n_resamples": "abc"}, "n_resamples: expected an integer from 2 to 1,000,000, got str 'abc'"),
        ({"n_resamples": 2.7}, "n_resamples: expected an integer"),
        ({"n_resamples": True}, "n_resamples: expected an integer"),
        ({"n_resamples": 10**9}, "n_resamples: expected an integer from 2 to 1,000,000"),
        ({"budgets": "[0.4, 0.6]"}, "budgets: expected a budget fraction r in .0, 1. or a list"),
        ({"budgets": [0.6, 1.5]}, "budgets: expected a budget fraction"),
        ({"budgets": [0.6, 0.6]}, "budgets: expected .* distinct"),
        ({"budgets": []}, "budgets: expected"),
        ({"budgets": [float("nan")]}, "budgets: expected"),
        ({"seed": "7"}, "seed: expected an integer, got str '7'"),
    ],
)  # fmt: skip
def test_a_wrong_notebook_parameter_is_refused_naming_it(parameters, message):
    from deliberation.experiments.memory.analyses.settings import NotebookParameterError

    with pytest.raises(NotebookParameterError, match=f"^notebook parameter {message}"):
        resolve(load_profile("sim"), "crossprofile", **parameters)


def test_a_single_budget_and_numpy_numbers_are_taken_as_papermill_passes_them():
    import numpy as np

    profile, chosen = resolve(
        load_profile("sim"), "crossprofile", budgets=0.6, n_resamples=np.int64(50), seed=np.int64(3)
    )
    assert (chosen.budgets, chosen.n_resamples, profile.seed) == ((0.6,), 50, 3)
    assert type(chosen.n_resamples) is int and type(profile.seed) is int


def _decision(policy: str, tags_mode: str, capacity=None, budget=None):
    task = derive_task(load_bank()[0], CLASSIC, seed=0)
    pool = MemoryPool(task.id, 0, memory_candidates(scripted_discussion(task, 0)))
    memory = build_memory(policy, pool, capacity)
    limit = capacity.limit if capacity is not None else None
    wrong = next(o for o in task.options if o != task.correct)
    return Decision(task, Cell(policy, budget=budget), tags_mode, memory, limit, wrong, "", "k")


def test_memory_view_colours_every_note_by_its_true_role():
    decision = _decision("all", "keep")
    view = memory_html(decision, 0, synthetic=True)
    roles = [f.role for f in decision.task.facts]
    for role in ("support", "decoy", "irrelevant"):
        colour = f'<div style="background:{ROLE_COLOURS[role]}">'
        assert view.html.count(colour) == roles.count(role)
    assert "4 holders" in view.html  # decoys are shared in the classic cell
    assert "(wrong; key" in view.html and "synthetic (sim backend)" in view.html
    assert "[A1,A2,A3,A4]" in view.prompt  # the prompt keeps the holder tags


def test_memory_view_of_a_budgeted_memory_under_reassigned_tags():
    decision = _decision("R1", "shuffle", Capacity.tokens(60), budget=0.3)
    view = memory_html(decision, 0)
    kept = len(decision.memory.items)
    assert 0 < kept < 12
    assert view.html.count("holder") == kept
    assert f"of {decision.budget_tokens} tokens" in view.html


def test_accuracy_matrix_lays_policies_against_capacities():
    table = pd.DataFrame(
        {
            "policy": ["R1", "R1", "empty"],
            "capacity": ["r=0.4", "r=0.6", "reference"],
            "accuracy": [50.0, 62.5, 33.333],
            "low": [40.0, 50.0, 20.0],
            "high": [60.0, 75.0, 45.0],
        }
    )
    wide = accuracy.accuracy_matrix(table).set_index("policy")
    assert list(wide.columns) == ["r=0.4", "r=0.6", "reference"]
    assert wide.loc["R1", "r=0.6"] == "62.5 [50.0, 75.0]"
    assert wide.loc["empty", "r=0.4"] == "" and wide.loc["empty", "reference"].startswith("33.3")
    # Below the cluster minimum the entry keeps its estimate and says n instead of an interval.
    few = accuracy.accuracy_matrix(table.assign(n_clusters=[2, 9, 1])).set_index("policy")
    assert few.loc["R1", "n_clusters"] == 9 and few.loc["empty", "n_clusters"] == 1
    assert few.loc["R1", "r=0.4"] == "50.0 (n = 2 clusters)"
    assert few.loc["R1", "r=0.6"] == "62.5 [50.0, 75.0]"
    assert few.loc["empty", "reference"] == "33.3 (n = 1 cluster)"
    # above the floor without an interval, the row's own reason, shortened
    agreed = table.assign(n_clusters=4, low=[np.nan, 50.0, 20.0], high=[np.nan, 75.0, 45.0])
    agreed["interval"] = ["the 4 clusters agree exactly: no variation to test against", "", ""]
    wide = accuracy.accuracy_matrix(agreed).set_index("policy")
    assert wide.loc["R1", "r=0.4"] == "50.0 (the 4 clusters agree exactly)"


def test_accuracy_figure_draws_budgets_and_references_only():
    from deliberation.experiments.memory.analyses import figures

    table = pd.DataFrame(
        {
            "policy": ["R1", "R1", "R1", "all", "cue baseline: x"],
            "capacity": ["r=0.4", "r=0.6", "7 items", "reference", "no model"],
            "accuracy": [50.0, 60.0, 55.0, 90.0, 53.0],
            "low": [40.0, 50.0, 45.0, 85.0, 40.0],
            "high": [60.0, 70.0, 65.0, 95.0, 65.0],
        }
    )
    fig = figures.accuracy_by_budget(table, "t")
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    # Every code explained in the legend; the reference drawn as a line with no budget.
    assert sorted(labels) == ["R1: rarest first", "all: every fact (reference, no budget)"]
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["r = 0.4", "r = 0.6"]


def test_tag_effects_refuse_a_policy_read_at_several_capacities():
    rows = _tag_rows()
    mixed = pd.concat([rows, rows.assign(budget=0.4)], ignore_index=True)
    with pytest.raises(ValueError, match="several capacities"):
        tags.tag_effects_by_cell(mixed, n_resamples=R, seed=0)


def test_fixed_count_overlap_counts_memories_equal_to_their_fixed_count_memory():
    def row(task, policy, kept, budget=None, item_limit=None, **extra):
        return {"task": task, "template": task, "policy": policy, "kept_facts": kept,
                "budget": budget, "item_limit": item_limit, **extra}  # fmt: skip

    rows = frame(
        [
            row("t1", "R1", "a;b;c", budget=0.6),
            row("t1", "R1", "a;b;c", item_limit=7),  # same memory
            row("t2", "R1", "a;b", budget=0.6),
            row("t2", "R1", "b;a", item_limit=7),  # same facts, other order: not the same
            row("t1", "B4", "x", budget=0.6),
            row("t1", "B4", "y", item_limit=7),
            row("t1", "B4", "y", budget=0.4),  # another budget: not read
            row("t1", "B3", "", budget=0.6),  # not a copy policy
            row("t1", "B3", "", item_limit=7),
            row("t3", "R1", "a", budget=0.6, pilot=1),  # pilot: not read
            row("t3", "R1", "a", item_limit=7, pilot=1),
        ]
    )
    table = crossprofile.fixed_count_overlap(rows).set_index("policy")
    assert table.loc["R1", ["memories", "same_as_fixed"]].tolist() == [2, 1]
    assert table.loc["B4", ["memories", "same_as_fixed"]].tolist() == [1, 0]
    assert table.loc["all copy policies", "share %"] == pytest.approx(100 / 3)
    assert "B3" not in table.index
    with pytest.raises(ValueError, match="no \\(task, policy\\)"):
        crossprofile.fixed_count_overlap(rows, budget=0.8)


def test_reference_lines_each_have_their_own_look_and_heatmaps_explain_the_cell_codes():
    from deliberation.experiments.memory.analyses import figures

    references = ["all", "empty", "private-only", "shared-only", "someday-new"]
    table = pd.DataFrame(
        {
            "policy": ["R1", *references],
            "capacity": ["r=0.6", *["reference"] * len(references)],
            "accuracy": [60.0, 90.0, 30.0, 80.0, 10.0, 50.0],
            "low": [50.0, 85.0, 25.0, 75.0, 5.0, 45.0],
            "high": [70.0, 95.0, 35.0, 85.0, 15.0, 55.0],
        }
    )
    fig = figures.accuracy_by_budget(table, "t")
    lines = [ln for ln in fig.axes[0].get_lines() if "(reference" in ln.get_label()]
    assert len(lines) == len(references)
    assert len({ln.get_color() for ln in lines}) == len(references)  # no two alike
    matrix = pd.DataFrame([[50.0] * 8], index=["R1"], columns=list(crossprofile.VARIANT_ORDER))
    heat = figures.cell_heatmaps(matrix, "t")
    note = heat.get_supxlabel()
    assert "S = shared (every agent holds every fact" in note and "P = private" in note
    assert "White = chance" in note and heat.axes[0].get_title() == "R1: rarest first"
    ticks = [t.get_text() for t in heat.axes[0].get_xticklabels()]
    assert ticks[2] == "decoys S\nirrel. P"
