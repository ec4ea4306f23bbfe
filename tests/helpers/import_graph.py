"""The library's import graph, every import counted (also one inside a function): read by the
import-cycle tests and by tests of what a module may import."""

from __future__ import annotations

import ast
from pathlib import Path

import deliberation

ROOT = Path(deliberation.__file__).parent


def module_names(root: Path = ROOT) -> dict[str, Path]:
    """Dotted name -> file for every module of the package under ``root``."""
    names = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the library modules it imports (``from a import b`` counts as a.b when b is a
    module). Importing a submodule also runs its packages' ``__init__``; that is not an edge,
    or every package whose ``__init__`` re-exports a submodule would be a cycle."""
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    source = ".".join([*parts, *([node.module] if node.module else [])])
                else:
                    source = node.module or ""
                for alias in node.names:
                    submodule = f"{source}.{alias.name}"
                    targets.append(submodule if submodule in modules else source)
            graph[name].update(t for t in targets if t in modules and t != name)
    return graph
