"""Every ``make`` target the README and docs/ name exists, and every ``deliberation`` command its
recipe runs parses with the CLI's own parser (``make -n`` in a scratch copy of the Makefile, with
every optional variable set and without), so a moved module or a renamed option breaks this
test, not a user's recipe. No recipe runs inline Python: a recipe calls the CLI, where tests
reach its logic (the probe: ``make check-real``'s inline ``from deliberation import paths``
failed after the module moved, and nothing noticed)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from deliberation.cli import _resolve_profile, build_parser

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# `make X` in inline code, or a code-block line starting with `make X`.
MENTION = re.compile(r"`make ([a-z][a-z-]*)|^\s*make ([a-z][a-z-]*)", re.MULTILINE)
# Every optional variable a recipe reads, set, so each optional flag is parsed too.
EVERY_VARIABLE = ["PROFILE=smoke", "FORCE=1", "PUBLISH=1", "ONLY=00 07", "NOPOWER=1",
                  "LAB_ARGS=--port 8890 --no-browser"]  # fmt: skip
# A `deliberation` invocation in a recipe line (as `$(PY) -m deliberation` or the script).
INVOCATION = re.compile(r"(?:\S*python\S*\s+-m\s+deliberation|\S*/deliberation)\s+(?P<args>.*)")
SHELL_SEPARATORS = re.compile(r"\s*(?:\|\||&&|;|\|)\s*")


def documented_targets() -> dict[str, list[str]]:
    """target -> the docs naming it."""
    found: dict[str, list[str]] = {}
    for doc in DOCS:
        for match in MENTION.finditer(doc.read_text(encoding="utf-8")):
            found.setdefault(match.group(1) or match.group(2), []).append(doc.name)
    return found


def makefile_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    return set(re.findall(r"^([a-z][a-z-]*):", text, re.MULTILINE))


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> Path:
    """The Makefile and pyproject.toml in a scratch folder, with a venv whose python is this
    interpreter and whose install stamps are current (so `make -n` prints the recipe only)."""
    root = tmp_path_factory.mktemp("make")
    for name in ("Makefile", "pyproject.toml"):
        (root / name).write_text((ROOT / name).read_text())
    (root / "tests").symlink_to(ROOT / "tests")
    venv = root / ".venv" / "bin"
    venv.mkdir(parents=True)
    (venv / "python").write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    (venv / "python").chmod(0o755)
    for stamp in (".setup-stamp", ".lab-stamp", ".llamacpp-stamp"):
        (root / ".venv" / stamp).touch()
    return root


def dry_run(scratch: Path, target: str, *variables: str) -> list[str]:
    done = subprocess.run(
        ["make", "-n", "--no-print-directory", "-C", str(scratch), target, *variables],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, f"make -n {target}: {done.stderr}"
    return done.stdout.replace("\\\n", " ").splitlines()  # continued lines joined


def invocations(lines: list[str]) -> list[list[str]]:
    """The arguments of every `deliberation` command in the printed recipe lines."""
    found = []
    for line in lines:
        for part in SHELL_SEPARATORS.split(line):
            match = INVOCATION.search(part)
            if match:
                found.append(shlex.split(match.group("args")))
    return found


def test_every_target_the_docs_name_is_in_the_makefile() -> None:
    documented, targets = documented_targets(), makefile_targets()
    assert {"paper", "plan", "check-real", "replay", "lab", "test"} <= set(documented)
    missing = {t: docs for t, docs in documented.items() if t not in targets}
    assert not missing, f"docs name make targets the Makefile lacks: {missing}"


@pytest.mark.parametrize("target", sorted(documented_targets()))
def test_each_documented_recipe_calls_the_cli_as_its_parser_reads_it(scratch, target) -> None:
    parser = build_parser()
    seen = 0
    for variables in (EVERY_VARIABLE, ["PROFILE=sim"]):
        lines = dry_run(scratch, target, *variables)
        inline = [line for line in lines if re.search(r"python\S*\s+-c\b", line)]
        assert not inline, f"make {target} runs inline Python (move it into the CLI): {inline}"
        for argv in invocations(lines):
            seen += 1
            try:
                args = parser.parse_args(argv)
            except SystemExit:
                pytest.fail(f"make {target} {' '.join(variables)}: the CLI refuses {argv}")
            _resolve_profile(parser, args)  # a profile flag and its alias merge
    recipe_calls_cli = target not in {"setup", "lint", "unit", "experiments", "notebooks",
                                      "test", "clean", "clean-cache", "contract"}  # fmt: skip
    assert seen or not recipe_calls_cli, f"make {target} calls no deliberation command"


def test_the_recipes_pass_the_optional_flags_they_are_given(scratch) -> None:
    (paper,) = invocations(dry_run(scratch, "paper", *EVERY_VARIABLE))
    assert paper[:3] == ["paper", "--profile", "smoke"]
    assert {"--force", "--publish"} <= set(paper) and paper[-3:] == ["--notebooks", "00", "07"]
    calls = invocations(dry_run(scratch, "check-real", "PROFILE=smoke"))
    assert calls[-1] == ["check-real", "--profile", "smoke"]
    (lab,) = invocations(dry_run(scratch, "lab", *EVERY_VARIABLE))
    assert lab[-1] == "--lab-args=--port 8890 --no-browser"
