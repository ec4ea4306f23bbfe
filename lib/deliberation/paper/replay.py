"""``deliberation replay PROFILE``: rebuild a profile's tables from its published answers.

It proves that the committed ``tables/<profile>/`` follow from
``results/<profile>/responses.jsonl.gz`` and this code, on any machine, without the model: the
answers go into a fresh cache, the paper is built as a *replay* (sending is forbidden, so a
call the answers do not cover fails loudly), and every committed table is compared byte for
byte (a sidecar field by field, its ``git_commit`` and ``git_dirty`` excepted). Steps and exit
codes: docs/real-model.md and docs/commands.md.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from deliberation import exit_codes
from deliberation.inference.published import ImportResult, import_responses, published_path
from deliberation.io import paths
from deliberation.paper.build import BuildResult, build_paper
from deliberation.paper.outputs import expected_outputs
from deliberation.profiles.profile import load_profile
from deliberation.results.published_tables import check_tables

Printer = Callable[[str], None]
# Sidecar fields that name the checkout that wrote a file, not what the file says.
CHECKOUT_FIELDS = frozenset({"git_commit", "git_dirty"})
_FOLDER_ENV = ("DELIBERATION_CACHE_DIR", "DELIBERATION_OUTPUT_ROOT", "DELIBERATION_BUILD_DIR")


@dataclass
class ReplayReport:
    profile: str
    published: Path
    imported: ImportResult | None = None
    build: BuildResult | None = None
    identical: list[str] = field(default_factory=list)  # files equal byte for byte
    checkout_only: dict[str, list[str]] = field(default_factory=dict)  # sidecar -> fields
    different: dict[str, str] = field(default_factory=dict)  # file -> how it differs
    not_rebuilt: list[str] = field(default_factory=list)  # committed, not made by the replay
    # committed, not made because the data they need is not here (file -> the data it needs)
    needs_data: dict[str, str] = field(default_factory=dict)
    not_committed: list[str] = field(default_factory=list)  # made by the replay only

    @property
    def published_exists(self) -> bool:
        return self.imported is not None

    @property
    def ok(self) -> bool:
        """True without published results (nothing to check) or when every table matched."""
        if not self.published_exists:
            return True
        built = self.build is not None and self.build.ok
        return built and not self.different and not self.not_rebuilt and not self.needs_data

    @property
    def exit_code(self) -> int:
        """OK; :data:`~deliberation.exit_codes.DATA_MISSING` when the only tables not checked
        need benchmark data that is not here; else
        :data:`~deliberation.exit_codes.CHECK_FAILED`."""
        if self.ok:
            return exit_codes.OK
        only_data = self.build is not None and self.build.ok and not self.different
        if only_data and not self.not_rebuilt:
            return exit_codes.DATA_MISSING
        return exit_codes.CHECK_FAILED

    def lines(self) -> list[str]:
        if not self.published_exists:
            return [f"replay: no published results for {self.profile} ({self.published})"]
        imported = self.imported
        assert imported is not None
        out = [
            f"replay: {imported.added:,} published answers of {self.profile} imported from"
            f" {self.published} into a fresh cache; nothing sent"
        ]
        if self.build is not None and not self.build.ok:
            out.append(f"replay: the build FAILED: {self.build.failed or 'outputs missing'}")
        compared = len(self.identical) + len(self.checkout_only) + len(self.different)
        out.append(
            f"replay: {compared} committed table files compared: {len(self.identical)} identical"
            f" byte for byte, {len(self.checkout_only)} sidecars differing only in"
            f" {', '.join(sorted(CHECKOUT_FIELDS))} (the checkout that wrote them),"
            f" {len(self.different)} DIFFERENT"
        )
        out += [f"  DIFFERENT {name}: {why}" for name, why in sorted(self.different.items())]
        out += [f"  NOT REBUILT {name}" for name in self.not_rebuilt]
        if self.needs_data:
            data = ", ".join(sorted(set(self.needs_data.values())))
            out.append(
                f"replay: {len(self.needs_data)} committed table files NOT REBUILT: the benchmark"
                f" data their notebooks read is not here ({data}); run `make data` (downloads"
                f" it, sha256-checked), then `make replay PROFILE={self.profile}` again"
            )
            out += [f"  NOT REBUILT (needs make data) {name}" for name in sorted(self.needs_data)]
        if self.not_committed:
            out.append(f"replay: {len(self.not_committed)} tables made but not committed:")
            out += [f"  {name}" for name in self.not_committed]
        if self.exit_code == exit_codes.DATA_MISSING:
            out.append(
                f"replay: every table it rebuilt matched; {len(self.needs_data)} need `make data`"
                " before they can be checked"
            )
        else:
            out.append(f"replay: {'ok' if self.ok else 'FAILED'}")
        return out


@contextlib.contextmanager
def run_folders(root: Path) -> Iterator[None]:
    """Cache, output and build folders under ``root`` (``cache_dir``, ``output_root``,
    ``build_dir``) while a replay or a check runs."""
    previous = {name: os.environ.get(name) for name in _FOLDER_ENV}
    for name in _FOLDER_ENV:
        os.environ[name] = str(root / name.removeprefix("DELIBERATION_").lower())
    try:
        yield
    finally:
        for name, value in previous.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _notebook_of(sidecar: Path) -> str | None:
    try:
        return json.loads(sidecar.read_text(encoding="utf-8")).get("notebook")
    except (OSError, ValueError):
        return None


def published_notebooks(folder: Path) -> list[str]:
    """The notebooks (stems) whose tables a committed tables folder holds, from their sidecars."""
    if not folder.is_dir():
        return []
    found = {_notebook_of(sidecar) for sidecar in folder.glob("*.provenance.json")}
    return sorted(name for name in found if name)


def committed_tables(folder: Path, notebooks: set[str] | None = None) -> list[Path]:
    """The files of a tables folder (hidden and temporary files aside), limited to the outputs
    of ``notebooks`` (stems) when given: each set is found through its sidecar."""
    if not folder.is_dir():
        return []
    files = sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith("."))
    if notebooks is None:
        return files
    chosen: list[Path] = []
    for sidecar in (p for p in files if p.name.endswith(".provenance.json")):
        if _notebook_of(sidecar) in notebooks:
            record = json.loads(sidecar.read_text(encoding="utf-8"))
            chosen += [sidecar.with_name(name) for name in record.get("files", {})]
            chosen.append(sidecar)
    return sorted(set(chosen))


def compare_tables(
    committed: Path, rebuilt: Path, report: ReplayReport, files: Sequence[Path]
) -> None:
    """Fill ``report`` with how each committed file compares with the rebuilt one."""
    for path in files:
        name = path.name
        other = rebuilt / name
        if not other.is_file():
            report.not_rebuilt.append(name)
            continue
        mine, theirs = path.read_bytes(), other.read_bytes()
        if mine == theirs:
            report.identical.append(name)
            continue
        if not name.endswith(".provenance.json"):
            report.different[name] = f"{len(mine):,} bytes committed, {len(theirs):,} rebuilt"
            continue
        old, new = json.loads(mine), json.loads(theirs)
        fields = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
        if set(fields) <= CHECKOUT_FIELDS:
            report.checkout_only[name] = fields
        else:
            report.different[name] = f"fields {', '.join(fields)} differ"
    committed_names = {p.name for p in files}
    if rebuilt.is_dir():
        report.not_committed = sorted(
            p.name
            for p in rebuilt.iterdir()
            if p.is_file() and p.name not in committed_names and not p.name.startswith(".")
        )


def replay_published(
    profile_arg: str,
    *,
    committed_root: Path | None = None,
    notebooks: Sequence[str] | None = None,
    workdir: Path | None = None,
    out: Printer = print,
) -> ReplayReport:
    """Import ``results/<profile>/responses.jsonl.gz`` under ``committed_root`` (default: the
    output root, the repository unless ``DELIBERATION_OUTPUT_ROOT`` says otherwise) into a fresh cache, rebuild the paper from it sending nothing, and compare the
    committed ``tables/<profile>/`` with the rebuilt ones (docs/real-model.md).
    ``notebooks`` limits the build and the comparison to those notebooks' outputs (default: the
    notebooks the committed tables come from, :func:`published_notebooks`)."""
    profile = load_profile(profile_arg)
    root = Path(committed_root or paths.output_root())
    report = ReplayReport(profile.name, published_path(profile.name, root))
    if not report.published.is_file():
        return report
    committed = root / "tables" / profile.name
    stems = None
    if notebooks is not None:
        from deliberation.paper.manifest import load_manifest, select

        stems = {entry.stem for entry in select(load_manifest(), notebooks)}
    files = committed_tables(committed, stems)
    check_tables(files)  # a damaged committed table is refused before any work
    if notebooks is None:  # what was published: a profile may publish some notebooks only
        notebooks = published_notebooks(committed) or None
    with contextlib.ExitStack() as stack:
        if workdir is None:
            workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="replay-")))
        stack.enter_context(run_folders(workdir))
        report.imported = import_responses(report.published, profile)
        report.build = build_paper(
            profile_arg, notebooks=notebooks, force=True, replay=True, out=out
        )
        rebuilt = paths.output_root() / "tables" / profile.name
        compare_tables(committed, rebuilt, report, files)
    for name in list(report.not_rebuilt):
        data = data_needed(profile.name, name)
        if data is not None:
            report.not_rebuilt.remove(name)
            report.needs_data[name] = data
    return report


def data_needed(profile: str, name: str) -> str | None:
    """The data a table file of ``tables/<profile>/`` needs and that is not here (from the
    *only if* column of figures/README.md's output table, shown as ``make data`` writes it),
    or None when it needs none or its data is here. A sidecar needs what its files need."""
    stem = name.removesuffix(".provenance.json")
    for output in expected_outputs():
        file = Path(output.pattern.format(profile=profile))
        if file.parts[0] != "tables" or not output.only_if or output.expected():
            continue
        if file.name == name or (stem != name and file.name.startswith(f"{stem}.")):
            external = paths.external_data_dir()
            if external.is_relative_to(paths.repo_root()):
                external = external.relative_to(paths.repo_root())
            return output.only_if[0].format(external_data=external, shared_data="")
    return None
