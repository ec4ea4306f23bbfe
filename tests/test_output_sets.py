"""A table's or figure's files are written as a set: all or none, the sidecar last with the
hashes of the others; a killed write is completed or undone by the next one; stale temporary
files are removed; files respect the umask."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time

import pandas as pd
import pytest

from deliberation.io.atomic import atomic_write_text, recover_folder
from deliberation.io.processes import HOST_TAG
from deliberation.profiles.profile import load_profile
from deliberation.publish.plots import Figure, save_figure
from deliberation.publish.provenance import check_output_set
from deliberation.publish.tables import table_dir, write_table

OLD = pd.DataFrame({"policy": ["R1"], "accuracy": [0.5]})
NEW = pd.DataFrame({"policy": ["R1", "B4"], "accuracy": [0.75, 0.25]})

# Writes NEW over the table and is killed (os._exit, no clean-up runs) at the n-th rename.
KILLED_WRITER = """
import os, sys
import pandas as pd
from deliberation.profiles.profile import load_profile
from deliberation.publish.tables import write_table
calls = []
real_replace = os.replace
def replace(src, dst):
    calls.append(dst)
    if len(calls) == int(sys.argv[1]):
        os._exit(9)
    real_replace(src, dst)
os.replace = replace
frame = pd.DataFrame({"policy": ["R1", "B4"], "accuracy": [0.75, 0.25]})
write_table(frame, "t", profile=load_profile("smoke"), caption="c", notebook="n")
"""


def _table_files(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def _write(frame, name="t"):
    return write_table(frame, name, profile=load_profile("smoke"), caption="c", notebook="n")


# Renames of one write: the journal, then csv, md, tex, then the sidecar (5 in all).
@pytest.mark.parametrize("killed_at", [1, 2, 3, 4, 5])
def test_a_write_killed_at_any_rename_leaves_a_whole_set_after_the_next_run(killed_at):
    """The probe: a kill during write_table left a new CSV beside the old Markdown, LaTeX and
    sidecar (whose hash no longer matched) and a partial .tmp file."""
    old = _write(OLD)
    folder = old["csv"].parent
    before = _table_files(folder)
    killed = subprocess.run([sys.executable, "-c", KILLED_WRITER, str(killed_at)])
    assert killed.returncode == 9

    recover_folder(folder)  # what the next write into the folder does first
    after = _table_files(folder)
    assert not [name for name in after if name.startswith(".")], "temporary files left"
    assert check_output_set(old["provenance"]) == []
    expected = OLD if killed_at == 1 else NEW  # killed before or after the set was committed
    assert pd.read_csv(old["csv"]).drop(columns="source").equals(expected)
    if killed_at == 1:
        assert after == before
    else:  # the same bytes an uninterrupted write gives
        assert after == _table_files(_write(NEW)["csv"].parent)


def test_a_later_write_completes_a_killed_one_before_writing(tmp_path):
    _write(OLD)
    subprocess.run([sys.executable, "-c", KILLED_WRITER, "3"], check=False)
    files = _write(NEW, name="other")  # any write into the folder recovers it first
    folder = files["csv"].parent
    assert check_output_set(folder / "t.provenance.json") == []
    assert check_output_set(files["provenance"]) == []
    assert not [p for p in folder.iterdir() if p.name.startswith(".")]


def test_a_failed_write_leaves_the_old_set_and_no_temporary_file():
    old = _write(OLD)
    before = _table_files(old["csv"].parent)

    class Unprintable(pd.DataFrame):
        def to_latex(self, *args, **kwargs):
            raise RuntimeError("bad cell")

    with pytest.raises(RuntimeError, match="bad cell"):
        _write(Unprintable(NEW))
    assert _table_files(old["csv"].parent) == before


def test_stale_temporary_files_are_removed_and_live_ones_kept():
    folder = table_dir(load_profile("smoke"))
    folder.mkdir(parents=True)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    stale = folder / f".t.csv.{HOST_TAG}-{int(dead.stdout)}-0badc0de.tmp"
    legacy = folder / ".t.csv.k3j4h5g6.tmp"  # an older version's mkstemp name
    live = folder / f".t.csv.{HOST_TAG}-{os.getppid()}-0badc0de.tmp"  # a running writer's
    other_host = folder / f".t.csv.ffffffff-{int(dead.stdout)}-0badc0de.tmp"
    for path in (stale, legacy, live, other_host):
        path.write_text("half a ta")
    day_old = time.time() - 2 * 24 * 3600
    os.utime(legacy, (day_old, day_old))
    _write(OLD)
    assert not stale.exists() and not legacy.exists()
    assert live.exists() and other_host.exists()  # not ours to judge yet


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_written_files_respect_the_umask(umask, mode, tmp_path):
    """The probe: every output was 0600 (mkstemp), unreadable to co-workers."""
    previous = os.umask(umask)
    try:
        table = _write(OLD)
        fig = Figure()
        ax = fig.subplots()
        ax.plot([0, 1], [0, 1])
        figure = save_figure(fig, "f", profile=load_profile("smoke"), caption="c", notebook="n")
        single = atomic_write_text(tmp_path / "one.txt", "x")
    finally:
        os.umask(previous)
    for path in [*table.values(), *figure.files.values(), single]:
        assert stat.S_IMODE(path.stat().st_mode) == mode, path


def test_figure_sets_are_whole_and_hashed():
    fig = Figure()
    ax = fig.subplots()
    ax.plot([0, 1], [1, 0])
    files = save_figure(fig, "f", profile=load_profile("smoke"), caption="c", notebook="n").files
    assert check_output_set(files["provenance"]) == []
    record = json.loads(files["provenance"].read_text())
    assert set(record["files"]) == {"f.png", "f.pdf"}
    files["png"].write_bytes(b"tampered")
    assert check_output_set(files["provenance"]) == [f"{files['png']}: differs from the hash in"
                                                     " f.provenance.json"]  # fmt: skip


def test_the_same_set_rebuilt_at_another_commit_leaves_the_committed_sidecar_alone(monkeypatch):
    """A run at a later commit that writes the same bytes does not dirty the checkout (its
    sidecar keeps the commit that made them); a set whose content changes names the new one."""
    import deliberation.publish.provenance as provenance

    monkeypatch.setattr(provenance, "git_state", lambda: ("a" * 40, False))
    sidecar = _write(OLD)["provenance"]
    before = sidecar.read_bytes()
    monkeypatch.setattr(provenance, "git_state", lambda: ("b" * 40, True))
    _write(OLD)
    assert sidecar.read_bytes() == before
    _write(NEW)
    record = json.loads(sidecar.read_text())
    assert record["git_commit"] == "b" * 40 and record["git_dirty"] is True
    assert check_output_set(sidecar) == []
