"""How large the library is and how much of it is public: the figures issue 47 tracks.

- lines of ``lib/deliberation/**/*.py``: physical lines (what ``wc -l`` counts) and code lines
  (neither blank nor only a comment; docstrings count as code);
- modules (``.py`` files);
- public top-level names: functions, classes and assigned names at a module's top level (also
  under a top-level ``if``/``try``) whose name has no leading underscore (not counted: functions
  with a decorator, which registers them);
- of those, the ones no other file uses ("own module only") and the ones only tests use;
  and of these two, the ones their own module does not use either (dead, or alive in tests only).

A name counts as used by another file when that file spells it as code: a name, an attribute,
an imported name, or the ``attr`` of a ``"module:attr"`` string (Python files of ``lib/``,
``tests/``, ``benchmarks/``; the code cells of ``notebooks/*.ipynb``; the words of ``Makefile``
and ``pyproject.toml``). Names are matched by spelling, not resolved, so a name that another
module also defines looks used: the two "unused" counts are lower bounds.

With ``duplicates`` on the PATH (the development machines' duplicate finder) its pair count over
``lib/`` is reported too. ``--names`` lists the names behind the two counts.

Usage: ``python benchmarks/bench_code_size.py [--root DIR] [--names]``.
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import re
import shutil
import subprocess
import sys
import tokenize
from dataclasses import dataclass, field
from pathlib import Path

from deliberation.paper.bench import BenchRow, write_rows

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TESTS = ("tests",)


@dataclass
class Module:
    path: Path
    lines: int
    code_lines: int
    public: list[str] = field(default_factory=list)


def _top_level_names(tree: ast.Module) -> list[str]:
    names: list[str] = []
    body = list(tree.body)
    while body:
        node = body.pop(0)
        if isinstance(node, ast.If | ast.Try):
            body[:0] = [*node.body, *getattr(node, "orelse", []), *getattr(node, "finalbody", [])]
            for handler in getattr(node, "handlers", []):
                body[:0] = handler.body
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if not (node.decorator_list and not isinstance(node, ast.ClassDef)):
                names.append(node.name)  # a decorated function is registered: used
        elif isinstance(node, ast.Assign):
            names += [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.append(node.target.id)
    return [n for n in dict.fromkeys(names) if not n.startswith("_")]


def _code_lines(text: str) -> int:
    """Lines holding a token other than a comment, newline or indentation."""
    lines: set[int] = set()
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT}
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type not in skip and token.type != tokenize.ENDMARKER:
            lines.update(range(token.start[0], token.end[0] + 1))
    return len(lines)


def _python_words(text: str) -> set[str]:
    """The names a Python source spells as code (see the module docstring); a name only
    assigned to does not count."""
    words: set[str] = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Store):
            words.add(node.id)
        elif isinstance(node, ast.Attribute):
            words.add(node.attr)
        elif isinstance(node, ast.alias):
            words.update(node.name.split("."))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            value = node.value
            if ":" in value and len(value) < 200 and " " not in value:
                tail = value.rpartition(":")[2]
                if _WORD.fullmatch(tail):
                    words.add(tail)
    return words


def _notebook_words(path: Path) -> set[str]:
    cells = json.loads(path.read_text(encoding="utf-8")).get("cells", [])
    words: set[str] = set()
    for cell in cells:
        if cell.get("cell_type") == "code":
            source = "".join(cell.get("source", []))
            source = "\n".join(
                line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))
            )
            try:
                words |= _python_words(source)
            except SyntaxError:
                words |= set(_WORD.findall(source))
    return words


def _user_files(root: Path) -> list[Path]:
    files = [p for folder in ("lib", "tests", "benchmarks") for p in (root / folder).rglob("*.py")]
    files += sorted((root / "notebooks").glob("*.ipynb"))
    files += [root / name for name in ("Makefile", "pyproject.toml") if (root / name).is_file()]
    return sorted(p for p in files if ".venv" not in p.parts and "build" not in p.parts)


def _words(path: Path) -> set[str]:
    if path.suffix == ".py":
        return _python_words(path.read_text(encoding="utf-8"))
    if path.suffix == ".ipynb":
        return _notebook_words(path)
    return set(_WORD.findall(path.read_text(encoding="utf-8")))


def measure(root: Path) -> dict[str, object]:
    library = root / "lib" / "deliberation"
    modules: list[Module] = []
    for path in sorted(library.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        modules.append(
            Module(
                path.relative_to(library),
                len(text.splitlines()),
                _code_lines(text),
                _top_level_names(ast.parse(text)),
            )
        )
    words = {path: _words(path) for path in _user_files(root)}
    own_only: list[str] = []
    tests_only: list[str] = []
    unused: list[str] = []
    for module in modules:
        own = library / module.path
        others = [(p, w) for p, w in words.items() if p != own]
        for name in module.public:
            users = [p for p, w in others if name in w]
            label = f"{module.path}:{name}"
            if not users:
                own_only.append(label)
            elif all(p.relative_to(root).parts[0] in _TESTS for p in users):
                tests_only.append(label)
            else:
                continue
            if name not in words[own]:
                unused.append(label)
    return {
        "lines": sum(m.lines for m in modules),
        "code_lines": sum(m.code_lines for m in modules),
        "modules": len(modules),
        "public": sum(len(m.public) for m in modules),
        "own_only": own_only,
        "tests_only": tests_only,
        "unused": unused,
    }


def duplicate_pairs(root: Path) -> str | None:
    """The first line of ``duplicates`` over ``lib/`` (its pair count), or None without it."""
    tool = shutil.which("duplicates")
    if tool is None:
        return None
    done = subprocess.run(
        [tool, "--repo", str(root / "lib"), "--seconds", "120"],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip().splitlines()[0] if done.stdout.strip() else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--names", action="store_true", help="list the unused public names")
    parser.add_argument("--rows", help="write this benchmark's rows of the make-bench table here")
    args = parser.parse_args()
    found = measure(args.root)
    duplicates = duplicate_pairs(args.root)
    own_only, tests_only, unused = found["own_only"], found["tests_only"], found["unused"]
    print(f"library lib/deliberation ({args.root})")
    print(f"lines (wc -l)                 {found['lines']}")
    print(f"code lines (no blank/comment) {found['code_lines']}")
    print(f"modules                       {found['modules']}")
    print(f"public top-level names        {found['public']}")
    print(f"  used by no other file       {len(own_only)}")
    print(f"  used by tests only          {len(tests_only)}")
    print(f"  of these, unused in own module {len(unused)}")
    print(f"duplicates over lib/          {duplicates or 'n/a (no duplicates command)'}")
    if args.names:
        listed = (("own module only", own_only), ("tests only", tests_only), ("unused", unused))
        for title, names in listed:
            print(f"\n{title} ({len(names)}):")
            print("\n".join(f"  {n}" for n in names))
    write_rows(
        args.rows,
        [
            BenchRow("library lines (wc -l / code)", f"{found['lines']} / {found['code_lines']}"),
            BenchRow("library modules", str(found["modules"])),
            BenchRow(
                "public top-level names",
                str(found["public"]),
                f"{len(own_only)} used by no other file, {len(tests_only)} by tests only,"
                f" {len(unused)} of these not by their own module",
            ),
            BenchRow("duplicates over lib/", duplicates or "n/a"),
        ],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
