"""The CrossProfile verifier: valid fixtures pass; each broken fixture (one flaw each, see the
comment at the top of every file) fails with a message naming the file and the fact or field."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.crossprofile_banks import (
    ORDERS,
    counterbalanced,
    v5_bank,
    v5_template,
    write_templates,
)

from deliberation.benchmarks.crossprofile import design
from deliberation.benchmarks.crossprofile.characters import text_problems
from deliberation.benchmarks.crossprofile.errors import TemplateError
from deliberation.benchmarks.crossprofile.loader import display_name, load_template, parse_template
from deliberation.benchmarks.crossprofile.verifier import (
    correct_positions,
    format_report,
    length_by_role,
    mentions,
    sentence_problems,
    signature_table,
    verify_paths,
    verify_template,
)

FIXTURES = Path(__file__).parents[2] / "fixtures" / "crossprofile"
VALID = FIXTURES / "valid"
BROKEN = FIXTURES / "broken"


def test_valid_fixtures_pass_with_no_violations_or_warnings():
    report = verify_paths([VALID])
    assert report.ok, format_report(report)
    assert len(report.templates) == 2
    assert report.warnings == ()


# (fixture folder, where the violation must point, words the message must contain)
BROKEN_CASES = [
    ("wrong_role_counts", "facts", ["5/3/4", "4 support (expected 5)", "2 decoy (expected 3)"]),
    ("decoy_favours_correct", "d1", ["decoy favours the correct option 'Ana Ruiz'"]),
    ("score_tie", "scores", ["Ben Okafor +2", "ties or beats"]),
    ("fact_names_two_options", "s1.text", ["names another option 'Ben Okafor'"]),
    ("irrelevant_is_criterion", "i3.attribute", ["'Mentoring' is a stated criterion"]),
    ("duplicate_fact_id", "d1", ["duplicate fact id", "facts[5], facts[6]"]),
    ("malformed_yaml", "line 11, column 8", ["malformed YAML", "started at line 10"]),
    ("missing_field", "d2.criterion", ["missing required field"]),
    ("support_favours_wrong", "s3", ["favours (polarity +1) the wrong option 'Ben Okafor'"]),
    ("two_sentences", "s2.text", ["one sentence"]),
    ("too_short", "i2.text", ["5 words", "14 to 28"]),
    ("missing_own_option", "d3.text", ["does not name its own option 'Chen Wei'"]),
    ("criterion_not_stated", "d1.criterion", ["'research output' is not one of the stated"]),
    ("correct_not_an_option", "correct", ["'Ana Ruis' is not one of the options"]),
    ("tone_imbalance", "facts", ["3 x +1 and 1 x -1"]),
    ("wrong_type", "s1.polarity", ["integer 1 or -1"]),
    ("unknown_field", "author", ["unknown field"]),
    # bank design (templates/README.md, "Why the bank looks like this")
    ("layout_not_v5", "facts", ["bank-v5 layout", "Ben Okafor (4, 1, +1)"]),
    ("description_out_of_order", "description", ["order ['Ben Okafor', 'Ana Ruiz', 'Chen Wei']"]),
    ("decoy_rebutted", "d3.criterion", ["support fact s5", "share the criterion 'on-call"]),
    ("weak_wording", "d1.text", ["weak or self-reported wording 'claims'"]),
    ("description_missing_option", "description", ["does not name the option 'Chen Wei'"]),
    ("description_one_sentence", "description", ["has 1 sentences", "2-4"]),
    ("title_names_option", "title", ["names the option 'Ana Ruiz'"]),
    ("foreign_option_name", "description", ["'Quarry Flats', an option of housing-p1"]),
    # characters (issue 9)
    ("confusable_name", "options[1]", ["mixes scripts (CYRILLIC, LATIN)", "confusable"]),
    ("zero_width_text", "s2.text", ["zero-width character U+200B"]),
    ("bidi_control", "title", ["bidi-control character U+202E (RIGHT-TO-LEFT OVERRIDE)"]),
]


def test_every_broken_fixture_has_a_case():
    assert {p.name for p in BROKEN.iterdir()} == {name for name, _, _ in BROKEN_CASES}


def test_files_are_named_relative_to_the_working_directory(tmp_path, monkeypatch):
    path = BROKEN / "score_tie" / "hiring-01.yaml"
    monkeypatch.chdir(BROKEN)
    assert display_name(path) == "score_tie/hiring-01.yaml"
    monkeypatch.chdir(BROKEN.parent)
    assert display_name(path) == "broken/score_tie/hiring-01.yaml"
    monkeypatch.chdir(tmp_path)  # outside: the path as given
    assert display_name(path) == str(path)


@pytest.mark.parametrize(
    ("case", "where", "needles"), BROKEN_CASES, ids=[c[0] for c in BROKEN_CASES]
)
def test_broken_fixture_fails_naming_file_and_fact_or_field(case, where, needles):
    report = verify_paths([BROKEN / case])
    assert not report.ok
    matching = [v for v in report.violations if v.where == where]
    assert matching, f"no violation at {where!r}: {[str(v) for v in report.violations]}"
    message = str(matching[0])
    # Files are named relative to the working directory (absolute outside it): from any cwd.
    shown = display_name(BROKEN / case / "hiring-01.yaml")
    assert shown.endswith(f"crossprofile/broken/{case}/hiring-01.yaml")
    assert message.startswith(f"{shown}: {where}: ")
    for needle in needles:
        assert needle in message


@pytest.mark.parametrize(
    "case",
    [
        "wrong_role_counts",
        "score_tie",
        "fact_names_two_options",
        "irrelevant_is_criterion",
        "duplicate_fact_id",
        "malformed_yaml",
        "missing_field",
        "layout_not_v5",
        "description_out_of_order",
        "decoy_rebutted",
        "weak_wording",
        "description_missing_option",
        "description_one_sentence",
        "title_names_option",
        "foreign_option_name",
        "confusable_name",
        "zero_width_text",
        "bidi_control",
    ],
)
def test_single_flaw_fixtures_report_exactly_that_flaw(case):
    """The fixtures change one thing, so nothing else may be reported (no cascades)."""
    assert len(verify_paths([BROKEN / case]).violations) == 1


def test_all_violations_are_reported_not_just_the_first(tmp_path):
    text = (BROKEN / "fact_names_two_options" / "hiring-01.yaml").read_text()
    text = text.replace("attribute: desk plants", "attribute: mentoring")
    text = text.replace('polarity: -1\n    text: "Incident', 'polarity: 1\n    text: "Incident')
    (tmp_path / "hiring-01.yaml").write_text(text)
    wheres = {v.where for v in verify_paths([tmp_path]).violations}
    assert {"s1.text", "i4.attribute", "s3", "scores"} <= wheres


def test_schema_errors_in_several_facts_are_all_reported():
    text = (VALID / "hiring-01.yaml").read_text()
    text = text.replace("    tone: 1\n", "    tone: 0\n").replace("role: decoy", "role: dekoy", 1)
    template, problems = parse_template(text, "x.yaml")
    assert template is None
    wheres = {p.where for p in problems}
    assert {"i1.tone", "i4.tone", "d1"} <= wheres


def test_duplicate_yaml_key_is_malformed_with_its_line():
    text = (
        (VALID / "hiring-01.yaml")
        .read_text()
        .replace("pilot: false\n", "pilot: false\npilot: true\n")
    )
    lines = text.splitlines()
    first, second = lines.index("pilot: false") + 1, lines.index("pilot: true") + 1
    template, problems = parse_template(text, "x.yaml")
    assert template is None
    assert problems[0].where == f"line {second}, column 1"
    assert f"duplicate key 'pilot' (first at line {first})" in problems[0].message


def test_a_yaml_alias_in_a_template_is_malformed_with_its_line():
    text = (VALID / "hiring-01.yaml").read_text().replace("pilot: false\n", "pilot: &p false\n")
    text += "extra: *p\n"
    template, problems = parse_template(text, "x.yaml")
    assert template is None
    assert problems[0].where == f"line {len(text.splitlines())}, column 8"
    assert "alias *p is not allowed" in problems[0].message


def test_non_mapping_and_empty_files_are_rejected():
    assert "got empty" in parse_template("", "e.yaml")[1][0].message
    assert "got list" in parse_template("- a\n- b\n", "l.yaml")[1][0].message


def test_load_template_raises_with_every_violation():
    with pytest.raises(TemplateError) as info:
        load_template(BROKEN / "missing_field" / "hiring-01.yaml")
    assert "d2.criterion: missing required field" in str(info.value)


def test_a_file_named_twice_is_verified_once():
    report = verify_paths([VALID, VALID / "hiring-01.yaml"])
    assert report.ok and len(report.files) == 2


def test_missing_file_is_reported_not_raised(tmp_path):
    violations = verify_paths([tmp_path / "nope.yaml"]).violations
    assert [v.where for v in violations] == ["file"] and "cannot read" in violations[0].message


def test_file_name_must_match_id(tmp_path):
    (tmp_path / "hiring-09.yaml").write_text((VALID / "hiring-01.yaml").read_text())
    found = [str(v) for v in verify_paths([tmp_path]).violations]
    assert len(found) == 1 and "file name must be 'hiring-01.yaml'" in found[0]


def test_id_must_fit_domain_and_pilot_flag():
    template = load_template(VALID / "hiring-01.yaml")
    as_pilot = template.model_copy(update={"pilot": True})
    other_domain = template.model_copy(update={"domain": "housing"})
    assert [v.where for v in verify_template(as_pilot, "f")] == ["id"]
    assert "housing-01" in verify_template(other_domain, "f")[0].message


def test_option_names_must_not_nest():
    template = load_template(VALID / "hiring-01.yaml")
    nested = template.model_copy(update={"options": ("Ana Ruiz", "Ben Okafor", "Ben")})
    assert any(
        "'Ben' is part of option 'Ben Okafor'" in v.message for v in verify_template(nested, "f")
    )


# ------------------------------------------------------------------ text rules


@pytest.mark.parametrize(
    "text",
    [
        "The rate rose from 4.5 to 6.25 percent in the year ending March 2024.",
        "Revenue in the U.S market grew by a third, according to the annual filing.",
        'The auditor called the plan "sound and well costed."',
    ],
)
def test_one_sentence_allows_decimals_and_inner_dots(text):
    assert sentence_problems(text) == []


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("It grew. It then shrank.", "one sentence"),
        ("Sales in the U.S. market grew.", "one sentence"),
        ("Dr. Lee approved it.", "one sentence"),
        ("Did it grow?", "end with a period"),
        ("It grew a lot!", "end with a period"),
        ("It grew, really? yes it did.", "'!' or '?'"),
        ("It grew without an ending", "end with a period"),
        ("It grew\nacross two lines.", "line break"),
    ],
)
def test_one_sentence_rejects_breaks_and_abbreviations(text, problem):
    assert any(problem in p for p in sentence_problems(text)), sentence_problems(text)


def test_mentions_matches_whole_names_only():
    assert mentions("Oak Hall's rent is low.", "Oak Hall", ignore_case=False)
    assert not mentions("oak hall is cheap.", "Oak Hall", ignore_case=False)
    assert mentions("oak hall is cheap.", "Oak Hall", ignore_case=True)
    assert not mentions("Oakland is far.", "Oak", ignore_case=True)


# ------------------------------------------------------------------ bank-level checks


def _write_copy(directory: Path, template_id: str, domain: str, *, pilot: bool, tag: str) -> None:
    """A valid bank-v5 template (the hiring fixture), every text made unique by ``tag``."""
    write_templates(directory, [v5_template(template_id, domain, pilot=pilot, tag=tag)])


def _write_full_bank(directory: Path, layout=counterbalanced, pilot_layout=counterbalanced) -> None:
    write_templates(directory, v5_bank(layout, pilot_layout))


def test_the_synthetic_templates_are_in_the_slots_asked_for():
    for slot in "EPN":
        for order in ORDERS:
            t = v5_template("hiring-01", "hiring", pilot=False, tag="x", slot=slot, order=order)
            assert verify_template(t, "f") == []
            assert (design.key_slot(t), design.slot_order(t)) == (slot, order)


def test_the_decoy_option_is_the_two_decoy_option_and_none_with_the_key_in_e():
    """Key in P or N: the wrong option in E carries two decoys; key in E: one decoy on each
    wrong option and one against the key, so no single option is the decoy option."""
    in_p = v5_template("hiring-01", "hiring", pilot=False, tag="x", slot="P")
    in_e = v5_template("hiring-01", "hiring", pilot=False, tag="x", slot="E")
    slots = design.option_slots(in_p)
    assert design.decoy_option(in_p.facts, in_p.correct) == next(
        o for o, s in slots.items() if s == "E"
    )
    assert design.decoy_option(in_e.facts, in_e.correct) is None


def test_a_decoy_against_a_wrong_option_or_for_the_key_is_refused():
    """A decoy points away from the key: +1 on a wrong option, or -1 on the key (slot E)."""
    in_e = load_template(FIXTURES / "key_in_e" / "hiring-02.yaml")
    assert verify_template(in_e, "f") == []
    flipped = {
        "d1": {"polarity": 1},  # the decoy on the key now favours it
        "d2": {"polarity": -1},  # a decoy now disfavours its wrong option
    }
    for fact_id, change in flipped.items():
        facts = tuple(f.model_copy(update=change) if f.id == fact_id else f for f in in_e.facts)
        found = verify_template(in_e.model_copy(update={"facts": facts}), "f")
        messages = [v.message for v in found if v.where == fact_id]
        assert len(messages) == 1, found
        assert ("favours the correct option" if fact_id == "d1" else "unfavourable") in messages[0]
        assert "scores" in {v.where for v in found}


def test_counterbalanced_bank_passes_composition(tmp_path):
    _write_full_bank(tmp_path)
    report = verify_paths([tmp_path], composition=True)
    assert report.ok, format_report(report)
    assert len(report.templates) == 70
    table = signature_table(report).set_index(["templates", "slot"])["key here"]
    assert table["main"].tolist() == [20, 20, 20] and sorted(table["pilot"]) == [3, 3, 4]


def _violations(tmp_path, **layouts):
    _write_full_bank(tmp_path, **layouts)
    report = verify_paths([tmp_path], composition=True)
    assert not verify_paths([tmp_path]).violations  # bank-level: only with the composition
    return report.violations


def test_a_key_never_in_slot_e_fails_the_bank(tmp_path):
    """Bank v4's leak: the key was never the option with four on-topic facts."""
    found = _violations(tmp_path, layout=lambda i: ("PN"[i % 2], ORDERS[i % 6]))
    main = [v.message for v in found if v.where == "bank.key_slot"]
    assert main == [
        "the key's slot in the main templates: E 0, P 30, N 30; each must be 20 or 20 (a third, "
        "as evenly as the count allows)"
    ]


def test_a_domain_out_of_balance_is_named(tmp_path):
    """Overall 20 / 20 / 20, but hiring puts the key in E three times (procurement gives one up
    and stays balanced: E 1, P 2, N 2)."""

    def layout(i):
        slot, order = counterbalanced(i)
        swap = {1: "E", 6: "P"}  # hiring-02 P -> E; procurement-02 E -> P
        return swap.get(i, slot), order

    found = _violations(tmp_path, layout=layout)
    domains = [v.message for v in found if v.where == "bank.key_slot_by_domain"]
    assert domains == [
        "the key's slot in the main templates, domain hiring: E 3, P 1, N 1; each must be 1 or 2 "
        "(a third, as evenly as the count allows)"
    ]
    assert not [v for v in found if v.where == "bank.key_slot"]


def test_a_listed_order_out_of_balance_is_named(tmp_path):
    """Each domain and the bank are balanced, but every template listing the slots E, P, N
    in that order has the key first (in E): a reader of listed order would find it."""
    found = _violations(tmp_path, layout=lambda i: ("EPN"[i % 3], "EPN" if i % 3 == 0 else "PNE"))
    orders = [v.message for v in found if v.where == "bank.key_slot_by_order"]
    assert len(orders) == 2 and "listed slot order EPN: E 20, P 0, N 0" in orders[0]
    assert not [v for v in found if v.where in ("bank.key_slot", "bank.key_slot_by_domain")]


def test_the_pilots_are_counterbalanced_apart(tmp_path):
    found = _violations(tmp_path, pilot_layout=lambda k: ("P", ORDERS[k % 6]))
    assert [v.where for v in found if "pilot" in v.where][:1] == ["bank.key_slot.pilot"]
    assert not [v for v in found if "pilot" not in v.where]


def test_a_bank_v4_template_is_refused_now_that_the_rewrite_is_done(monkeypatch):
    """During issue 42's rewrite a v4 layout passed with a warning (the flag, now off); the
    bank-level check refused it all along."""
    old = FIXTURES / "bank_v3" / "hiring-01.yaml"  # the bank-v3/v4 layout C/X/Y 0/3/1
    refused = verify_paths([old])
    assert [v.where for v in refused.violations] == ["facts"]
    assert "bank-v5 layout" in refused.violations[0].message
    monkeypatch.setattr(design, "V4_LAYOUT_ACCEPTED", True)
    report = verify_paths([old])
    assert report.ok and [w.where for w in report.warnings if "bank-v4" in w.message] == ["facts"]
    assert "bank.layout" in {v.where for v in design.check_bank_design(report.templates, "b")}


def test_incomplete_bank_names_the_missing_template(tmp_path):
    _write_full_bank(tmp_path)
    (tmp_path / "logistics-02.yaml").unlink()  # key in N: logistics stays balanced
    (tmp_path / "housing-p1.yaml").unlink()
    report = verify_paths([tmp_path], composition=True)
    messages = [str(v) for v in report.violations]
    assert any("expected 60 main templates, found 59" in m for m in messages)
    assert any("expected 10 pilot templates, found 9" in m for m in messages)
    assert any("bank.logistics" in m and "missing logistics-02" in m for m in messages)
    assert len(messages) == 3


def test_composition_is_skipped_for_named_files_unless_asked(tmp_path):
    _write_copy(tmp_path, "hiring-01", "hiring", pilot=False, tag="a")
    assert verify_paths([tmp_path]).ok
    assert not verify_paths([tmp_path], composition=True).ok


def test_duplicate_text_across_files_names_both(tmp_path):
    _write_copy(tmp_path, "hiring-01", "hiring", pilot=False, tag="same")
    _write_copy(tmp_path, "hiring-02", "hiring", pilot=False, tag="same")
    violations = verify_paths([tmp_path]).violations
    assert len(violations) == 12
    first = violations[0]
    assert first.file.endswith("hiring-02.yaml") and first.where == "s1"
    assert "same text as" in first.message and "hiring-01.yaml s1" in first.message


def test_duplicate_template_id_across_files(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    _write_copy(tmp_path / "a", "hiring-01", "hiring", pilot=False, tag="a")
    _write_copy(tmp_path / "b", "hiring-01", "hiring", pilot=False, tag="b")
    violations = verify_paths([tmp_path / "a", tmp_path / "b"]).violations
    assert [v.where for v in violations] == ["id"]
    assert "template id 'hiring-01' is also used by" in violations[0].message


# ------------------------------------------------------------------ reported, not failed


def test_report_tables_count_lengths_by_role_and_correct_positions():
    report = verify_paths([VALID])
    lengths = length_by_role(report).set_index("role")
    assert lengths.loc[["support", "decoy", "irrelevant"], "n"].tolist() == [10, 6, 8]
    assert lengths["words_min"].min() >= 14 and lengths["words_max"].max() <= 28
    positions = correct_positions(report).set_index("position")
    # hiring-01 has the key first (main), housing-p1 last (pilot).
    assert positions.loc[0, "main"] == 1 and positions.loc[2, "pilot"] == 1
    assert positions[["main", "pilot"]].to_numpy().sum() == 2


def test_suspect_words_are_warnings_not_failures(tmp_path):
    text = (
        (VALID / "hiring-01.yaml")
        .read_text()
        .replace("rarely held one-to-one sessions", "rarely offered support in one-to-one sessions")
    )
    (tmp_path / "hiring-01.yaml").write_text(text)
    report = verify_paths([tmp_path])
    assert report.ok
    assert [w.where for w in report.warnings] == ["s5"]


# ------------------------------------------------------------------ bank v2 wording and names


def test_a_risk_word_in_an_irrelevant_fact_is_a_warning(tmp_path):
    text = (
        (VALID / "hiring-01.yaml").read_text().replace("sang three songs", "sang late, three songs")
    )
    (tmp_path / "hiring-01.yaml").write_text(text)
    report = verify_paths([tmp_path])
    assert report.ok
    assert [(w.where, "'late'" in w.message) for w in report.warnings] == [("i3.text", True)]


def test_weak_wording_is_allowed_in_irrelevant_facts_only():
    template = load_template(VALID / "hiring-01.yaml")
    facts = list(template.facts)
    for index in (2, 9):  # s3 (support) and i2 (irrelevant)
        old = facts[index]
        facts[index] = old.model_copy(update={"text": old.text[:-1] + " as she says."})
    found = verify_template(template.model_copy(update={"facts": tuple(facts)}), "f")
    assert [v.where for v in found] == ["s3.text"]


def test_an_option_name_inside_the_templates_own_option_is_not_foreign(tmp_path):
    housing = (VALID / "housing-p1.yaml").read_text()
    (tmp_path / "housing-p1.yaml").write_text(housing)
    hiring = (VALID / "hiring-01.yaml").read_text()
    # another template whose option "Quarry" is part of housing-p1's own "Quarry Flats"
    hiring = hiring.replace("Chen Wei", "Quarry")
    (tmp_path / "hiring-01.yaml").write_text(hiring)
    violations = verify_paths([tmp_path]).violations
    assert not [v for v in violations if v.file.endswith("housing-p1.yaml")], violations


def test_names_are_nfkc_normalised_so_spellings_that_render_alike_are_one_name():
    text = (VALID / "hiring-01.yaml").read_text()
    odd = text.replace("options: [Ana Ruiz,", "options: [Ana\u00a0Ruiz,")  # no-break space
    odd = odd.replace("correct: Ana Ruiz", "correct: \uff21na Ruiz")  # full-width A
    template, problems = parse_template(odd, "x.yaml")
    assert problems == [] and template is not None
    assert template.options[0] == template.correct == "Ana Ruiz"
    assert verify_template(template, "x.yaml") == []


def test_a_look_alike_name_in_a_fact_text_is_refused():
    text = (VALID / "hiring-01.yaml").read_text()
    # s1 names a second option with a Cyrillic "e", which the name match would not see
    odd = text.replace("forty minutes.", "forty minutes, unlike B\u0435n Okafor.")
    template, problems = parse_template(odd, "x.yaml")
    assert template is None
    assert [p.where for p in problems] == ["s1.text"] and "'Bеn'" in problems[0].message


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("Ana\u00adRuiz", "zero-width character U+00AD"),  # soft hyphen: invisible
        ("Ana Ruiz\u2066", "bidi-control character U+2066"),
        ("Ana\x07Ruiz", "control character U+0007"),
        ("Ana Ruiz\u2062", "invisible format character U+2062"),
        ("Αna Ruiz", "mixes scripts (GREEK, LATIN)"),  # Greek capital alpha
    ],
)
def test_character_rules_name_the_character(text, needle):
    problems = text_problems(text)
    assert problems and needle in problems[0]


@pytest.mark.parametrize(
    "name", ["Zoë Brandt", "Chen Wei", "北京 Office", "Ana Ruiz\n", "São Paulo"]
)
def test_names_in_one_script_pass(name):
    assert text_problems(name) == []
