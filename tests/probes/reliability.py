"""The probes of issue 46, run against one checkout's code: before (main) and after (rel5).

    .venv/bin/python tests/probes/reliability.py --repo /path/to/checkout --out probes.json
    .venv/bin/python tests/probes/reliability.py --table before.json after.json

Each probe runs the checkout's own code (``PYTHONPATH=<repo>/lib``, ``DELIBERATION_ROOT=<repo>``)
in a subprocess with its own cache, build and output folders, against the misbehaving loopback
servers of ``tests/helpers`` run here, and records the exit code, the seconds it took, the first
line it printed about the outcome, and what the probe measures (calls paid, peak memory, the
option a reply was read as). A probe that does not end is stopped after ``LIMIT_S`` seconds.
Mounting the small disk needs root (the full-disk probes are skipped without it).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # tests/helpers
from helpers.damage import LEAF_INDEX, LEAF_TABLE, change_an_indexed_key, damage_page  # noqa: E402
from helpers.misbehaving import gzip_bomb, misbehaving_server  # noqa: E402

from deliberation.testing import sim_server_in_thread  # noqa: E402

LIMIT_S = 90.0
MIB = 2**20


@dataclass
class Outcome:
    probe: str
    item: int
    exit: str = ""
    seconds: float = 0.0
    line: str = ""
    measured: str = ""
    notes: list[str] = field(default_factory=list)


@dataclass
class Run:
    code: int | None
    seconds: float
    stdout: str
    stderr: str
    peak_mib: float


class Probe:
    def __init__(self, repo: Path, work: Path) -> None:
        self.repo = repo
        self.work = work

    def env(self, folder: Path, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("DELIBERATION_")}
        env.update(
            PYTHONPATH=str(self.repo / "lib"),
            DELIBERATION_ROOT=str(self.repo),
            DELIBERATION_CACHE_DIR=str(folder / "cache"),
            DELIBERATION_BUILD_DIR=str(folder / "build"),
            DELIBERATION_OUTPUT_ROOT=str(folder / "out"),
            DELIBERATION_SPILL_DIR=str(folder / "spill"),
            TMPDIR=str(folder),  # the default spill folder too: nothing left in the shared /tmp
            PYTHONIOENCODING="utf-8",
        )
        env.update(extra)
        return env

    def run(self, args: list[str], env: dict[str, str], limit_s: float = LIMIT_S) -> Run:
        """``python -m deliberation ARGS`` (or ``python -c``), its exit code (None when stopped
        at ``limit_s``), output and peak resident memory."""
        argv = [sys.executable, *(args if args[0] == "-c" else ["-m", "deliberation", *args])]
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            started = time.monotonic()
            process = subprocess.Popen(argv, env=env, stdout=out, stderr=err,
                                       start_new_session=True)  # fmt: skip
            code: int | None = None
            usage = None
            while time.monotonic() - started < limit_s:
                pid, status, usage = os.wait4(process.pid, os.WNOHANG)
                if pid:
                    code = os.waitstatus_to_exitcode(status)
                    break
                time.sleep(0.1)
            else:
                os.killpg(process.pid, signal.SIGKILL)
                _, _, usage = os.wait4(process.pid, 0)
            process.returncode = -9 if code is None else code
            seconds = time.monotonic() - started
            out.seek(0), err.seek(0)
            stdout, stderr = (f.read().decode("utf-8", "replace") for f in (out, err))
        return Run(code, seconds, stdout, stderr, usage.ru_maxrss / 1024 if usage else 0)

    def folder(self, name: str) -> Path:
        path = self.work / name
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True)
        return path

    def profile(self, folder: Path, name: str, body: str) -> Path:
        path = folder / f"{name}.yaml"
        path.write_text(body)
        return path


def first_line(run: Run) -> str:
    """The line a user reads about the outcome: a traceback's last line, the CLI's one-line
    error, or for a success the line naming what it wrote (else the output's last line)."""
    if "Traceback (most recent call last)" in run.stderr:
        tail = [
            line for line in run.stderr.strip().splitlines() if line and not line.startswith(" ")
        ]
        return "Traceback: " + (tail[-1] if tail else "")
    lines = [line.strip() for line in (run.stderr + "\n" + run.stdout).splitlines()]
    lines = [line for line in lines if line and "it/s]" not in line and not line.startswith("INFO ")
             and "a quick try" not in line]  # fmt: skip
    if run.code:
        for line in lines:
            if line.startswith("deliberation ") and ":" in line:
                return line
        for line in lines:  # calls failed (exit 3): the stage's summary says how many
            if " FAILED" in line and "%|" not in line:
                return line
    for line in lines:
        if " rows -> " in line:
            return line
    return lines[-1] if lines else "(nothing printed)"


def outcome_of(name: str, item: int, run: Run, measured: str = "") -> Outcome:
    exit_text = "killed" if run.code is None else str(run.code)
    line = first_line(run) if run.code is not None else f"(nothing within {LIMIT_S:g} s; stopped)"
    if run.code is None and (run.stdout.strip() or run.stderr.strip()):
        line = f"(stopped at {LIMIT_S:g} s) last: {first_line(run)}"
    return Outcome(name, item, exit_text, round(run.seconds, 1), line[:300], measured)


# -- item 1: reading answers --------------------------------------------------------------------

PEOPLE = ["Ana Ruiz", "Ben Okafor", "Chen Wei"]
READINGS = [
    ("Not Ana Ruiz.", None),
    ("Never Ana Ruiz.", None),
    ("Avoid Ana Ruiz.", None),
    ("Reject Ana Ruiz.", None),
    ("Final answer: Not Ana Ruiz", None),
    ("Not Ana Ruiz \u2014 Ben Okafor is better.", "Ben Okafor"),
    ("Ana Ruiz is the one to avoid", None),
    ("Ana Ruiz. Wait, no: Ben Okafor.", "Ben Okafor"),
    ("Banana Ana Ruiz.", None),  # any capitalised word before a full name
]


def probe_readings(p: Probe) -> list[Outcome]:
    code = (
        "import json, sys\n"
        "from deliberation.inference.answer_parsing import parse_choice\n"
        f"cases = {json.dumps([r for r, _ in READINGS])}\n"
        f"print(json.dumps([parse_choice(c, {PEOPLE!r}) for c in cases]))\n"
    )
    run = p.run(["-c", code], p.env(p.folder("readings")))
    read = json.loads(run.stdout.strip().splitlines()[-1])
    outcomes = []
    for (reply, expected), got in zip(READINGS, read, strict=True):
        verdict = "as a careful reader" if got == expected else f"careful reader: {expected}"
        outcomes.append(Outcome(f"parse_choice({reply!r})", 1, "-", 0.0, f"{got!r}", verdict))
    return outcomes


# -- item 2: bounded HTTP -----------------------------------------------------------------------

OPENAI_PROFILE = """\
backend: openai
model: {model}
openai:
  base_url: {url}
  concurrency: {concurrency}
  max_retries: 0
  timeout_s: {timeout}
  structured_output: none
  preflight: {preflight}
experiments:
  crossprofile:
    limit: 1
    budgets: [0.6]
    policies: [all]
    tags: [keep]
"""


def _run_crossprofile(p: Probe, folder: Path, url: str, *, timeout: int = 10, concurrency: int = 4,
                      preflight: str = "true", model: str = "m") -> Run:  # fmt: skip
    profile = p.profile(folder, "probe", OPENAI_PROFILE.format(
        url=url, concurrency=concurrency, timeout=timeout, preflight=preflight, model=model))  # fmt: skip
    return p.run(["run", "crossprofile", "--profile", str(profile)], p.env(folder))


def probe_trickle(p: Probe) -> Outcome:
    folder = p.folder("trickle")
    with misbehaving_server(behaviour="trickle", interval_s=3.0) as server:
        run = _run_crossprofile(p, folder, server.base_url)
    return outcome_of("server sends 1 byte / 3 s, timeout_s: 10 (deliberation run)", 2, run,
                      f"peak {run.peak_mib:.0f} MiB")  # fmt: skip


def probe_huge_list(p: Probe) -> Outcome:
    folder = p.folder("huge")
    with misbehaving_server(behaviour="huge", size=300 * MIB, declared=False) as server:
        run = _run_crossprofile(p, folder, server.base_url, timeout=60)
        sent = server.sent
    return outcome_of("300 MB model list, chunked (deliberation run)", 2, run,
                      f"peak {run.peak_mib:.0f} MiB; {sent / MIB:.0f} MiB sent before the client stopped")  # fmt: skip


# -- item 3: compression ------------------------------------------------------------------------


def probe_plain_run(p: Probe) -> Outcome:
    """The same run against a server that behaves (serve-sim): the memory a run takes anyway."""
    folder = p.folder("plain")
    with sim_server_in_thread() as sim:
        run = _run_crossprofile(p, folder, sim.base_url, preflight="false", model="sim-mechanism")
    return outcome_of("the same run, a server that behaves (for scale)", 3, run,
                      f"peak {run.peak_mib:.0f} MiB")  # fmt: skip


def probe_gzip_bomb(p: Probe) -> Outcome:
    folder = p.folder("bomb")
    bomb = gzip_bomb(150 * 10**6)
    with misbehaving_server(behaviour="gzip", body=bomb, on_get="models") as server:
        run = _run_crossprofile(p, folder, server.base_url, timeout=120, preflight="false")
        posts = server.requests
    stored = _stored(folder / "cache" / "probe.sqlite")
    return outcome_of(f"{len(bomb) // 1024} KB gzip -> 150 MB, concurrency 4", 3, run,
                      f"peak {run.peak_mib:.0f} MiB; {stored} answers stored of {posts} requests")  # fmt: skip


def _stored(path: Path) -> int:
    if not path.exists():
        return 0
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
            return conn.execute("SELECT count(*) FROM responses").fetchone()[0]
    except sqlite3.Error:
        return -1


# -- item 4: spilled answers --------------------------------------------------------------------

SIM_GRID = ["--limit", "3", "--policies", "all,R1,B4", "--budgets", "0.6", "--tags", "keep"]


@contextlib.contextmanager
def tiny_disk(folder: Path) -> Iterator[Path | None]:
    disk = folder / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=300k", "tmpfs", str(disk)],
                             capture_output=True, check=False)  # fmt: skip
    if mounted.returncode != 0:
        yield None
        return
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


_STAGE_COUNTS = re.compile(
    r"requests built, (\d+) unique prompts, (\d+) already cached, (\d+) sent"
)


def _counts(run: Run) -> tuple[int, int]:
    """(unique prompts, calls sent) over every stage a run summed up."""
    found = [tuple(map(int, m)) for m in _STAGE_COUNTS.findall(run.stdout + run.stderr)]
    return sum(f[0] for f in found), sum(f[2] for f in found)


def probe_spill_moved(p: Probe) -> list[Outcome]:
    folder = p.folder("spill")
    with tiny_disk(folder) as disk:
        if disk is None:
            return [
                Outcome("full disk, then the cache moved", 4, "skipped", 0, "needs root to mount")
            ]
        env = p.env(folder, DELIBERATION_CACHE_DIR=str(disk))
        first = p.run(["run", "crossprofile", "--profile", "sim", *SIM_GRID], env)
        stored = _stored(disk / "sim.sqlite")
        spills = sorted((folder / "spill").glob("*.jsonl"))
        spilled = sum(len(s.read_text().splitlines()) - 1 for s in spills)
        bigger = folder / "bigger"
        bigger.mkdir()
        for part in disk.glob("sim.sqlite*"):
            shutil.move(part, bigger / part.name)
    outcomes = [outcome_of("full disk during a run", 4, first,
                           f"{stored} answers stored, {spilled} spilled")]  # fmt: skip
    if spills:
        copy = folder / "import-me.jsonl"
        shutil.copy(spills[0], copy)
        imported = p.run(["cache", "import", str(copy)], p.env(folder / "elsewhere"))
        outcomes.append(outcome_of("deliberation cache import <spill file>", 4, imported))
    again = p.run(["run", "crossprofile", "--profile", "sim", *SIM_GRID],
                  p.env(folder, DELIBERATION_CACHE_DIR=str(bigger)))  # fmt: skip
    total, sent = _counts(again)
    paid_again = sent - (total - stored - spilled)
    outcomes.append(outcome_of("rerun after moving the cache (DELIBERATION_CACHE_DIR)", 4, again,
                               f"spilled answers paid again: {paid_again} of {spilled}"))  # fmt: skip
    return outcomes


def probe_spill_unusable(p: Probe) -> Outcome:
    folder = p.folder("spill-unusable")
    with tiny_disk(folder) as disk:
        if disk is None:
            return Outcome("full disk, spill folder unusable", 4, "skipped", 0, "needs root")
        blocked = folder / "a-file"
        blocked.write_text("not a folder")
        env = p.env(folder, DELIBERATION_CACHE_DIR=str(disk), DELIBERATION_SPILL_DIR=str(blocked))
        run = p.run(["run", "crossprofile", "--profile", "sim", *SIM_GRID], env)
    line = first_line(run)
    saved = re.search(r"saved in (\S+?):? ", line)
    kept = "spill file written" if saved else "no spill file"
    return outcome_of("full disk, DELIBERATION_SPILL_DIR is a file", 4, run, kept)


# -- item 5: damaged caches ---------------------------------------------------------------------


def _filled_cache(p: Probe, folder: Path, url: str) -> Path:
    run = _run_crossprofile(p, folder, url, preflight="false", model="sim-mechanism")
    assert run.code == 0, run.stderr[-2000:]
    return folder / "cache" / "probe.sqlite"


def probe_damaged(p: Probe) -> list[Outcome]:
    """The cache of one run, then damaged: the last data page (where new answers go) before a
    run of other calls; a page of the key index before the same run again (fully cached)."""
    outcomes = []
    cases = (("a damaged data page, then new calls", LEAF_TABLE, "header", "last"),
             ("a key changed in the index only, fully cached run", LEAF_INDEX, "key", "middle"))  # fmt: skip
    for label, kind, at, which in cases:
        folder = p.folder(f"damaged-{kind}")
        with sim_server_in_thread() as sim:
            cache = _filled_cache(p, folder, sim.base_url)
            if at == "key":
                change_an_indexed_key(cache)
            else:
                damage_page(cache, kind, at=at, which=which)
            sim.reset()
            profile = folder / "probe.yaml"
            if kind == LEAF_TABLE:  # other calls: none of the damaged page's answers is looked up
                profile.write_text(profile.read_text().replace("[all]", "[empty]"))
            run = p.run(["run", "crossprofile", "--profile", str(profile)], p.env(folder))
            paid = sim.stats()["arrivals"]
        outcomes.append(outcome_of(label, 5, run, f"calls paid: {paid}"))
    return outcomes


# -- item 6: settings and output ----------------------------------------------------------------


def probe_settings(p: Probe) -> list[Outcome]:
    outcomes = []
    folder = p.folder("settings")
    afile = folder / "a-file"
    afile.write_text("x")
    for variable in ("DELIBERATION_CACHE_DIR", "DELIBERATION_BUILD_DIR"):
        run = p.run(["run", "crossprofile", "--profile", "sim", "--limit", "1"],
                    p.env(folder, **{variable: str(afile)}))  # fmt: skip
        outcomes.append(outcome_of(f"{variable} names a file", 6, run))
    run = p.run(["run", "crossprofile", "--profile", "a" * 300, "--limit", "1"], p.env(folder))
    outcomes.append(outcome_of("a 300-character profile name", 6, run))
    bodies = {
        "sampling.max_tokens: 100000000000000000000": "sampling:\n  max_tokens: 100000000000000000000\n",
        "model name with NUL": 'model: "sim-mechanism\\0x"\n',
        "model name with a right-to-left override": 'model: "sim\\u202Emechanism"\n',
        "experiments.crossprofile.budgets: [-0.5]": "experiments:\n  crossprofile:\n    budgets: [-0.5]\n",
    }
    for label, body in bodies.items():
        sub = p.folder(f"settings-{len(outcomes)}")
        text = "backend: sim\n" + ("" if body.startswith("model") else "model: sim-mechanism\n")
        profile = p.profile(sub, "probe", text + body)
        run = p.run(["run", "crossprofile", "--profile", str(profile), *SIM_GRID[:2], "--policies",
                     "all", "--tags", "keep"], p.env(sub))  # fmt: skip
        measured = ""
        if run.code == 0:
            measured = "accepted"
        if run.code == 0 and "NUL" in label:
            rows = sub / "build" / "runs" / "probe" / "crossprofile_rows.csv"
            measured = (
                f"NUL bytes in the rows CSV: {rows.read_bytes().count(0) if rows.exists() else '?'}"
            )
        outcomes.append(outcome_of(label, 6, run, measured))
    return outcomes


def probe_replies(p: Probe) -> list[Outcome]:
    folder = p.folder("replies")
    setup = p.run(["run", "crossprofile", "--profile", "sim", "--limit", "1", "--policies", "all",
                   "--budgets", "0.6", "--tags", "keep"], p.env(folder))  # fmt: skip
    assert setup.code == 0, setup.stderr[-2000:]
    cache = folder / "cache" / "sim.sqlite"
    with contextlib.closing(sqlite3.connect(cache)) as conn, conn:
        key, blob = conn.execute("SELECT key, response FROM responses LIMIT 1").fetchone()
        response = json.loads(blob)
        raw = json.dumps({**response, "text": "PLACEHOLDER"})
        raw = raw.replace('"PLACEHOLDER"', '"caf\\u00e9 \\u2014 \\ud800 lone"')
        conn.execute("UPDATE responses SET response = ? WHERE key = ?", (raw, key))
    outcomes = []
    for label, encoding in (("a reply with a lone surrogate", "utf-8"),
                            ("on an ASCII terminal", "ascii"), ("on a Latin-1 terminal", "latin-1")):  # fmt: skip
        run = p.run(["replies", "--profile", "sim", "--limit", "3"],
                    p.env(folder, PYTHONIOENCODING=encoding, LC_ALL="C"))  # fmt: skip
        shown = next((line.strip() for line in run.stdout.splitlines() if "lone" in line), None)
        measured = f"the reply shown as: {shown}" if shown else "the reply is not shown"
        outcomes.append(outcome_of(f"deliberation replies: {label}", 6, run, measured))
    return outcomes


PROBES: list[Callable[[Probe], Outcome | list[Outcome]]] = [
    probe_readings, probe_trickle, probe_huge_list, probe_gzip_bomb, probe_plain_run, probe_spill_moved,
    probe_spill_unusable, probe_damaged, probe_settings, probe_replies,
]  # fmt: skip


def run_all(repo: Path, only: list[str] | None) -> list[Outcome]:
    outcomes: list[Outcome] = []
    with tempfile.TemporaryDirectory(prefix="probes-") as work:
        probe = Probe(repo, Path(work))
        for function in PROBES:
            if only and function.__name__ not in only:
                continue
            print(f"== {function.__name__}", file=sys.stderr, flush=True)
            try:
                found = function(probe)
            except Exception as exc:  # a probe that could not be set up: said, the others go on
                found = Outcome(
                    function.__name__, 0, "error", 0, f"{type(exc).__name__}: {exc}"[:300]
                )
            outcomes += found if isinstance(found, list) else [found]
    return outcomes


def table(before: list[dict], after: list[dict]) -> str:
    """The Markdown table: each probe, before and after (exit code, seconds, first line)."""

    def cell(o: dict) -> str:
        text = re.sub(r"/tmp/probes-\w+/", "…/", o["line"])  # each run's own temporary folder
        text = re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", text)
        text = (text if len(text) <= 220 else text[:220] + " …").replace("|", "\\|")
        measured = f" [{o['measured']}]" if o["measured"] else ""
        return (
            f"{o['exit']} ({o['seconds']:g} s): {text}{measured}"
            if o["exit"] != "-"
            else f"{text}{measured}"
        )

    rows = [
        "| # | probe | before (main): exit (time): first line | after (rel5) |",
        "|---|---|---|---|",
    ]
    later = {o["probe"]: o for o in after}
    for o in before:
        rows.append(
            f"| {o['item']} | {o['probe']} | {cell(o)} | {cell(later[o['probe']]) if o['probe'] in later else ''} |"
        )
    return "\n".join(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, help="the checkout whose code the probes run")
    parser.add_argument("--out", type=Path, help="write the outcomes here (JSON)")
    parser.add_argument("--only", nargs="*", help="probe functions to run (default: all)")
    parser.add_argument("--table", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    args = parser.parse_args()
    if args.table:
        before, after = (json.loads(path.read_text()) for path in args.table)
        print(table(before, after))
        return 0
    outcomes = [asdict(o) for o in run_all(args.repo.resolve(), args.only)]
    text = json.dumps(outcomes, indent=1, ensure_ascii=False)
    if args.out:
        args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
