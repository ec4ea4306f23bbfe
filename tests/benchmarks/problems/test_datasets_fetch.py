"""`make data`: pinned downloads with sha256 checks, atomic writes, and the `deliberation data` CLI.

No network: URLs are served from the shared copies by a stand-in opener, or are file:// URLs.
"""

from __future__ import annotations

import hashlib
import io
from dataclasses import replace
from pathlib import Path

import pytest

from deliberation.benchmarks.problems import load
from deliberation.benchmarks.problems.download import fetch, verify
from deliberation.benchmarks.problems.sources import SOURCES, BenchmarkSource, PinnedFile, source
from deliberation.cli import main
from deliberation.io import fetch as fetch_module
from deliberation.io.fetch import ChecksumMismatch, FetchError, fetch_file
from deliberation.io.paths import shared_data_dir


@pytest.fixture(scope="module")
def shared() -> Path:
    root = shared_data_dir()
    if root is None:
        pytest.skip("../shared/data (public benchmark copies) is absent; fetch tests serve from it")
    return root


class SharedCopyOpener:
    """Answers each pinned raw-GitHub URL with the bytes of the shared copy; counts calls."""

    def __init__(self, shared: Path, corrupt: set[str] = frozenset()) -> None:
        self.by_url = {
            entry.url(pinned): shared / entry.name / pinned.local_path
            for entry in SOURCES
            for pinned in entry.files
        }
        self.corrupt = corrupt
        self.calls: list[str] = []

    def __call__(self, url: str) -> io.BytesIO:
        self.calls.append(url)
        if url not in self.by_url:
            raise OSError(f"404 for {url}")
        data = self.by_url[url].read_bytes()
        if any(url.endswith(suffix) for suffix in self.corrupt):
            data = data[:-10] + b"0123456789"
        return io.BytesIO(data)


def leftovers(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.name.startswith(".") or p.suffix in (".tmp", ".part")]


def test_every_pin_matches_the_shared_copy_and_is_a_raw_url_at_a_full_commit(shared):
    for entry in SOURCES:
        assert len(entry.commit) == 40 and entry.licence
        for pinned in entry.files:
            path = shared / entry.name / pinned.local_path
            assert hashlib.sha256(path.read_bytes()).hexdigest() == pinned.sha256, path
            assert path.stat().st_size == pinned.size, path
            assert entry.url(pinned) == (
                f"https://raw.githubusercontent.com/{entry.repository}/{entry.commit}/{pinned.upstream_path}"
            )


def test_fetch_reproduces_the_shared_layout_so_load_works(shared, tmp_path):
    opener = SharedCopyOpener(shared)
    results = fetch(tmp_path, ["scibench", "mascqa"], opener=opener)
    assert {r.status for r in results} == {"downloaded"}
    assert len(results) == len(source("scibench").files) + len(source("mascqa").files)
    assert len(load("scibench", tmp_path / "scibench")) == 580
    assert len(load("mascqa", tmp_path / "mascqa")) == 649
    assert leftovers(tmp_path) == []


def test_files_already_present_with_the_right_hash_are_not_downloaded_again(shared, tmp_path):
    fetch(tmp_path, ["jeebench"], opener=SharedCopyOpener(shared))
    again = SharedCopyOpener(shared)
    results = fetch(tmp_path, ["jeebench"], opener=again)
    assert [r.status for r in results] == ["present"] and again.calls == []


def test_a_checksum_mismatch_names_the_file_and_leaves_nothing_behind(shared, tmp_path):
    opener = SharedCopyOpener(shared, corrupt={"quan.json"})
    with pytest.raises(FetchError) as caught:
        fetch(tmp_path, ["scibench"], opener=opener)
    assert list(caught.value.failures) == [str(tmp_path / "scibench" / "quan.json")]
    assert "quan.json" in str(caught.value) and "does not match the pinned" in str(caught.value)
    assert not (tmp_path / "scibench" / "quan.json").exists()
    assert (tmp_path / "scibench" / "stat.json").is_file()  # the other files were still fetched
    assert leftovers(tmp_path) == []


def test_a_bad_download_does_not_replace_a_file_already_there(shared, tmp_path):
    pinned = source("jeebench").files[0]
    target = tmp_path / "dataset.json"
    target.write_bytes(b"an older local edit")
    corrupt = io.BytesIO(b"not the pinned bytes")
    with pytest.raises(ChecksumMismatch, match="dataset.json"):
        fetch_file(
            "https://example.invalid/dataset.json", pinned, target, opener=lambda url: corrupt
        )
    assert target.read_bytes() == b"an older local edit"
    assert leftovers(tmp_path) == []


def test_file_urls_work_with_the_default_opener(shared, tmp_path):
    path = shared / "omnimath" / "omni_math_rule.jsonl"
    pinned = source("omnimath").files[0]
    assert fetch_file(path.as_uri(), pinned, tmp_path / "rule.jsonl") == "downloaded"
    assert (tmp_path / "rule.jsonl").read_bytes() == path.read_bytes()
    wrong = replace(pinned, sha256="0" * 64)
    with pytest.raises(ChecksumMismatch, match="rule2.jsonl"):
        fetch_file(path.as_uri(), wrong, tmp_path / "rule2.jsonl")
    assert not (tmp_path / "rule2.jsonl").exists() and leftovers(tmp_path) == []


def test_a_failed_download_is_reported_with_its_url(tmp_path):
    entry = BenchmarkSource(
        name="tiny", repository="nobody/nothing", commit="0" * 40, licence="none", note="",
        files=(PinnedFile("a.txt", "a.txt", "0" * 64, 1),),
    )  # fmt: skip

    def offline(url: str) -> io.BytesIO:
        raise OSError("network is unreachable")

    with pytest.raises(
        FetchError, match="raw.githubusercontent.com/nobody/nothing/0+/a.txt failed"
    ):
        fetch(tmp_path, opener=offline, sources=[entry])


def test_verify_reports_present_missing_and_mismatched_files(shared, tmp_path):
    fetch(tmp_path, ["jeebench", "omnimath"], opener=SharedCopyOpener(shared))
    (tmp_path / "omnimath" / "omni_math_rule.jsonl").write_text("edited\n", encoding="utf-8")
    statuses = {r.benchmark: r.status for r in verify(tmp_path, ["jeebench", "omnimath", "mascqa"])}
    assert statuses == {"jeebench": "present", "omnimath": "mismatch", "mascqa": "missing"}


def test_cli_data_fetch_and_verify(shared, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(fetch_module, "default_opener", SharedCopyOpener(shared))
    assert main(["data", "fetch", "--dest", str(tmp_path), "--only", "labbench"]) == 0
    assert "17 files" in capsys.readouterr().out
    assert main(["data", "verify", "--root", str(tmp_path), "--only", "labbench"]) == 0
    assert main(["data", "verify", "--root", str(tmp_path), "--only", "jeebench"]) == 1
    assert "missing" in capsys.readouterr().out


def test_cli_data_fetch_fails_with_exit_code_one_on_a_mismatch(
    shared, tmp_path, monkeypatch, capsys
):
    monkeypatch.setattr(
        fetch_module, "default_opener", SharedCopyOpener(shared, corrupt={"dataset.json"})
    )
    assert main(["data", "fetch", "--dest", str(tmp_path), "--only", "jeebench"]) == 1
    assert "dataset.json" in capsys.readouterr().out


def test_cli_data_sources_lists_every_licence(capsys):
    assert main(["data", "sources"]) == 0
    out = capsys.readouterr().out
    for entry in SOURCES:
        assert entry.name in out and entry.licence in out
    assert "Nothing is redistributed" in out


def test_cli_data_check_on_the_shared_copies(shared, capsys):
    assert main(["data", "check", "--root", str(shared), "--only", "jeebench", "labbench"]) == 0
    out = capsys.readouterr().out
    assert "515 items, 0 rendered golds" in out and "741 items, 0 rendered golds" in out
