"""``make paper``: every notebook of the manifest through papermill, skipping the current ones.

A notebook is *current* when the hash of its inputs (library, templates, resolved profile,
notebook, manifest entry, data it reads) matches its last successful run and its outputs are
unchanged; the inputs are hashed part by part so the build can say what changed. A failing
notebook stops the build (kept as ``FAILED-<name>``); one whose model calls failed is
*incomplete*: its outputs are marked, it is rerun next time, and the cache sends only the failed
calls. Steps, records and outputs: docs/paper-build.md.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import logging
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deliberation import exit_codes
from deliberation.experiments.grid_needs import check_grid
from deliberation.inference import preflight_now, served_profile
from deliberation.inference.base import NO_SEND_ENV
from deliberation.inference.failures import LOG_ENV, FailedCall, read_log
from deliberation.inference.model_server import model_server
from deliberation.io import paths
from deliberation.io.atomic import atomic_write_text
from deliberation.paper.manifest import NotebookEntry, load_manifest, notebooks_dir, select
from deliberation.paper.outputs import missing_outputs, unlisted_outputs
from deliberation.paper.progress import INTERVAL_S, NotebookProgress, reporting
from deliberation.profiles.profile import Profile, load_profile, profile_files
from deliberation.publish.provenance import incomplete_record, mark_incomplete

Printer = Callable[[str], None]
# Flushed line by line: `make paper` is often piped (tee, CI), and progress lines must not wait.
_print_now: Printer = functools.partial(print, flush=True)


# Errors raised inside a notebook whose outcome has an exit code of its own (the build exits
# with it): a cache or an output that cannot be written (a full disk) is not a bug.
_KERNEL_OUTCOMES = {
    "CacheWriteError": exit_codes.OUTPUT_UNWRITABLE,
    "OutputUnwritableError": exit_codes.OUTPUT_UNWRITABLE,
}


class NotebookFailed(RuntimeError):
    """A notebook that raised: names it and the first line of the failing cell."""

    def __init__(self, notebook: str, cell_line: str, error: str, kept: Path | None) -> None:
        self.notebook, self.cell_line, self.error, self.kept = notebook, cell_line, error, kept
        where = f" in the cell starting `{cell_line}`" if cell_line else ""
        keep = f"; the partial notebook is {kept}" if kept else ""
        super().__init__(f"{notebook} failed{where}: {error}{keep}")

    @property
    def exit_code(self) -> int:
        """The build's exit code: the outcome's own for :data:`_KERNEL_OUTCOMES`, else 1."""
        return _KERNEL_OUTCOMES.get(self.error.split(":", 1)[0], exit_codes.ERROR)


def _hash_files(files: Iterable[Path], base: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(files):
        try:
            name = str(path.relative_to(base))
        except ValueError:
            name = str(path)
        digest.update(name.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def _tree_files(folder: Path) -> list[Path]:
    return [
        p
        for p in folder.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    ]


def profile_digest(profile: Profile) -> str:
    """Everything in the resolved profile that can change a result (see ``params_hash``)."""
    payload = profile.model_dump(mode="json", exclude={"source", "description", "cost"})
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


@dataclass
class SharedInputs:
    """Hashes every notebook shares, computed once per build."""

    library: str
    templates: str
    profile: str
    profile_files: list[str]

    @classmethod
    def compute(cls, profile: Profile, profile_arg: str) -> SharedInputs:
        root = paths.repo_root()
        return cls(
            library=_hash_files(_tree_files(root / "lib" / "deliberation"), root),
            templates=_hash_files(_tree_files(paths.templates_dir()), root),
            profile=profile_digest(profile),
            profile_files=[str(p) for p in profile_files(profile_arg)],
        )


def notebook_inputs(
    entry: NotebookEntry, shared: SharedInputs, folder: Path | None = None
) -> dict[str, str]:
    """The input hashes of one notebook, by part."""
    folder = folder or notebooks_dir()
    notebook = folder / entry.name
    return {
        "library": shared.library,
        "templates": shared.templates,
        "profile": shared.profile,
        "notebook": hashlib.sha256(notebook.read_bytes()).hexdigest(),
        "entry": hashlib.sha256(entry.model_dump_json().encode()).hexdigest(),
        "data": _hash_files(entry.data_files(), paths.repo_root()),
    }


def _written_outputs(profile: str, notebook_stem: str) -> dict[str, str]:
    """Files the notebook wrote for the profile, from the provenance sidecars naming it:
    path (relative to the output root) -> sha256, sidecars included."""
    root = paths.output_root()
    found: dict[str, str] = {}
    for kind in ("figures", "tables"):
        for sidecar in sorted((root / kind / profile).glob("*.provenance.json")):
            try:
                record = json.loads(sidecar.read_text())
            except (OSError, ValueError):
                continue
            if record.get("notebook") != notebook_stem:
                continue
            for name, sha in record.get("files", {}).items():
                found[str((sidecar.parent / name).relative_to(root))] = sha
            found[str(sidecar.relative_to(root))] = hashlib.sha256(sidecar.read_bytes()).hexdigest()
    return found


def served_names(profile: str) -> list[str]:
    """Other model names the replies gave, from the ``served_as`` of the profile's outputs."""
    root = paths.output_root()
    names: set[str] = set()
    for kind in ("figures", "tables"):
        for sidecar in (root / kind / profile).glob("*.provenance.json"):
            try:
                served = json.loads(sidecar.read_text()).get("served_as", [])
            except (OSError, ValueError, AttributeError):
                continue
            names.update(str(name) for name in served if isinstance(served, list))
    return sorted(names)


def _outputs_intact(recorded: dict[str, str]) -> list[str]:
    """Recorded outputs now missing or changed."""
    root = paths.output_root()
    bad = []
    for name, sha in recorded.items():
        path = root / name
        if not path.is_file() or hashlib.sha256(path.read_bytes()).hexdigest() != sha:
            bad.append(name)
    return bad


@dataclass(frozen=True)
class Status:
    entry: NotebookEntry
    run: bool
    reason: str
    inputs: dict[str, str]


def _notebook_status(
    entry: NotebookEntry,
    inputs: dict[str, str],
    executed_dir: Path,
    *,
    force: bool = False,
) -> Status:
    """Whether to run the notebook, and why (or why not) in words."""
    if force:
        return Status(entry, True, "FORCE=1", inputs)
    stamp = executed_dir / f"{entry.stem}.inputs.json"
    if not stamp.is_file() or not (executed_dir / entry.name).is_file():
        return Status(entry, True, "no successful run recorded", inputs)
    try:
        record = json.loads(stamp.read_text())
    except ValueError:
        return Status(entry, True, "unreadable run record", inputs)
    incomplete = record.get("incomplete")
    if incomplete:
        return Status(
            entry,
            True,
            f"incomplete: {incomplete.get('failed_calls')} model calls failed in its last run"
            " (only those are sent again)",
            inputs,
        )
    previous = record.get("inputs", {})
    changed = [part for part in inputs if previous.get(part) != inputs[part]]
    if changed:
        return Status(entry, True, f"changed since its last run: {', '.join(changed)}", inputs)
    damaged = _outputs_intact(record.get("outputs", {}))
    if damaged:
        return Status(entry, True, f"outputs missing or changed: {', '.join(damaged[:3])}", inputs)
    return Status(entry, False, "current: inputs unchanged since its last successful run", inputs)


def _first_line(source: str) -> str:
    for line in source.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            return line.strip()
    return source.strip().splitlines()[0] if source.strip() else ""


def execute_notebook(
    entry: NotebookEntry,
    profile_arg: str,
    executed_dir: Path,
    folder: Path | None = None,
    progress: NotebookProgress | None = None,
) -> Path:
    """Run one notebook with papermill into ``executed_dir``; raise :class:`NotebookFailed`.
    ``progress`` learns each code cell as it starts."""
    import papermill as pm
    from papermill.exceptions import PapermillExecutionError

    from deliberation.paper.kernel import QuietKernelManager
    from deliberation.paper.progress import ENGINE_NAME

    logging.getLogger("papermill").setLevel(logging.WARNING)  # the build prints its own lines
    folder = folder or notebooks_dir()
    executed_dir.mkdir(parents=True, exist_ok=True)
    final = executed_dir / entry.name
    partial = executed_dir / f".tmp-{entry.name}"
    failed = executed_dir / f"FAILED-{entry.name}"
    failed.unlink(missing_ok=True)
    try:
        pm.execute_notebook(
            str(folder / entry.name),
            str(partial),
            parameters={"profile": profile_arg},
            cwd=str(folder),
            kernel_name="python3",
            progress_bar=False,
            engine_name=ENGINE_NAME,
            progress=progress,
            kernel_manager_class=QuietKernelManager,
        )
    except PapermillExecutionError as exc:
        kept = _keep_failed(partial, failed, final)
        raise NotebookFailed(
            entry.name, _first_line(exc.source), f"{exc.ename}: {exc.evalue}", kept
        ) from None
    except Exception as exc:  # kernel died, notebook unreadable, ...
        kept = _keep_failed(partial, failed, final)
        raise NotebookFailed(entry.name, "", f"{type(exc).__name__}: {exc}", kept) from None
    os.replace(partial, final)
    return final


def _keep_failed(partial: Path, failed: Path, final: Path) -> Path | None:
    final.unlink(missing_ok=True)  # never leave an older success under the finished name
    if partial.is_file():
        os.replace(partial, failed)
        return failed
    return None


class CallsFailed(NotebookFailed):
    """A notebook that ran, but some of its model calls got no usable reply."""

    def __init__(self, notebook: str, calls: list[FailedCall]) -> None:
        self.calls = calls
        RuntimeError.__init__(
            self,
            f"{notebook}: {len(calls)} model calls failed, first: {calls[0].line()}; its"
            " outputs are marked INCOMPLETE and the next `make paper` reruns it, sending only"
            " the failed calls",
        )
        self.notebook, self.cell_line, self.error, self.kept = notebook, "", str(self), None


class ReplayIncomplete(NotebookFailed):
    """A replay whose plan finds calls not in the cache: the published answers do not cover
    the build, so nothing runs (a replay never sends)."""

    def __init__(self, calls: Sequence[Any]) -> None:
        missing = [c for c in calls if c.state == "send"]
        by_notebook: dict[str, set[str]] = {}
        for call in missing:
            by_notebook.setdefault(call.notebook, set()).add(call.stage)
        where = "; ".join(
            f"{nb}: {', '.join(sorted(st))}" for nb, st in sorted(by_notebook.items())
        )
        RuntimeError.__init__(
            self,
            f"replay: {len(missing)} planned calls are not in the response cache ({where});"
            " a replay sends nothing, so no notebook ran",
        )
        self.notebook = ", ".join(sorted(by_notebook))
        self.cell_line, self.error, self.kept = "", str(self), None


def _failed_calls_log(entry: NotebookEntry, executed_dir: Path) -> Path:
    return executed_dir / f"{entry.stem}.failed-calls.jsonl"


def _record_incomplete(
    entry: NotebookEntry, profile: str, executed_dir: Path, calls: list[FailedCall]
) -> None:
    """Mark the run incomplete: not current, and every output it wrote marked so."""
    root = paths.output_root()
    for kind in ("figures", "tables"):
        for sidecar in sorted((root / kind / profile).glob("*.provenance.json")):
            try:
                if json.loads(sidecar.read_text()).get("notebook") == entry.stem:
                    mark_incomplete(sidecar, calls)
            except (OSError, ValueError):
                continue
    record = {
        "notebook": entry.name,
        "profile": profile,
        "incomplete": incomplete_record(calls),
        "inputs": {},
        "outputs": _written_outputs(profile, entry.stem),
    }
    atomic_write_text(
        executed_dir / f"{entry.stem}.inputs.json", json.dumps(record, indent=2) + "\n"
    )


def _record_success(entry: NotebookEntry, status: Status, profile: str, executed_dir: Path) -> None:
    record = {
        "notebook": entry.name,
        "profile": profile,
        "inputs": status.inputs,
        "outputs": _written_outputs(profile, entry.stem),
    }
    atomic_write_text(
        executed_dir / f"{entry.stem}.inputs.json", json.dumps(record, indent=2) + "\n"
    )


@dataclass
class BuildResult:
    profile: str
    executed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    failed: NotebookFailed | None = None
    missing: list[Path] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.failed is None and not self.missing


def build_paper(
    profile_arg: str,
    *,
    notebooks: Sequence[str] | None = None,
    force: bool = False,
    plan: bool = True,
    folder: Path | None = None,
    readme: Path | None = None,
    out: Printer = _print_now,
    progress_interval_s: float = INTERVAL_S,
    replay: bool = False,
) -> BuildResult:
    """Print the plan, run the stale notebooks in order (a progress line at most every
    ``progress_interval_s`` while one runs), then check the promised outputs.

    ``replay``: build from the answers already in the cache and send nothing. The plan must
    find every call cached (else the build stops before any notebook, naming the notebooks and
    stages missing), no server is started, and :data:`NO_SEND_ENV` is set for the kernels, so a
    call the plan did not foresee fails loudly instead of reaching a model."""
    started = time.perf_counter()
    profile = load_profile(profile_arg)
    executed_dir = paths.build_dir() / "executed" / profile.name
    entries = select(load_manifest(folder), notebooks)
    # A grid a notebook cannot analyse is refused before anything runs or is sent.
    check_grid(profile, [e.name for e in entries])
    shared = SharedInputs.compute(profile, profile_arg)
    statuses = [
        _notebook_status(e, notebook_inputs(e, shared, folder), executed_dir, force=force)
        for e in entries
    ]
    result = BuildResult(profile.name)
    # Labelled as what answers (a serve-sim endpoint: synthetic), as the outputs will be.
    labelled = profile if replay else served_profile(profile)  # a replay asks no server
    out(f"make paper: profile {profile.name} ({labelled.label})")
    for status in statuses:
        verb = "run " if status.run else "skip"
        out(f"  {verb} {status.entry.name}: {status.reason}")
    stale = [s.entry for s in statuses if s.run]
    planned: dict[str, int] = {}  # notebook stem -> prompts the plan counts (progress lines)
    # Without a plan, any stale notebook with model calls may send some.
    to_send = any(e.experiment is not None for e in stale)
    if (plan or replay) and stale:
        from deliberation.paper.plan import format_plan, plan_calls

        the_plan = plan_calls(profile, stale, ask_server=not replay)
        to_send = the_plan.totals()["to_send"] > 0
        out("")
        for line in format_plan(the_plan):
            out(line)
        out("")
        # Distinct prompts, as the kernels' progress counts them (deliberation.inference.call_progress).
        prompts: dict[str, set[str]] = {}
        for call in the_plan.calls:
            if call.key:
                prompts.setdefault(call.notebook, set()).add(call.key)
        planned = {notebook: len(keys) for notebook, keys in prompts.items()}
        if replay and to_send:
            result.failed = ReplayIncomplete(the_plan.calls)
            out(f"FAILED: {result.failed}")
            result.seconds = time.perf_counter() - started
            return result
    # One model server for the whole build (started only when something must be sent and its
    # URL does not answer), pre-flighted once; stopped when the build ends, however it ends.
    # A replay starts none and forbids sending, in this process and in the kernels.
    no_send = _environment(NO_SEND_ENV, "1") if replay else contextlib.nullcontext()
    with model_server(profile), no_send:
        if to_send and not replay:
            preflight_now(profile)
        _run_notebooks(
            statuses, profile, profile_arg, executed_dir, folder, result, out,
            planned=planned, exact=labelled.synthetic, progress_interval_s=progress_interval_s,
        )  # fmt: skip
    if result.failed is None:
        result.missing = missing_outputs(profile.name, [e.name for e in entries], readme=readme)
        _report_outputs(result, profile.name, readme, out, check_unlisted=notebooks is None)
    result.seconds = time.perf_counter() - started
    served = served_names(profile.name)
    if served:
        out(
            f"model: the server answered as {', '.join(served)} for the profile's `model:"
            f" {profile.model}` (recorded as served_as in the outputs' provenance;"
            " openai.strict_model: true fails such calls)"
        )
    out(
        f"make paper: {len(result.executed)} run, {len(result.skipped)} current (skipped),"
        f" {_verdict(result)} in {result.seconds:.1f} s; executed notebooks in"
        f" {executed_dir}"
    )
    return result


def _run_notebooks(
    statuses: Sequence[Status],
    profile: Profile,
    profile_arg: str,
    executed_dir: Path,
    folder: Path | None,
    result: BuildResult,
    out: Printer,
    *,
    planned: dict[str, int],
    exact: bool,
    progress_interval_s: float,
) -> None:
    """Run the stale notebooks in order; stop at the first that fails. ``exact``: the plan's
    counts are exact (the sim answers), so the progress lines say "of", not "of about"."""
    for status in statuses:
        name = status.entry.name
        if not status.run:
            result.skipped.append(name)
            continue
        out(f"== {name} (profile {profile.name})")
        t0 = time.perf_counter()
        progress = NotebookProgress(name, planned.get(status.entry.stem), planned_exact=exact)
        log_file = _failed_calls_log(status.entry, executed_dir)
        executed_dir.mkdir(parents=True, exist_ok=True)
        log_file.unlink(missing_ok=True)
        try:
            # The kernel inherits the failed-calls log's path through the environment.
            with (
                _environment(LOG_ENV, str(log_file)),
                reporting(progress, out, progress_interval_s),
            ):
                execute_notebook(status.entry, profile_arg, executed_dir, folder, progress)
                call_count = progress.calls()
        except NotebookFailed as failure:
            result.failed = failure
            out(f"FAILED: {failure}")
            calls = read_log(log_file)
            if calls:
                out(f"  (before it, {len(calls)} model calls failed; first: {calls[0].line()})")
            break
        calls = read_log(log_file)
        if calls:
            _record_incomplete(status.entry, profile.name, executed_dir, calls)
            result.failed = CallsFailed(name, calls)
            out(f"FAILED: {result.failed}")
            break
        log_file.unlink(missing_ok=True)
        _record_success(status.entry, status, profile.name, executed_dir)
        result.executed.append(name)
        of_calls = f", {call_count:,} model calls" if call_count else ""
        out(f"   {name} done in {time.perf_counter() - t0:.1f} s{of_calls}")


# Where a build of a profile with published results writes, unless it publishes (build/...).
_PREVIEW_FOLDER = "outputs"
OUTPUT_ROOT_ENV = "DELIBERATION_OUTPUT_ROOT"


@contextlib.contextmanager
def output_folders(profile: Profile, *, publish: bool, out: Printer = _print_now) -> Iterator[Path]:
    """The output root of a ``make paper`` build, set for the build and its kernels. A profile
    whose results are published (``results/<profile>/responses.jsonl.gz`` committed) keeps its
    committed ``figures/`` and ``tables/`` as they are: the build writes under
    ``build/outputs/`` instead, so a newcomer's run leaves ``git status`` clean, and only the
    publishing build (``publish``, ``make paper PUBLISH=1``) writes the committed folders. An
    output root already chosen (``DELIBERATION_OUTPUT_ROOT``: tests, replays) is kept."""
    from deliberation.inference.published import published_path

    published = published_path(profile.name, paths.repo_root())
    if publish or os.environ.get(OUTPUT_ROOT_ENV) or not published.is_file():
        yield paths.output_root()
        return
    root = paths.build_dir() / _PREVIEW_FOLDER
    out(
        f"make paper: {profile.name} has published results ({published.parent}); this build"
        f" writes {root}/figures/{profile.name}/ and {root}/tables/{profile.name}/ and leaves the"
        " committed folders as they are (PUBLISH=1: the publishing build writes those)"
    )
    with _environment(OUTPUT_ROOT_ENV, str(root)):
        yield root


@contextlib.contextmanager
def _environment(name: str, value: str) -> Iterator[None]:
    previous = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = previous


def _verdict(result: BuildResult) -> str:
    if result.failed is not None:
        return f"FAILED at {result.failed.notebook}"
    if result.missing:
        return f"{len(result.missing)} listed output(s) MISSING"
    return "ok"


def _report_outputs(
    result: BuildResult, profile: str, readme: Path | None, out: Printer, *, check_unlisted: bool
) -> None:
    root = paths.output_root()
    if result.missing:
        out(f"MISSING: {len(result.missing)} file(s) listed in figures/README.md were not made:")
        for path in result.missing:
            out(f"  {path.relative_to(root) if path.is_relative_to(root) else path}")
    else:
        out(f"outputs: every file figures/README.md lists for these notebooks exists ({profile})")
    if check_unlisted:
        extra = unlisted_outputs(profile, readme=readme)
        if extra:
            out(f"note: {len(extra)} output(s) not listed in figures/README.md:")
            for path in extra:
                out(f"  {path.relative_to(root)}")
