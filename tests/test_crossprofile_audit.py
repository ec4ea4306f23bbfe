"""The cue audit: meaning-free heuristics against chance, ties, chance levels, the CLI.

The old-bank test is independent of bank size: it uses heuristics whose per-template result
is fixed by the design (v1's decoy and irrelevant placement make the correct option the
least-named and shortest in each of these templates, uniquely), and every template is audited
in all three option rotations so that position plays no part. Its accuracy is then 1.0 for
two templates as for sixty; the balanced v2 fixture scores exactly 1/3 (a three-way tie).
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from deliberation.cli import main
from deliberation.crossprofile.audit import (
    MAX_ABOVE_CHANCE,
    audit,
    credit,
    format_audit,
    heuristics,
    wilson_interval,
)
from deliberation.crossprofile.loader import load_template, read_template, template_files
from deliberation.crossprofile.schema import Template

FIXTURES = Path(__file__).parent / "fixtures" / "crossprofile"
V1 = FIXTURES / "bank_v1"


def _load(directory: Path) -> list[Template]:
    return [read_template(p)[0] for p in template_files([directory])]


def _in_every_rotation(templates: list[Template]) -> list[Template]:
    """Each template three times, its options rotated, so that each sits once in each position."""
    out = []
    for t in templates:
        for r in range(3):
            options = t.options[r:] + t.options[:r]
            out.append(t.model_copy(update={"id": f"{t.id}-r{r}", "options": options}))
    return out


def _row(report, name):
    return report.table.set_index("heuristic").loc[name]


def test_audit_fails_on_two_templates_of_the_old_bank():
    old = _load(V1)
    assert len(old) == 2 and not any(t.pilot for t in old)
    report = audit(_in_every_rotation(old))
    assert not report.ok
    failing = set(report.failures["heuristic"])
    assert {"least-named option", "shortest text"} <= failing, format_audit(report)
    for name in ("least-named option", "shortest text"):
        assert _row(report, name)["accuracy"] == 1.0
        # a unique pick in every template, not a lucky tie
        h = next(h for h in heuristics() if h.name == name)
        for t in old:
            scores = h.scores(t)
            assert max(scores, key=scores.get) == t.correct
            assert sorted(scores.values())[-1] > sorted(scores.values())[-2]
    for position in (1, 2, 3):
        assert _row(report, f"option in position {position}")["accuracy"] == pytest.approx(1 / 3)
    assert "audit FAILED" in format_audit(report) and "least-named option" in format_audit(report)


def test_balanced_naming_puts_the_name_count_heuristics_exactly_at_chance():
    hiring = load_template(FIXTURES / "valid" / "hiring-01.yaml")  # bank v2 design
    report = audit(_in_every_rotation([hiring]))
    for name in ("most-named option", "least-named option"):
        assert _row(report, name)["accuracy"] == pytest.approx(1 / 3)
        assert bool(_row(report, name)["passes"])


def test_irrelevant_fact_heuristics_have_chance_one_half_under_the_v2_design():
    """Only the correct and the one-decoy option carry irrelevant facts: 2 candidates."""
    hiring = load_template(FIXTURES / "valid" / "hiring-01.yaml")
    v2 = audit([hiring]).table.set_index("heuristic")["chance"]
    v1 = audit(_load(V1)).table.set_index("heuristic")["chance"]
    for name in (
        "most positive irrelevant facts (VADER)",
        "most negative irrelevant facts (VADER)",
    ):
        assert v2[name] == 0.5
        assert v1[name] == pytest.approx(1 / 3)  # v1 spread irrelevant facts over all three
    assert v2["most positive facts (VADER)"] == pytest.approx(1 / 3)


def test_a_tie_scores_one_over_k_and_never_favours_the_correct_option():
    assert credit({"A": 2, "B": 2, "C": 1}, "A") == 0.5
    assert credit({"A": 2, "B": 2, "C": 2}, "C") == pytest.approx(1 / 3)
    assert credit({"A": 2, "B": 2, "C": 1}, "C") == 0.0
    assert credit({"A": 1, "B": 0, "C": 0}, "A") == 1.0


def test_the_verdict_is_more_than_ten_points_above_chance():
    old = _in_every_rotation(_load(V1))
    table = audit(old).table
    for _, row in table.iterrows():
        if row["thresholded"]:
            assert row["passes"] == (row["accuracy"] - row["chance"] <= MAX_ABOVE_CHANCE)
        else:
            assert row["passes"]  # the all-facts lexicon is reported, never failed


@pytest.mark.parametrize(("hits", "n"), [(20, 60), (0, 60), (7.5, 12)])
def test_wilson_interval_matches_the_formula(hits, n):
    z = 1.959963984540054
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    low, high = wilson_interval(hits, n)
    assert low == pytest.approx(max(0.0, centre - half)) and high == pytest.approx(centre + half)


def test_audit_needs_a_main_template():
    housing = load_template(FIXTURES / "valid" / "housing-p1.yaml")
    with pytest.raises(ValueError, match="main"):
        audit([housing])


def test_audit_command_exits_one_on_the_old_bank(capsys):
    assert main(["crossprofile", "audit", str(V1)]) == 1
    out = capsys.readouterr().out
    assert "cue audit over 2 main templates" in out and "audit FAILED" in out


def test_audit_command_refuses_files_that_do_not_parse(capsys):
    assert main(["crossprofile", "audit", str(FIXTURES / "broken" / "malformed_yaml")]) == 2
    assert "malformed YAML" in capsys.readouterr().out
