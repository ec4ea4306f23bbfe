"""Provenance is honest about edits: git_dirty sees notebooks/ and untracked files too."""

from __future__ import annotations

import subprocess

import pytest

from deliberation.publish.provenance import git_state


def _git(root, *args):
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


@pytest.fixture
def checkout(tmp_path, monkeypatch):
    """A committed checkout with the project's folders; DELIBERATION_ROOT points at it."""
    for folder in ("lib", "params", "templates", "notebooks"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "kept.txt").write_text("v1\n")
    (tmp_path / ".gitignore").write_text("*.pyc\n.ipynb_checkpoints/\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    monkeypatch.setenv("DELIBERATION_ROOT", str(tmp_path))
    return tmp_path


def test_clean_checkout_is_not_dirty(checkout):
    commit, dirty = git_state()
    assert len(commit) == 40 and dirty is False


@pytest.mark.parametrize(
    "edit",
    [
        "notebooks/kept.txt",  # the probe: an edited notebook was reported clean
        "notebooks/02_new.ipynb",  # the probe: an untracked notebook was reported clean
        "lib/new_module.py",  # untracked code
        "lib/kept.txt",
        "params/kept.txt",
        "templates/new/prompt.txt",  # untracked file in an untracked folder
    ],
)
def test_any_edit_to_a_source_folder_makes_the_checkout_dirty(checkout, edit):
    target = checkout / edit
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("edited\n")
    assert git_state()[1] is True


def test_ignored_files_and_outputs_do_not_make_the_checkout_dirty(checkout):
    (checkout / "lib" / "x.pyc").write_bytes(b"\0")
    (checkout / "notebooks" / ".ipynb_checkpoints").mkdir()
    (checkout / "notebooks" / ".ipynb_checkpoints" / "a.ipynb").write_text("{}")
    (checkout / "tables").mkdir()
    (checkout / "tables" / "t.csv").write_text("a\n1\n")
    assert git_state()[1] is False
