"""The executed notebooks a reader browses without running anything, and their check by nbval.

``make paper PUBLISH=1`` (``deliberation paper P --publish``) copies every notebook the build
ran or found current from ``build/executed/<profile>/`` to ``notebooks/executed/<profile>/``
(:func:`publish_build`, after a build without failure), where they are committed for the published profiles (the sim and
SmolLM2-135M), with their outputs and figures inline. Each copy is made for reading and for
review:

- it opens with the notebook's own title cell (what it shows), then a note saying which profile
  made it (and whether the results are synthetic) and how to run it on another profile
  (:func:`banner`);
- what varies between two runs of the same code is left out: papermill's and Jupyter's timing
  metadata, the input and output paths, the Python version, the random id papermill gives its
  parameters cell;
- it holds no data dump: an output other than an image larger than
  :data:`MAX_TEXT_OUTPUT` bytes, or a notebook larger than :data:`MAX_NOTEBOOK`, stops the
  publication, naming the notebook and cell (:func:`oversized_outputs`); a notebook shows
  summaries and figures, and publishes its rows as ``tables/<profile>/<notebook>_rows.csv``.

:func:`check_executed` (``deliberation nbval P``, ``make nbval``, the notebook lane) re-executes
the committed notebooks of a profile with nbval (``pytest --nbval``) in temporary output, cache
and build folders and compares every output with the committed one, after the sanitizer
(:data:`SANITIZE_FILE`) has replaced what legitimately differs between runs: durations, how
many calls the cache already held, pandas' HTML styles, absolute paths. A notebook whose
committed outputs no longer follow from the code fails, naming the notebook and cell (nbval's
``<notebook>::Cell N``). A profile with published answers (``results/<profile>/``, a real
model) re-runs from them, imported into the temporary cache, and sends nothing; its rebuilt
tables are then compared with the committed ``tables/<profile>/`` byte for byte, as ``deliberation
replay`` does (:func:`deliberation.paper.replay.compare_tables`).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import nbformat

from deliberation.io import paths
from deliberation.io.atomic import atomic_write_text
from deliberation.profiles.profile import Profile, load_profile

if TYPE_CHECKING:  # replay imports the build, which publishes through this module
    from deliberation.paper.replay import ReplayReport

Printer = Callable[[str], None]
PUBLISHED_FOLDER = "executed"  # under the notebooks folder: notebooks/executed/<profile>/
SANITIZE_FILE = Path(__file__).with_name("nbval_sanitize.cfg")
MAX_TEXT_OUTPUT = 64 * 1024  # bytes of one output that is not an image: more is a data dump
MAX_NOTEBOOK = 2 * 1024 * 1024  # bytes of one published notebook, figures included
BANNER_TAG = "executed-banner"  # the cell :func:`banner` adds (replaced, never stacked)
IMAGE_TYPES = ("image/png", "image/jpeg", "image/svg+xml")


class PublishError(ValueError):
    """A notebook that cannot be published as it is (a data dump in an output)."""


def published_dir(profile: str, notebooks: Path | None = None) -> Path:
    """``notebooks/executed/<profile>/`` (``notebooks``: the folder of the source notebooks,
    default the repository's)."""
    from deliberation.paper.manifest import notebooks_dir

    return (notebooks or notebooks_dir()) / PUBLISHED_FOLDER / profile


def published_profiles(root: Path | None = None) -> list[str]:
    """The profiles whose executed notebooks are published under ``root`` (default: the
    repository): a folder of ``notebooks/executed/`` holding notebooks."""
    folder = (root or paths.repo_root()) / "notebooks" / PUBLISHED_FOLDER
    if not folder.is_dir():
        return []
    return sorted(p.name for p in folder.iterdir() if p.is_dir() and any(p.glob("*.ipynb")))


def image_outputs(notebook: nbformat.NotebookNode) -> int:
    """How many outputs of the notebook are images (figures shown inline)."""
    return sum(
        1
        for cell in notebook.cells
        for output in cell.get("outputs", [])
        if any(kind in output.get("data", {}) for kind in IMAGE_TYPES)
    )


def _size(output: dict) -> int:
    return len(json.dumps(output, ensure_ascii=False).encode())


def oversized_outputs(notebook: nbformat.NotebookNode, name: str) -> list[str]:
    """Each output that is no image and larger than :data:`MAX_TEXT_OUTPUT`, and the whole
    notebook when larger than :data:`MAX_NOTEBOOK`, in words."""
    problems = []
    for index, cell in enumerate(notebook.cells):
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if any(kind in data for kind in IMAGE_TYPES):
                continue
            size = _size(output)
            if size > MAX_TEXT_OUTPUT:
                problems.append(
                    f"{name}: cell {index} has an output ({output.get('output_type')}) of"
                    f" {size:,} bytes (more than {MAX_TEXT_OUTPUT:,}: show a summary, publish"
                    " rows as a table)"
                )
    total = len(nbformat.writes(notebook).encode())
    if total > MAX_NOTEBOOK:
        problems.append(f"{name}: {total:,} bytes in all (more than {MAX_NOTEBOOK:,})")
    return problems


def banner(profile: Profile, name: str) -> str:
    """The note under a published notebook's title: which profile made it, where its source is,
    and how to run it on another profile."""
    number = name.split("_", 1)[0]
    made_by = (
        f"**synthetic** results ({profile.label}): the sim mechanism model, not a language model"
        if profile.synthetic
        else f"the answers of {profile.label}"
    )
    return (
        f"> **Executed notebook, outputs included**: profile `{profile.name}`, {made_by}. Written by `make paper PROFILE={profile.name} PUBLISH=1` from"
        f" [`notebooks/{name}`](../../{name}), which holds the code without outputs; CI"
        f" re-executes this copy with nbval and compares every output (`make nbval"
        f" PROFILE={profile.name}`).\n>\n"
        f"> **Run it on another profile** (`params/<profile>.yaml`): `make paper"
        f" PROFILE=<profile> ONLY={number}` runs it headless into"
        f" `build/executed/<profile>/`; `make lab` opens `notebooks/` in JupyterLab, where the"
        f" notebook's `parameters` cell reads `DELIBERATION_PROFILE` (`make lab"
        f" PROFILE=<profile>` sets it)."
    )


def clean_executed(notebook: nbformat.NotebookNode, profile: Profile, name: str) -> None:
    """Make an executed notebook reviewable (see the module docstring), in place."""
    papermill = notebook.metadata.get("papermill", {})
    kept = {"parameters": papermill["parameters"]} if "parameters" in papermill else {}
    notebook.metadata.pop("papermill", None)
    if kept:
        notebook.metadata["papermill"] = kept
    notebook.metadata.get("language_info", {}).pop("version", None)
    for cell in notebook.cells:
        cell.metadata.pop("papermill", None)
        cell.metadata.pop("execution", None)
        if "injected-parameters" in cell.metadata.get("tags", []):
            cell["id"] = "injected-parameters"  # papermill draws a new id every run
    notebook.cells = [c for c in notebook.cells if BANNER_TAG not in c.metadata.get("tags", [])]
    note = nbformat.v4.new_markdown_cell(banner(profile, name))
    note.metadata["tags"] = [BANNER_TAG]
    note["id"] = BANNER_TAG
    first_markdown = next(
        (i for i, c in enumerate(notebook.cells) if c.cell_type == "markdown"), -1
    )
    notebook.cells.insert(first_markdown + 1, note)


def publish_executed(executed: Path, profile: Profile, notebooks: Path | None = None) -> Path:
    """Copy one executed notebook to ``notebooks/executed/<profile>/`` (``notebooks``: the
    source notebooks' folder), cleaned and with its banner (written atomically; unchanged
    content leaves the file alone). Raises :class:`PublishError` for a data dump, writing
    nothing."""
    notebook = nbformat.read(executed, as_version=4)
    problems = oversized_outputs(notebook, executed.name)  # cells numbered as in ``executed``
    if problems:
        raise PublishError("; ".join(problems))
    clean_executed(notebook, profile, executed.name)
    target = published_dir(profile.name, notebooks) / executed.name
    text = nbformat.writes(notebook) + "\n"
    if not target.is_file() or target.read_text(encoding="utf-8") != text:
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(target, text)
    return target


def publish_build(
    profile_arg: str,
    *,
    notebooks: Sequence[str] | None = None,
    folder: Path | None = None,
    out: Printer = print,
) -> list[Path]:
    """After a build without failure (``make paper PUBLISH=1``): publish the executed copy of
    every notebook of the manifest (or of ``notebooks``) from ``build/executed/<profile>/``.
    Raises :class:`PublishError` at the first that cannot be published, naming it."""
    from deliberation.paper.manifest import load_manifest, select

    profile = load_profile(profile_arg)
    executed_dir = paths.build_dir() / "executed" / profile.name
    published = []
    for entry in select(load_manifest(folder), notebooks):
        target = publish_executed(executed_dir / entry.name, profile, folder)
        images = image_outputs(nbformat.read(target, as_version=4))
        root = paths.repo_root()
        shown = target.relative_to(root) if target.is_relative_to(root) else target
        out(f"published: {shown} ({images} figure{'s' if images != 1 else ''} inline)")
        published.append(target)
    return published


@dataclass
class NbvalReport:
    """What :func:`check_executed` found for one profile."""

    profile: str
    folder: Path
    notebooks: list[str] = field(default_factory=list)
    images: dict[str, int] = field(default_factory=dict)  # notebook -> image outputs
    returncode: int | None = None  # pytest's; None: nothing was run
    answers_imported: int | None = None  # published answers replayed (a real model)
    tables: ReplayReport | None = None  # the committed tables compared, when there are some
    seconds: float = 0.0
    output: list[str] = field(default_factory=list)  # pytest's lines

    @property
    def tables_ok(self) -> bool:
        tables = self.tables
        return tables is None or not (tables.different or tables.not_rebuilt)

    @property
    def ok(self) -> bool:
        return bool(self.notebooks) and self.returncode == 0 and self.tables_ok

    def failed_cells(self) -> list[str]:
        """nbval's names of the cells that failed (``notebooks/.../03_x.ipynb::Cell 7``)."""
        return [line.split(" ", 1)[1].split(" - ")[0] for line in self.output
                if line.startswith("FAILED ")]  # fmt: skip

    def lines(self) -> list[str]:
        if not self.notebooks:
            return [f"nbval: no executed notebooks published for {self.profile} ({self.folder})"]
        images = ", ".join(f"{name} {count}" for name, count in self.images.items())
        out = [f"nbval: {len(self.notebooks)} notebooks of {self.profile}; image outputs: {images}"]
        if self.answers_imported is not None:
            out.append(
                f"nbval: {self.answers_imported:,} published answers imported into a fresh"
                " cache; nothing sent"
            )
        failed = self.failed_cells()
        verdict = "ok" if self.returncode == 0 else f"FAILED ({', '.join(failed) or 'see above'})"
        out.append(f"nbval: outputs compared with the committed ones: {verdict}")
        tables = self.tables
        if tables is not None:
            compared = len(tables.identical) + len(tables.checkout_only) + len(tables.different)
            out.append(
                f"nbval: {compared} committed table files compared with the rebuilt ones:"
                f" {len(tables.identical)} identical byte for byte, {len(tables.checkout_only)}"
                " sidecars differing only in the checkout that wrote them (git_commit, git_dirty),"
                f" {len(tables.different)} DIFFERENT"
            )
            out += [f"  DIFFERENT {name}: {why}" for name, why in sorted(tables.different.items())]
            out += [f"  NOT REBUILT {name}" for name in tables.not_rebuilt]
        out.append(f"nbval: {'ok' if self.ok else 'FAILED'} in {self.seconds:.0f} s")
        return out


def nbval_command(notebooks: Sequence[Path], *, extra: Sequence[str] = ()) -> list[str]:
    """``pytest --nbval`` over ``notebooks``, in this Python's environment, with the
    sanitizer; ``-p no:cacheprovider`` writes no ``.pytest_cache`` into the checkout."""
    return [
        sys.executable, "-m", "pytest", "--nbval", "--nbval-current-env",
        f"--nbval-sanitize-with={SANITIZE_FILE}", "-p", "no:cacheprovider", "-q", "-rf",
        *extra, *(str(p) for p in notebooks),
    ]  # fmt: skip


def check_executed(
    profile_arg: str,
    *,
    root: Path | None = None,
    workdir: Path | None = None,
    out: Printer = print,
) -> NbvalReport:
    """Re-execute ``notebooks/executed/<profile>/*.ipynb`` under ``root`` with nbval and
    compare (see the module docstring). ``workdir`` keeps the run's output, cache and build
    folders (default: a temporary folder, removed)."""
    from deliberation.inference.base import NO_SEND_ENV
    from deliberation.inference.call_progress import PROGRESS_FILE_ENV
    from deliberation.inference.published import import_responses, published_path
    from deliberation.paper.replay import (
        ReplayReport,
        committed_tables,
        compare_tables,
        run_folders,
    )
    from deliberation.results.published_tables import check_tables

    started = time.perf_counter()
    profile = load_profile(profile_arg)
    root = Path(root or paths.repo_root())
    report = NbvalReport(profile.name, published_dir(profile.name, root / "notebooks"))
    report.notebooks = sorted(p.name for p in report.folder.glob("*.ipynb"))
    if not report.notebooks:
        return report
    for name in report.notebooks:
        report.images[name] = image_outputs(nbformat.read(report.folder / name, as_version=4))
    published = published_path(profile.name, root)
    committed = root / "tables" / profile.name
    files = committed_tables(committed) if published.is_file() else []
    check_tables(files)  # a damaged committed table is refused before any work
    with contextlib.ExitStack() as stack:
        if workdir is None:
            workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="nbval-")))
        stack.enter_context(run_folders(workdir))
        env = dict(os.environ)  # with the folders: the kernels inherit them
        # Headless, as under make paper: no progress bars in outputs (a bar appears only when
        # calls are sent, which depends on the cache); calls are counted into a file instead.
        env[PROGRESS_FILE_ENV] = str(workdir / "progress.json")
        if published.is_file():
            report.answers_imported = import_responses(published, profile).added
            env[NO_SEND_ENV] = "1"  # a call the published answers miss fails, never reaches a model
        command = nbval_command([report.folder / name for name in report.notebooks])
        process = subprocess.Popen(
            command, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True,
        )  # fmt: skip
        assert process.stdout is not None
        for line in process.stdout:
            report.output.append(line.rstrip("\n"))
            out(line.rstrip("\n"))
        report.returncode = process.wait()
        if files:
            tables = ReplayReport(profile.name, published)
            rebuilt = paths.output_root() / "tables" / profile.name
            compare_tables(committed, rebuilt, tables, files)
            report.tables = tables
    report.seconds = time.perf_counter() - started
    return report
