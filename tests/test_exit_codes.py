"""One exit code per outcome, each ending a command with one line and no traceback."""

from __future__ import annotations

import pytest

from deliberation import cli, exit_codes, inference_commands
from deliberation.inference.cache import CacheWriteError
from deliberation.inference.openai_api import (
    ModelMismatchError,
    PreflightError,
    ServerUnreachableError,
)


def test_every_code_is_distinct_and_described() -> None:
    codes = [v for k, v in vars(exit_codes).items() if k.isupper() and isinstance(v, int)]
    assert len(codes) == len(set(codes)) == len(exit_codes.EXIT_CODES)
    assert all(exit_codes.EXIT_CODES[code] for code in codes)


OUTCOMES = [
    (ServerUnreachableError("no server answers at http://127.0.0.1:9/v1"), 4),
    (PreflightError("HTTP 400: response_format is not supported"), 5),
    (ModelMismatchError("the server lists ['a'], not the profile's `model: b`"), 6),
    (CacheWriteError(__import__("pathlib").Path("/full/c.sqlite"), "disk full"), 7),
    (exit_codes.CommandError("calls failed", exit_codes.CALLS_FAILED), 3),
]


@pytest.mark.parametrize(("error", "code"), OUTCOMES, ids=lambda x: type(x).__name__)
def test_an_outcome_ends_the_command_with_its_code_and_one_line(error, code, monkeypatch, capsys):
    def raising(args):
        raise error

    monkeypatch.setattr(inference_commands, "_cache_stats", raising)
    assert cli.main(["cache", "stats"]) == code
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and str(error) in err


def test_ctrl_c_is_one_line_with_the_answers_kept_and_exit_130(monkeypatch, capsys) -> None:
    from deliberation.inference import cache

    def interrupted(args):
        cache.ANSWERS_STORED += 3  # as three answers committed before the interrupt
        raise KeyboardInterrupt

    monkeypatch.setattr(cache, "ANSWERS_STORED", 0)
    monkeypatch.setattr(inference_commands, "_cache_stats", interrupted)
    assert cli.main(["cache", "stats"]) == exit_codes.INTERRUPTED == 130
    err = capsys.readouterr().err
    assert err == (
        "deliberation cache: interrupted: 3 answers kept, rerun the same command to resume\n"
    )


def test_a_bug_keeps_its_traceback(monkeypatch) -> None:
    def buggy(args):
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(inference_commands, "_cache_stats", buggy)
    with pytest.raises(ZeroDivisionError):
        cli.main(["cache", "stats"])


def test_the_readme_table_lists_every_code() -> None:
    from deliberation.io import paths

    readme = (paths.repo_root() / "README.md").read_text(encoding="utf-8")
    for code in exit_codes.EXIT_CODES:
        assert f"\n| {code} | " in readme, f"README's exit-code table lacks {code}"


def _writes_a_large_table(target):
    def command(args):
        from deliberation.io.atomic import atomic_write_text

        atomic_write_text(target, "accuracy\n" + "0.5\n" * 200_000)  # 800 KB
        return 0

    return command


def test_an_output_on_a_full_disk_is_one_line_and_exit_7(tiny_disk, monkeypatch, capsys):
    target = tiny_disk / "tables" / "rows.csv"
    monkeypatch.setattr(inference_commands, "_cache_stats", _writes_a_large_table(target))
    assert cli.main(["cache", "stats"]) == exit_codes.OUTPUT_UNWRITABLE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"cannot write {target}: its disk is full (" in err and "MiB free on its disk" in err
    assert list(target.parent.iterdir()) == []  # nothing half-written


def test_an_output_in_a_read_only_place_is_one_line_and_exit_7(monkeypatch, capsys, tmp_path):
    import errno
    import os

    def read_only(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(os, "replace", read_only)
    target = tmp_path / "rows.csv"
    monkeypatch.setattr(inference_commands, "_cache_stats", _writes_a_large_table(target))
    assert cli.main(["cache", "stats"]) == exit_codes.OUTPUT_UNWRITABLE
    err = capsys.readouterr().err
    assert err == f"deliberation cache: cannot write {target}: Read-only file system\n"
