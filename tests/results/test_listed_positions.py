"""Answer positions read from the prompts sent, and the SmolLM2 before-counterbalancing table of
docs/reading-small-samples.md recomputed from the published answers of commit 39563ce."""

from __future__ import annotations

import io
import re
import subprocess

import pandas as pd
import pytest

from deliberation.experiments.memory.prompts import listed_options, task_header
from deliberation.inference.base import ChatRequest
from deliberation.io import paths
from deliberation.results.listed_positions import request_listings, with_listed_positions
from deliberation.stats.position_bias import position_bias_table


def test_listed_options_inverts_the_task_header():
    header = task_header("Pick a venue.", ["size"], ["Cairn Hall", "Abbey Rooms", "- odd name"])
    prompt = header + "\n\nNotes kept from the group's discussion:\n- not an option"
    assert listed_options(prompt) == ("Cairn Hall", "Abbey Rooms", "- odd name")
    assert listed_options("No options here.") == ()


def _entry(key: str, options: list[str]) -> tuple[str, ChatRequest, None]:
    return key, ChatRequest.from_prompt(task_header("Pick.", [], options)), None


def test_positions_follow_each_requests_listing_not_the_rows_order():
    listings = request_listings(
        [_entry("k1", ["A", "B", "C"]), _entry("k2", ["C", "A", "B"]), _entry("k3", ["X", "Y"])]
    )
    rows = pd.DataFrame({"key": ["k1", "k2", "k2", "k3", ""], "answer": ["C", "C", "", "Y", ""]})
    out = with_listed_positions(rows, listings)
    assert out["answer_position"].tolist() == [3, 1, pd.NA, 2, pd.NA]
    assert out["n_options"].tolist() == [3, 3, 3, 2, pd.NA]


def test_an_answer_the_listing_lacks_or_an_unpublished_call_is_an_error():
    listings = request_listings([_entry("k1", ["A", "B"])])
    with pytest.raises(ValueError, match="row 0: answer 'Z'"):
        with_listed_positions(pd.DataFrame({"key": ["k1"], "answer": ["Z"]}), listings)
    with pytest.raises(KeyError, match="row 0: key k9"):
        with_listed_positions(pd.DataFrame({"key": ["k9"], "answer": ["A"]}), listings)


# --- the documented before-counterbalancing numbers ----------------------------------------------

BEFORE = "39563ce"  # the last commit publishing the SmolLM2 run made in template order
PROFILE = "smollm2-135m-llamacpp"
# docs row label -> (published rows table, cluster, selection)
SOURCES = {
    "02 HiddenBench": ("02_hiddenbench_rows", "task", None),
    "03 CrossProfile, main + pilot": ("03_crossprofile_h1_h3_rows", "template", None),
    "03 CrossProfile, main templates": ("03_crossprofile_h1_h3_rows", "template", ("pilot", 0)),
    "03 CrossProfile, pilot templates": ("03_crossprofile_h1_h3_rows", "template", ("pilot", 1)),
    "04 tag ablation": ("04_tag_ablation_rows", "template", None),
    "05 evidence balance": ("05_evidence_balance_rows", "template", None),
    "06 natural discussion, votes": ("06_natural_discussion_rows", "template", ("kind", "vote")),
    "06 natural discussion, decisions": (
        "06_natural_discussion_rows",
        "template",
        ("kind", "decision"),
    ),
}


def _git_show(path: str) -> bytes:
    try:
        return subprocess.run(
            ["git", "show", f"{BEFORE}:{path}"],
            cwd=paths.repo_root(),
            capture_output=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip(f"commit {BEFORE} is not in this repository (a shallow clone?)")


def _documented(which: str = "before") -> pd.DataFrame:
    text = (paths.repo_root() / "docs" / "reading-small-samples.md").read_text(encoding="utf-8")
    block = re.search(rf"position-bias-{which}: begin -->\n(.*?)<!--", text, re.S)
    assert block, f"docs/reading-small-samples.md: no position-bias-{which} table"
    lines = [line.strip().strip("|").split("|") for line in block.group(1).strip().splitlines()]
    header, body = [c.strip() for c in lines[0]], [[c.strip() for c in r] for r in lines[2:]]
    return pd.DataFrame(body, columns=header).set_index("rows (notebook)")


def _check_documented(documented: pd.DataFrame, listings, read_rows) -> None:
    assert set(documented.index) == set(SOURCES)
    for label, (table, cluster, selection) in SOURCES.items():
        rows = read_rows(table)
        if selection is not None:
            rows = rows[rows[selection[0]] == selection[1]]
        # positions from the prompts sent, not from the rows' own columns (a cross-check)
        rows = rows.drop(columns=[c for c in ("answer_position", "n_options") if c in rows])
        computed = position_bias_table(
            with_listed_positions(rows, listings), cluster=cluster, n_resamples=100
        ).iloc[0]
        row = documented.loc[label]
        assert int(row["decisions"]) == computed["decisions"], label
        assert int(row["distinct calls"]) == computed["n_calls"], label
        assert int(row["clusters"]) == computed["n_clusters"], label
        assert float(row["chance %"]) == pytest.approx(computed["chance %"], abs=0.0501), label
        for k, column in enumerate(["1st %", "2nd %", "3rd %", "4th %"], start=1):
            share = computed.get(f"position {k} %")
            if row[column] == "":
                assert share is None or pd.isna(share), (label, column)
            else:
                assert float(row[column]) == pytest.approx(share, abs=0.0501), (label, column)


def _csv(text: str) -> pd.DataFrame:
    return pd.read_csv(io.StringIO(text), keep_default_na=False, na_values=[""])


def test_the_documented_before_table_is_what_the_published_answers_give(tmp_path):
    from deliberation.profiles.profile import load_profile
    from deliberation.results.listed_positions import published_listings

    answers = tmp_path / "responses.jsonl.gz"
    answers.write_bytes(_git_show(f"results/{PROFILE}/responses.jsonl.gz"))
    listings = published_listings(answers, load_profile(PROFILE))
    _check_documented(
        _documented("before"),
        listings,
        lambda table: _csv(_git_show(f"tables/{PROFILE}/{table}.csv").decode("utf-8")),
    )


def test_the_documented_after_table_is_what_the_committed_answers_give():
    """The rerun with counterbalanced options, from the answers and rows committed now."""
    from deliberation.profiles.profile import load_profile
    from deliberation.results.listed_positions import published_listings

    root = paths.repo_root()
    listings = published_listings(
        root / "results" / PROFILE / "responses.jsonl.gz", load_profile(PROFILE)
    )
    tables = root / "tables" / PROFILE
    _check_documented(
        _documented("after"),
        listings,
        lambda table: _csv((tables / f"{table}.csv").read_text(encoding="utf-8")),
    )
