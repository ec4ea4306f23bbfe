"""The README and docs/*.md as a newcomer reads them: every link resolves (file and heading),
every ``deliberation ...`` line parses with the CLI's own parser, every ``make ...`` line names a
target of the Makefile, and the exit-code table is the one :mod:`deliberation.exit_codes` makes."""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from deliberation import exit_codes
from deliberation.cli import COMMANDS, build_parser
from deliberation.io import paths

ROOT = paths.repo_root()
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# Pages other branches write (their links are in the README's index already): a link to one is
# checked like any other once it exists. Empty this set when they are merged.
PENDING: set[str] = set()
# Commands other branches add, named in those pages: excused only while they do not exist.
PENDING_COMMANDS: dict[str, str] = {}
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
INLINE = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
# Placeholders the docs write in a command's synopsis, and a value each parses as.
PLACEHOLDERS = {"N": "1", "URL": "http://127.0.0.1:8000/v1"}


def _rel(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = heading.strip().lower().replace("`", "")
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return {_slug(m) for m in re.findall(r"^#+ (.+)$", text, re.M)}


def _links() -> list[tuple[str, str]]:
    found = []
    for page in PAGES:
        text = FENCE.sub("", page.read_text(encoding="utf-8"))
        found += [(_rel(page), target) for target in LINK.findall(text)]
    return found


@pytest.mark.parametrize(("page", "target"), _links())
def test_every_link_resolves(page, target):
    if re.match(r"[a-z]+:", target):  # http(s), mailto: not fetched here
        return
    path, _, anchor = target.partition("#")
    file = (ROOT / page).parent / path if path else ROOT / page
    file = file.resolve()
    assert file.is_relative_to(ROOT), f"{page}: {target} leaves the repository"
    if _rel(file) in PENDING and not file.exists():
        return
    assert file.exists(), f"{page}: link {target!r}: no file {_rel(file)}"
    if anchor:
        assert anchor in _anchors(file), f"{page}: link {target!r}: no heading #{anchor}"


def _command_lines() -> list[tuple[str, str]]:
    """Every ``deliberation ...`` and ``make ...`` line of the pages: fenced shell lines (with
    their continuations, comments cut) and inline code spans."""
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for lang, body in FENCE.findall(text):
            if lang not in ("bash", "sh", "console", ""):
                continue
            for line in body.replace("\\\n", " ").splitlines():
                line = re.sub(r"\s#.*$", "", line).strip()
                line = re.sub(r"^([A-Z_]+=\S+\s+)+", "", line)  # VAR=value before the command
                if line.startswith(("deliberation ", "make ")) or line in ("deliberation", "make"):
                    found.append((_rel(page), line))
        for span in INLINE.findall(FENCE.sub("", text)):
            span = re.sub(r"^([A-Z_]+=\S+\s+)+", "", span.replace("\\|", "|"))
            if re.match(r"(deliberation|make)( |$)", span):
                found.append((_rel(page), span))
    return sorted(set(found))


def _synopsis_to_argv(line: str) -> list[str]:
    """A synopsis as one command line: the first of each choice (``a|b``, ``[x | y]``), the
    optional parts taken, ``...`` dropped, placeholders given a value of their type."""
    line = re.sub(r"\[([^\[\]]*?) \| [^\[\]]*\]", r"\1", line)
    tokens = []
    for token in shlex.split(line.replace("[", " ").replace("]", " ")):
        if token in ("...", "|"):
            continue
        if "|" in token and not token.startswith(("-", '"')):
            token = token.split("|")[0]
        tokens.append(PLACEHOLDERS.get(token, token))
    return tokens


def _makefile_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    return set(re.findall(r"^([a-z][\w-]*):", text, re.M))


COMMAND_LINES = _command_lines()


def test_the_pages_hold_command_lines():
    """The extractor finds what the quick starts write (so an empty list cannot pass)."""
    lines = {line for _, line in COMMAND_LINES}
    assert "make paper" in lines and "deliberation --help" in lines
    assert "deliberation replies --profile sim --invalid-first" in lines


def _names_a_command(words: list[str]) -> bool:
    """Whether ``words`` (``["run", "crossprofile"]``) name an existing (sub)command: prose such
    as "(`deliberation report`)" names one without giving its arguments. A ``<name>`` ends it."""
    if "..." in words:
        words = words[: words.index("...")]
    parser = build_parser()
    for word in words:
        if word.startswith("<"):
            return True
        groups = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not re.fullmatch(r"[a-z][a-z-]*", word) or not groups or word not in groups[0].choices:
            return False
        parser = groups[0].choices[word]
    return True


def _pending(line: str) -> bool:
    name = next((n for c, n in PENDING_COMMANDS.items() if line.startswith(c)), None)
    if name is None:
        return False
    return name not in _makefile_targets() and name not in COMMANDS


@pytest.mark.parametrize(("page", "line"), COMMAND_LINES)
def test_every_command_line_parses(page, line):
    if _pending(line):
        return
    argv = _synopsis_to_argv(line)
    if argv[0] == "make":
        targets = [a for a in argv[1:] if "=" not in a and not a.startswith("-")]
        unknown = set(targets) - _makefile_targets()
        assert not unknown, f"{page}: `{line}`: no Makefile target {sorted(unknown)}"
        return
    if argv[1:] in (["COMMAND", "--help"],) or _names_a_command(argv[1:]):
        return
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
        try:
            build_parser().parse_args(argv[1:])
        except SystemExit as exit:
            assert exit.code == 0, f"{page}: `{line}` does not parse: {stderr.getvalue()}"


def test_the_synopsis_reader_refuses_a_line_the_cli_would_refuse():
    """The check above can fail: a misspelt option does not parse."""
    with contextlib.redirect_stderr(io.StringIO()), pytest.raises(SystemExit):
        build_parser().parse_args(_synopsis_to_argv("deliberation run crossprofile --polices R1"))
    assert _synopsis_to_argv("deliberation replies --profile P [--only invalid|failed|valid]") == [
        "deliberation", "replies", "--profile", "P", "--only", "invalid"]  # fmt: skip


def test_the_readme_exit_code_table_is_generated_from_exit_codes():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split(exit_codes.EXIT_CODES_BEGIN, 1)[1].split(exit_codes.EXIT_CODES_END)[0]
    assert section.strip() == exit_codes.markdown_table(), (
        "README.md's exit-code table is stale: put deliberation.exit_codes.markdown_table() "
        "between its markers"
    )


def test_the_readme_stays_short():
    """The newcomer's path (what this is, two commands, quick starts, results, links); the
    reference lives in docs/."""
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 250


def _fenced_lines(page: Path, section: str) -> list[str]:
    """The ``deliberation ...`` lines of the shell blocks under heading ``section``."""
    text = page.read_text(encoding="utf-8").split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    lines = []
    for _lang, body in FENCE.findall(text):
        for line in body.replace("\\\n", " ").splitlines():
            line = re.sub(r"\s#.*$", "", line).strip()
            if line.startswith("deliberation "):
                lines.append(line)
    return lines


def test_the_readme_says_how_the_command_gets_on_path():
    """After the first `make`, `.venv/bin/deliberation` exists (the package's console script,
    installed by `make setup` into the venv the README activates)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "source .venv/bin/activate" in readme and ".venv/bin/deliberation" in readme
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert re.search(
        r'^\[project\.scripts\]\ndeliberation = "deliberation\.cli:main"', pyproject, re.M
    )
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^VENV \?= \.venv$", makefile, re.M) and "pip install --quiet -e" in makefile


def test_the_readme_sim_quick_start_runs_as_written(tmp_path):
    """The sim quick start's command lines, run as a newcomer types them (in a scratch build,
    cache and output folder): each exits 0, and the rows land where the README says."""
    lines = _fenced_lines(ROOT / "README.md", "Quick start: the sim (no model)")
    assert "deliberation run crossprofile --profile sim --limit 1" in lines
    env = {
        **os.environ,
        "DELIBERATION_CACHE_DIR": str(tmp_path / "cache"),
        "DELIBERATION_OUTPUT_ROOT": str(tmp_path / "out"),
        "DELIBERATION_BUILD_DIR": str(tmp_path / "build"),
    }
    for line in ["deliberation --help", *lines]:
        done = subprocess.run(
            [sys.executable, "-m", *shlex.split(line)],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, f"`{line}`: exit {done.returncode}\n{done.stderr[-2000:]}"
    assert (tmp_path / "build" / "runs" / "sim" / "crossprofile_rows.csv").exists()
