"""The papers' headline numbers beside ours: the data file is loaded strictly (errors name the
file and the field), each transcribed number is in the sentence it cites, our numbers are read
from the published tables by the mapping (shares converted once), and what a profile has not
made is shown as missing, never filled in."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
import yaml
from helpers.published import publish_table, vouch_for

from deliberation.cli import main
from deliberation.io import paths
from deliberation.paper.outputs import expected_outputs
from deliberation.paper.site import build_report
from deliberation.results.side_by_side import (
    PAPERS_COLUMN,
    README_BEGIN,
    README_END,
    PaperNumbersError,
    compare_with_papers,
    load_paper_numbers,
    results_page,
    side_by_side,
    to_points,
    write_papers_page,
    write_readme_section,
)

SEEDS = paths.repo_root().parent / "shared" / "seeds"

TWO_HEADLINES = """\
papers: {1: "Paper one", 2: "Paper two"}
profile_notes: {alpha: "alpha is a tiny model: near chance."}
headlines:
  - id: h1
    label: "H1 interaction"
    unit: points
    paper: 1
    seed_file: 000_abc.txt
    quote: "H1 is +64.6 [60.3, 69.0]."
    reported:
      - {model: Qwen, value: 64.6, low: 60.3, high: 69.0}
    ours:
      table: 03_h1_h3
      row: {test: H1}
      value: estimate
      low: low
      high: high
      scale: points
  - id: helpful_share
    label: "Helpful share"
    unit: "%"
    paper: 2
    seed_file: 001_abc.txt
    quote: "41.9% for OSS"
    reported:
      - {model: OSS, value: 41.9}
    ours:
      table: 07_helpful_share
      row: {design: loo, benchmark: pooled}
      value: helpful_share
      low: bootstrap_low
      high: bootstrap_high
      scale: share
"""


def _numbers(tmp_path: Path, text: str = TWO_HEADLINES):
    path = tmp_path / "numbers.yaml"
    path.write_text(text)
    return load_paper_numbers(path)


def _table(profile: str, name: str, frame: pd.DataFrame) -> None:
    publish_table(profile, name, frame)


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        (("table: 03_h1_h3", "tabel: 03_h1_h3"), "headlines[h1].ours.tabel", "Extra inputs"),
        (("      scale: share\n", ""), "headlines[helpful_share].ours.scale", "Field required"),
        (("scale: points", "scale: percent"), "headlines[h1].ours.scale", "'points' or 'share'"),
        (("low: 60.3, high: 69.0", "low: 65.0, high: 69.0"), "headlines[h1].reported[0]",
         "outside [low, high]"),
        (("value: 64.6, low: 60.3, high: 69.0", "value: 64.6, low: 60.3"),
         "headlines[h1].reported[0]", "both low and high"),
        (("- {model: OSS, value: 41.9}", "[]"), "headlines[helpful_share]", "not_reported"),
        (("id: helpful_share", "id: h1"), "headlines", "ids repeated: h1"),
        (("paper: 2", "paper: 3"), "headlines[helpful_share].paper", "1 or 2"),
    ],
)  # fmt: skip
def test_bad_input_is_refused_naming_the_file_and_the_field(tmp_path, change, field, message):
    text = TWO_HEADLINES.replace(*change, 1)
    if change[1] == "[]":
        text = text.replace("    reported:\n      []", "    reported: []")
    assert text != TWO_HEADLINES
    with pytest.raises(PaperNumbersError) as error:
        _numbers(tmp_path, text)
    assert str(error.value).startswith(str(tmp_path / "numbers.yaml"))
    assert f"{field}: " in str(error.value) and message in str(error.value)


def test_a_repeated_yaml_key_is_refused_with_its_line(tmp_path):
    text = TWO_HEADLINES.replace("    unit: points\n", "    unit: points\n    unit: points\n", 1)
    with pytest.raises(PaperNumbersError, match=r"numbers\.yaml: line 7, column 5: duplicate key"):
        _numbers(tmp_path, text)


def test_every_shipped_number_maps_to_a_published_table():
    numbers = load_paper_numbers()
    tables = {Path(o.pattern).stem for o in expected_outputs() if o.pattern.startswith("tables/")}
    assert {h.ours.table for h in numbers.headlines} <= tables
    assert len({h.id for h in numbers.headlines}) == len(numbers.headlines) >= 8


@pytest.mark.skipif(not SEEDS.is_dir(), reason="the papers' summaries (../shared/seeds) are absent")
def test_every_shipped_number_is_in_the_sentence_it_cites():
    for headline in load_paper_numbers().headlines:
        seed = " ".join((SEEDS / headline.seed_file).read_text(encoding="utf-8").split())
        quote = " ".join(headline.quote.split())
        for part in quote.split(" ... "):
            assert part.strip("().; ") in seed, (headline.id, part)
        for number in headline.reported:
            shown = {
                f"{abs(x):g}" for x in (number.value, number.low, number.high) if x is not None
            }
            words = set(re.findall(r"\d+(?:\.\d+)?", quote.replace("\u2212", "-")))
            spelled = {w.rstrip("0").rstrip(".") if "." in w else w for w in words}
            assert shown <= spelled, (headline.id, number, shown - spelled)


def test_rows_are_read_by_the_mapping_and_shares_become_points(tmp_path):
    numbers = _numbers(tmp_path)
    # H2 first and H1 with columns in another order: the row is found by its key text
    _table("alpha", "03_h1_h3", pd.DataFrame(
        {"test": ["H2", "H1"], "estimate": [1.5, 12.25], "high": [9.0, 23.0],
         "low": [-6.0, 2.0], "p_raw": [0.7, 0.01]}))  # fmt: skip
    # a row matching one key of two is not the row: only (loo, pooled) is
    _table("alpha", "07_helpful_share", pd.DataFrame(
        {"design": ["single", "loo", "loo"], "benchmark": ["pooled", "omni", "pooled"],
         "helpful_share": [0.9, 0.8, 0.419], "bootstrap_low": [0.5, 0.6, 0.3],
         "bootstrap_high": [1.0, 1.0, 0.525]}))  # fmt: skip
    frame = side_by_side(["alpha"], {"alpha": False}, numbers).set_index("headline")
    assert frame.loc["H1 interaction (points)", "alpha (model)"] == "12.2 [2.0, 23.0]"
    assert frame.loc["Helpful share (%)", "alpha (model)"] == "41.9 [30.0, 52.5]"
    assert frame.loc["H1 interaction (points)", PAPERS_COLUMN] == "Qwen 64.6 [60.3, 69.0]"
    assert frame.loc["Helpful share (%)", PAPERS_COLUMN] == "OSS 41.9"
    assert frame.loc["Helpful share (%)", "our table: row"].endswith("(share x100)")
    assert to_points(0.5, "share") == 50.0 and to_points(0.5, "points") == 0.5


def test_what_a_profile_has_not_made_is_shown_missing(tmp_path):
    numbers = _numbers(tmp_path)
    _table("alpha", "03_h1_h3", pd.DataFrame(
        {"test": ["H1", "H1"], "estimate": [1.0, 2.0], "low": [0, 0], "high": [3, 3]}))  # fmt: skip
    _table("alpha", "07_helpful_share", pd.DataFrame(
        {"design": ["single"], "benchmark": ["pooled"], "helpful_share": [0.5],
         "bootstrap_low": [0.1], "bootstrap_high": [0.9]}))  # fmt: skip
    _table("beta", "03_h1_h3", pd.DataFrame({"test": ["H1"], "estimate": [7.0]}))
    _table("beta", "07_helpful_share", pd.DataFrame(
        {"design": ["loo"], "benchmark": ["pooled"], "helpful_share": [0.4],
         "bootstrap_low": [0.2], "bootstrap_high": [0.6]}))  # fmt: skip
    frame = side_by_side(["alpha", "beta", "gamma"], dict.fromkeys(
        ["alpha", "beta", "gamma"], False), numbers)  # fmt: skip
    assert frame["alpha (model)"].tolist() == ["missing (2 rows match)", "missing (no such row)"]
    assert frame["beta (model)"].tolist() == [
        "missing (no column low, high)",
        "40.0 [20.0, 60.0]",
    ]
    assert frame["gamma (model)"].tolist() == ["missing (no table)"] * 2


def test_synthetic_columns_say_so_and_the_profile_note_follows_the_table(tmp_path):
    numbers = _numbers(tmp_path)
    comparison = compare_with_papers(["sim", "alpha"], {"sim": True, "alpha": False}, numbers)
    assert list(comparison.frame.columns)[3:5] == ["sim (synthetic)", "alpha (model)"]
    text = comparison.markdown()
    assert "sim` backend, a seeded mechanism model" in text and "alpha is a tiny model" in text
    page = write_papers_page(comparison, tmp_path / "page").read_text()
    assert 'class="banner synthetic"' in page and "sim (synthetic)" in page
    alone = compare_with_papers(["alpha"], {"alpha": False}, numbers)
    assert "mechanism model" not in alone.markdown()


def test_the_readme_section_is_replaced_between_its_markers(tmp_path):
    comparison = compare_with_papers(["alpha"], {"alpha": False}, _numbers(tmp_path))
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\nintro\n\n{README_BEGIN}\nold table\n{README_END}\n\n## next\n")
    write_readme_section(comparison, readme)
    text = readme.read_text()
    assert "old table" not in text and "| H1 interaction (points)" in text
    assert text.startswith("# x\n\nintro\n\n") and text.endswith(f"{README_END}\n\n## next\n")
    assert "deliberation compare --profile alpha --readme" in text
    readme.write_text("# no markers\n")
    with pytest.raises(ValueError, match="needs the markers"):
        write_readme_section(comparison, readme)


def test_compare_papers_on_the_command_line(tmp_path, capsys):
    _table("smoke", "03_h1_h3", pd.DataFrame(
        {"test": ["H1"], "estimate": [5.0], "low": [-1.0], "high": [11.0]}))  # fmt: skip
    out = tmp_path / "page"
    # The headline view is the default (--papers is kept for older scripts and changes nothing).
    assert main(["compare", "--profile", "sim", "smoke", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "| sim (synthetic)" in printed and "smoke (synthetic)" in printed
    assert "5.0 [-1.0, 11.0]" in printed and "missing (no table)" in printed
    assert (out / "index.html").is_file()
    assert main(["compare", "--papers", "sim", "smoke", "--out", str(out)]) == 0
    assert capsys.readouterr().out.splitlines()[0] == printed.splitlines()[0]
    assert len(printed.splitlines()) < 60  # one row per headline, then the notes
    assert main(["compare", "--full", "--readme", "sim"]) == 2  # --readme writes headlines
    assert main(["compare", "sim", "--tables", "03_h1_h3"]) == 2  # --tables needs --full


def test_the_report_has_the_papers_page_beside_the_sim_and_its_profile():
    _table("smoke", "03_h1_h3", pd.DataFrame(
        {"test": ["H1"], "estimate": [5.0], "low": [-1.0], "high": [11.0]}))  # fmt: skip
    index = build_report(
        "smoke", power=False
    )  # the power page: tests/paper/test_paper_power_page.py
    assert 'href="papers.html"' in index.read_text()
    page = (index.parent / "papers.html").read_text()
    assert "sim (synthetic)" in page and "smoke (synthetic)" in page
    assert "5.0 [-1.0, 11.0]" in page and 'class="banner synthetic"' in page


def test_a_caveat_of_the_mapping_is_footnoted_beside_its_row(tmp_path):
    text = TWO_HEADLINES.replace(
        '    quote: "41.9% for OSS"\n',
        '    quote: "41.9% for OSS"\n    note: "the model is unnamed"\n',
    )
    comparison = compare_with_papers(["alpha"], {"alpha": False}, _numbers(tmp_path, text))
    assert comparison.frame["headline"].tolist() == [
        "H1 interaction (points)",
        "Helpful share (%) [1]",
    ]
    assert "[1] Helpful share: the model is unnamed" in comparison.notes


def test_a_table_written_without_any_column_reads_as_missing_not_an_error(tmp_path, monkeypatch):
    from deliberation.results.side_by_side import OurNumber, read_our_number

    monkeypatch.setenv("DELIBERATION_OUTPUT_ROOT", str(tmp_path))
    (tmp_path / "tables" / "p").mkdir(parents=True)
    (tmp_path / "tables" / "p" / "t.csv").write_text("\n")
    vouch_for(tmp_path / "tables" / "p" / "t.csv")
    where = OurNumber(table="t", row={"arm": "x"}, value="v", low="l", high="h", scale="points")
    assert read_our_number("p", where).text() == "missing (empty table)"


def test_the_default_page_holds_the_markers_once_and_the_readme_links_it():
    """`compare --papers ... --readme` rewrites docs/results.md (the README links there): the
    markers must be there exactly once, and nowhere in the README any more."""
    page = results_page().read_text(encoding="utf-8")
    assert page.count(README_BEGIN) == 1 and page.count(README_END) == 1
    assert page.index(README_BEGIN) < page.index(README_END)
    readme = (results_page().parents[1] / "README.md").read_text(encoding="utf-8")
    assert README_BEGIN not in readme and "(docs/results.md)" in readme


@pytest.mark.skipif(not SEEDS.is_dir(), reason="the papers' summaries (../shared/seeds) are absent")
def test_each_paper_is_named_by_its_full_title_as_its_summary_gives_it():
    """Outputs name the papers by title (never by a summary's file name), and CITATION.cff
    cites both under the same titles."""
    numbers = load_paper_numbers()
    citation = (paths.repo_root() / "CITATION.cff").read_text(encoding="utf-8")
    record = yaml.safe_load(citation)  # CFF 1.2.0's required keys, and the two references
    assert {"cff-version", "message", "title", "authors"} <= set(record)
    assert [r["title"] for r in record["references"]] == list(numbers.papers.values())
    for paper, title in numbers.papers.items():
        files = {h.seed_file for h in numbers.headlines if h.paper == paper}
        for name in files:
            text = (SEEDS / name).read_text(encoding="utf-8")
            assert title in " ".join(text.split()[:40]), (paper, title)
        assert f'title: "{title}"' in citation
        assert "seed" not in title and ".txt" not in title
