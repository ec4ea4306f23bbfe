"""The ``deliberation crossprofile verify`` (and its old alias ``deliberation verify``) and
``deliberation tasks crossprofile`` commands, end to end."""

from __future__ import annotations

import json
from pathlib import Path

from deliberation.cli import main

FIXTURES = Path(__file__).parents[2] / "fixtures" / "crossprofile"


def test_verify_passes_valid_files_with_exit_zero(capsys):
    assert main(["crossprofile", "verify", str(FIXTURES / "valid")]) == 0
    out = capsys.readouterr().out
    assert "verified 2 template files" in out and "OK" in out
    assert "fact length by role" in out and "position of the correct option" in out


def test_verify_fails_broken_files_with_exit_one_and_names_them(capsys):
    paths = [str(FIXTURES / "broken" / case) for case in ("score_tie", "missing_field")]
    assert main(["crossprofile", "verify", "--quiet", *paths]) == 1
    out = capsys.readouterr().out
    assert "broken/score_tie/hiring-01.yaml: scores:" in out
    assert "broken/missing_field/hiring-01.yaml: d2.criterion: missing required field" in out
    assert "FAILED: 2 violations in 2 files" in out


def test_verify_with_composition_flags_a_partial_bank(capsys):
    assert (
        main(["crossprofile", "verify", "--quiet", "--composition", str(FIXTURES / "valid")]) == 1
    )
    assert "expected 60 main templates, found 1" in capsys.readouterr().out


def test_verify_an_empty_folder_is_a_usage_error(tmp_path, capsys):
    assert main(["crossprofile", "verify", str(tmp_path)]) == 2
    assert "no template files" in capsys.readouterr().out


def test_tasks_crossprofile_writes_jsonl(tmp_path, capsys):
    out = tmp_path / "tasks.jsonl"
    code = main(
        ["tasks", "crossprofile", "--templates", str(FIXTURES / "valid"), "--out", str(out)]
    )
    assert code == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 16 and sum(r["pilot"] for r in rows) == 8
    assert "wrote 16 tasks (8 main, 8 pilot)" in capsys.readouterr().out

    main_only = tmp_path / "main.jsonl"
    args = ["tasks", "crossprofile", "--templates", str(FIXTURES / "valid"), "--no-pilot"]
    assert main([*args, "--out", str(main_only)]) == 0
    assert len(main_only.read_text().splitlines()) == 8


def test_tasks_crossprofile_refuses_unverified_templates(tmp_path, capsys):
    out = tmp_path / "tasks.jsonl"
    broken = FIXTURES / "broken" / "score_tie"
    assert main(["tasks", "crossprofile", "--templates", str(broken), "--out", str(out)]) == 1
    assert "scores:" in capsys.readouterr().out
    assert not out.exists()


def test_tasks_crossprofile_twice_gives_identical_bytes(tmp_path):
    outs = [tmp_path / "a.jsonl", tmp_path / "b.jsonl"]
    for out in outs:
        args = ["tasks", "crossprofile", "--templates", str(FIXTURES / "valid"), "--seed", "11"]
        assert main([*args, "--out", str(out)]) == 0
    assert outs[0].read_bytes() == outs[1].read_bytes()
