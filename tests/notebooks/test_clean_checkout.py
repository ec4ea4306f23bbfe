"""The README's command lines leave a checkout as they found it (``git status`` clean).

In a throwaway copy of the repository (its tracked files as they are, committed to a fresh git
repository), the sim quick start's ``deliberation`` lines and the laptop quick start's ``make
paper PROFILE=smollm2-135m-llamacpp ONLY="00"`` run with the defaults a newcomer gets (no
output, cache or build folder chosen). That profile publishes its results, so its build writes
``build/outputs/`` and leaves the committed ``tables/`` and ``figures/`` alone; the published
answers are imported first and sending is forbidden, so nothing reaches a model server.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROFILE = "smollm2-135m-llamacpp"
PAPER_LINE = re.compile(r"^make paper PROFILE=(\S+) ONLY=\"(\d+)\"", re.M)


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True)
    return done.stdout


def _copy_of_the_checkout(target: Path) -> Path:
    """The tracked files of this checkout (as they are now) in a fresh, committed repository."""
    for name in _git(ROOT, "ls-files", "-z").split("\0"):
        if name and (ROOT / name).is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, target / name)
    _git(target, "init", "-q")
    _git(target, "add", "-A")
    _git(target, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "copy")
    return target


def _readme_lines() -> tuple[list[str], str]:
    """The sim quick start's ``deliberation`` lines and the laptop quick start's paper line."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    sim = readme.split("\n## Quick start: the sim (no model)\n", 1)[1].split("\n## ", 1)[0]
    fence = sim.split("```bash\n", 1)[1].split("```", 1)[0]
    lines = [re.sub(r"\s#.*$", "", line).strip() for line in fence.splitlines()]
    paper = PAPER_LINE.search(readme)
    assert paper is not None and paper.group(1) == PROFILE, "the README's laptop paper line moved"
    return [line for line in lines if line.startswith("deliberation ")], paper.group(0)


def _make_paper_argv(line: str) -> list[str]:
    """``make paper PROFILE=P ONLY="NN"`` as the Makefile runs it."""
    found = PAPER_LINE.match(line)
    assert found is not None
    return ["paper", found.group(1), "--notebooks", found.group(2)]


@pytest.mark.skipif(not (ROOT / ".git").exists(), reason="not a git checkout")
def test_the_readme_command_lines_leave_git_status_clean(tmp_path) -> None:
    published = ROOT / "results" / PROFILE / "responses.jsonl.gz"
    if not published.is_file():
        pytest.skip(f"no published results for {PROFILE}")
    repo = _copy_of_the_checkout(tmp_path / "repo")
    sim_lines, paper_line = _readme_lines()
    env = {k: v for k, v in os.environ.items() if not k.startswith("DELIBERATION_")}
    env["PYTHONPATH"] = str(repo / "lib")
    env["DELIBERATION_SHARED_DATA"] = os.environ.get("DELIBERATION_SHARED_DATA", "")
    if not env["DELIBERATION_SHARED_DATA"]:
        env.pop("DELIBERATION_SHARED_DATA")

    def run(argv: list[str], **extra: str) -> None:
        done = subprocess.run(
            [sys.executable, "-m", "deliberation", *argv],
            cwd=repo, env={**env, **extra}, capture_output=True, text=True, timeout=900,
        )  # fmt: skip
        assert done.returncode == 0, f"{argv}: exit {done.returncode}\n{done.stderr[-3000:]}"

    for line in sim_lines:
        run(shlex.split(line)[1:])
    # The published answers first, and no sending: no test may reach a model server.
    run(["cache", "import", str(Path("results") / PROFILE / "responses.jsonl.gz")])
    run(_make_paper_argv(paper_line), DELIBERATION_NO_SEND="1")
    assert _git(repo, "status", "--porcelain", "--untracked-files=all") == ""
    rebuilt = repo / "build" / "outputs" / "tables" / PROFILE / "smoke_arithmetic.csv"
    committed = repo / "tables" / PROFILE / "smoke_arithmetic.csv"
    assert rebuilt.read_bytes() == committed.read_bytes()  # the same answers, the same table
