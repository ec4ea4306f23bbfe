"""How a replay compares committed tables with rebuilt ones (``paper/replay.py``): byte for
byte, sidecars field by field with only the checkout fields allowed to differ; and a profile
without published answers is said to have none, not passed silently."""

from __future__ import annotations

import json
from pathlib import Path

from deliberation.inference.published import ImportResult
from deliberation.paper.replay import (
    ReplayReport,
    committed_tables,
    compare_tables,
    published_notebooks,
    replay_published,
)


def _sidecar(folder: Path, stem: str, notebook: str, **fields: object) -> None:
    record = {"notebook": notebook, "files": {f"{stem}.csv": "x"}, "git_commit": "a",
              "git_dirty": False, "label": "L", **fields}  # fmt: skip
    (folder / f"{stem}.provenance.json").write_text(json.dumps(record, sort_keys=True))


def _folders(tmp_path: Path) -> tuple[Path, Path]:
    committed, rebuilt = tmp_path / "committed", tmp_path / "rebuilt"
    for folder in (committed, rebuilt):
        folder.mkdir()
        (folder / "same.csv").write_text("a\n1\n")
        _sidecar(folder, "same", "00_smoke")
    (committed / "changed.csv").write_text("a\n1\n")
    (rebuilt / "changed.csv").write_text("a\n2\n")
    _sidecar(committed, "changed", "03_h1")
    _sidecar(rebuilt, "changed", "03_h1", git_commit="b", git_dirty=True)
    _sidecar(committed, "relabelled", "03_h1")
    _sidecar(rebuilt, "relabelled", "03_h1", label="other", git_commit="b")
    (committed / "gone.csv").write_text("a\n")
    (rebuilt / "new.csv").write_text("a\n")
    return committed, rebuilt


def test_tables_are_compared_byte_for_byte_and_sidecars_field_by_field(tmp_path) -> None:
    committed, rebuilt = _folders(tmp_path)
    report = ReplayReport("p", tmp_path / "results.jsonl.gz")
    compare_tables(committed, rebuilt, report, committed_tables(committed))
    assert report.identical == ["same.csv", "same.provenance.json"]
    assert report.checkout_only == {"changed.provenance.json": ["git_commit", "git_dirty"]}
    assert report.different == {
        "changed.csv": "4 bytes committed, 4 rebuilt",
        "relabelled.provenance.json": "fields git_commit, label differ",
    }
    assert report.not_rebuilt == ["gone.csv"] and report.not_committed == ["new.csv"]


def test_a_replay_limited_to_notebooks_compares_only_their_outputs(tmp_path) -> None:
    committed, _ = _folders(tmp_path)
    chosen = committed_tables(committed, {"00_smoke"})
    assert [p.name for p in chosen] == ["same.csv", "same.provenance.json"]


def test_a_failed_comparison_is_not_ok_and_names_each_file(tmp_path) -> None:
    committed, rebuilt = _folders(tmp_path)
    report = ReplayReport("p", tmp_path / "results.jsonl.gz")
    report.imported = ImportResult(tmp_path / "r.jsonl.gz", tmp_path / "c.sqlite", "p", 3, 0)
    compare_tables(committed, rebuilt, report, committed_tables(committed))
    assert not report.ok
    text = "\n".join(report.lines())
    assert "  DIFFERENT changed.csv: 4 bytes committed, 4 rebuilt" in text
    assert "  NOT REBUILT gone.csv" in text and text.endswith("replay: FAILED")


def test_without_published_answers_the_replay_says_so_and_builds_nothing(tmp_path) -> None:
    report = replay_published("smoke", committed_root=tmp_path)
    assert report.ok and report.build is None and not report.published_exists
    assert report.lines() == [
        f"replay: no published results for smoke ({tmp_path}/results/smoke/responses.jsonl.gz)"
    ]


def test_tables_whose_data_is_not_here_are_named_with_make_data_and_exit_data_missing(
    tmp_path, monkeypatch
) -> None:
    """The probe: in a clean clone `make replay` exited 1 with 30 tables "NOT REBUILT" that need
    `make data`, without saying so. A table whose row in figures/README.md needs data that is
    not here is set apart, named with the data and the command, with its own exit code; any
    other table not rebuilt still fails the check."""
    from deliberation import exit_codes
    from deliberation.paper.build import BuildResult
    from deliberation.paper.replay import data_needed

    monkeypatch.setenv("DELIBERATION_DATA_DIR", str(tmp_path / "no-data"))
    monkeypatch.setenv("DELIBERATION_SHARED_DATA", str(tmp_path / "no-shared"))
    needed = data_needed("p", "02_accuracy.csv")
    assert needed == f"{tmp_path}/no-data/hiddenbench/benchmark_all_clean.json"
    assert data_needed("p", "02_accuracy.provenance.json") == data_needed("p", "02_accuracy.csv")
    assert data_needed("p", "03_h1_h3.csv") is None  # made from the templates: needs nothing
    report = ReplayReport("p", tmp_path / "results.jsonl.gz")
    report.imported = ImportResult(tmp_path / "r.jsonl.gz", tmp_path / "c.sqlite", "p", 3, 0)
    report.build = BuildResult("p")
    report.identical = ["03_h1_h3.csv"]
    report.needs_data = {"02_accuracy.csv": data_needed("p", "02_accuracy.csv")}
    assert not report.ok and report.exit_code == exit_codes.DATA_MISSING
    text = "\n".join(report.lines())
    assert "1 committed table files NOT REBUILT: the benchmark data" in text
    assert "hiddenbench/benchmark_all_clean.json" in text and "run `make data`" in text
    assert "  NOT REBUILT (needs make data) 02_accuracy.csv" in text
    assert text.endswith(
        "every table it rebuilt matched; 1 need `make data` before they can be checked"
    )
    report.not_rebuilt = ["03_cells.csv"]  # not a data problem: the check fails
    assert report.exit_code == exit_codes.CHECK_FAILED


def test_a_replay_rebuilds_the_notebooks_the_committed_tables_come_from(tmp_path: Path) -> None:
    """A profile that published notebooks 03 and 00 only is replayed as those, not as every
    notebook (whose calls were never sent); an unreadable sidecar names none."""
    committed, _ = _folders(tmp_path)
    (committed / "broken.provenance.json").write_text("{")
    assert published_notebooks(committed) == ["00_smoke", "03_h1"]
    assert published_notebooks(tmp_path / "absent") == []
