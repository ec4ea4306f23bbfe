"""Published tables are checked against their sidecars and their own columns before compare, the
report and replay read them: a damaged one is refused, naming it (exit 2), never shown as "-"."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from helpers.published import vouch_for

from deliberation import exit_codes
from deliberation.cli import main
from deliberation.io import paths
from deliberation.profiles.profile import load_profile
from deliberation.publish.tables import write_table
from deliberation.results.published_tables import DamagedTableError, read_published_table


def _written(frame: pd.DataFrame, name: str = "03_accuracy_by_policy"):
    """The table as the table writer leaves it (CSV, Markdown, LaTeX, sidecar with hashes)."""
    files = write_table(frame, name, profile=load_profile("smoke"), caption="c", notebook="03_x")
    return files["csv"]


def _accuracy(**changes) -> pd.DataFrame:
    frame = pd.DataFrame(
        {"policy": ["R1", "B4"], "accuracy": [64.0, 50.5], "low": [60.1, 45.0],
         "high": [68.2, 55.9], "n_clusters": [10, 10], "n_rows": [480, 480]}
    )  # fmt: skip
    for column, values in changes.items():
        frame[column] = values
    return frame


def test_a_table_as_written_is_read_with_a_withheld_interval_explained():
    from deliberation.stats.small_samples import withhold_inference

    # B4 rests on 2 clusters: the analysis withholds its interval, the writer writes it so
    csv = _written(withhold_inference(_accuracy(n_clusters=[10, 2])))
    frame = read_published_table(csv)
    assert frame["low"].tolist() == ["60.1", ""] and frame["interval"].iloc[1].startswith("n = 2")


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"accuracy": [64.0, np.nan]}, "line 3, column 'accuracy': blank where a number is required"),
        ({"low": [60.1, np.nan], "high": [68.2, np.nan]},
         "line 3: columns 'low' and 'high' blank, and no 'interval' note"),
        ({"low": [np.nan, 45.0]}, "line 2, column 'low': blank, but its other bound is not"),
        ({"accuracy": ["64.0", "about half"]}, "line 3, column 'accuracy': 'about half' is not a number"),
        ({"n_rows": [480, np.inf]}, "line 3, column 'n_rows': 'inf' is not a number"),
    ],
    ids=["nan-accuracy", "blank-interval", "half-interval", "text-accuracy", "inf-count"],
)  # fmt: skip
def test_a_table_written_with_a_number_missing_is_refused(changes, problem):
    csv = _written(_accuracy(**changes))  # hashes agree: the content itself is damaged
    with pytest.raises(DamagedTableError, match=rf"^{csv}: {problem}"):
        read_published_table(csv)


def test_n_calls_may_be_blank_where_rows_name_no_call_but_must_parse_where_given():
    assert not read_published_table(_written(_accuracy(n_calls=[480, np.nan]))).empty
    csv = _written(_accuracy(n_calls=["480", "many"]))
    with pytest.raises(DamagedTableError, match="column 'n_calls': 'many' is not a number"):
        read_published_table(csv)


def test_a_dropped_column_is_refused_even_when_the_sidecar_was_rewritten_to_match():
    csv = _written(_accuracy())
    pd.read_csv(csv).drop(columns=["high"]).to_csv(csv, index=False)
    with pytest.raises(DamagedTableError, match="bytes differ from the sha256 in"):
        read_published_table(csv)
    vouch_for(csv)
    with pytest.raises(DamagedTableError, match="column 'low' without 'high'"):
        read_published_table(csv)


def test_an_edited_byte_or_a_missing_sidecar_is_refused():
    csv = _written(_accuracy())
    data = bytearray(csv.read_bytes())
    data[data.index(b"R1,6") + 3] = ord("9")  # 64 -> 94: still a valid table
    csv.write_bytes(bytes(data))
    with pytest.raises(DamagedTableError, match=r"03_accuracy_by_policy.provenance.json \(edited"):
        read_published_table(csv)
    csv.with_name("03_accuracy_by_policy.provenance.json").unlink()
    with pytest.raises(DamagedTableError, match="no provenance sidecar"):
        read_published_table(csv)


def test_compare_refuses_a_damaged_table_naming_it_with_exit_2(capsys, tmp_path):
    csv = _written(_accuracy(accuracy=[64.0, np.nan]))
    code = main(["compare", "smoke", "--full", "--tables", "03_accuracy_by_policy", "--out",
                 str(tmp_path)])  # fmt: skip
    assert code == exit_codes.BAD_INPUT
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{csv}: line 3, column 'accuracy'" in err


def test_the_papers_page_and_the_report_refuse_a_damaged_table(tmp_path):
    from deliberation.paper.site import build_report
    from deliberation.results.side_by_side import OurNumber, read_our_number

    csv = _written(_accuracy(), name="03_h1_h3")
    csv.write_text(csv.read_text().replace("R1,64", "R1,nan"))
    where = OurNumber(table="03_h1_h3", row={"policy": "R1"}, value="accuracy", low="low",
                      high="high", scale="points")  # fmt: skip
    with pytest.raises(DamagedTableError, match=f"{csv}: its bytes differ"):
        read_our_number("smoke", where)
    with pytest.raises(DamagedTableError, match=f"{csv}: its bytes differ"):
        build_report("smoke", out=tmp_path / "site")
    assert not (tmp_path / "site").exists()


def test_replay_refuses_a_damaged_committed_table_before_any_work(tmp_path):
    from deliberation.paper.replay import replay_published

    csv = _written(_accuracy())
    published = paths.output_root() / "results" / "smoke" / "responses.jsonl.gz"
    published.parent.mkdir(parents=True)
    published.write_bytes(b"not read: the tables are checked first")
    pd.read_csv(csv).drop(columns=["low"]).to_csv(csv, index=False)
    with pytest.raises(DamagedTableError, match=f"{csv}: its bytes differ"):
        replay_published("smoke")


def test_the_report_refuses_an_edited_markdown_copy_of_a_table(tmp_path):
    from deliberation.paper.site import build_report

    csv = _written(_accuracy())
    markdown = csv.with_suffix(".md")
    markdown.write_text(markdown.read_text().replace("64", "94"))
    with pytest.raises(DamagedTableError, match=f"{markdown}: differs from the hash in"):
        build_report("smoke", out=tmp_path / "site")
