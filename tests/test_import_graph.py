"""The library has no import cycles: none between modules, none between its top-level packages
(each experiment package counting as one); and ``inference/`` imports no experiment.

Every import counts, also one inside a function: a lazy import hides a cycle from Python but not
from a reader, who still cannot understand either module without the other.
"""

from __future__ import annotations

from collections.abc import Iterable

from helpers.import_graph import import_graph, module_names

# Imports between top-level packages allowed to close a package cycle: none remain.
DEFERRED_PACKAGE_EDGES: set[tuple[str, str]] = set()

# Module edges allowed to close a cycle: none remain.
DEFERRED_MODULE_EDGES: set[tuple[str, str]] = set()

# The experiments' namespace: each package under it counts as a top-level package in the package
# graph, and `inference/` may import none of them.
EXPERIMENTS = "deliberation.experiments"


def cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components with more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = len(index)
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(sorted(graph[successor]))))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(frozenset(component))
    return found


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The module graph collapsed to the library's top-level modules and packages, each
    experiment package (``deliberation.experiments.<name>``) counting as one of them."""

    def top(name: str) -> str:
        depth = 3 if name.startswith(EXPERIMENTS + ".") else 2
        return ".".join(name.split(".")[:depth])

    collapsed: dict[str, set[str]] = {top(name): set() for name in graph}
    for name, targets in graph.items():
        collapsed[top(name)].update(top(t) for t in targets if top(t) != top(name))
    return collapsed


def _names(components: Iterable[frozenset[str]]) -> list[list[str]]:
    return sorted(sorted(c) for c in components)


def test_no_module_imports_itself_through_others():
    graph = import_graph(module_names())
    for source, target in DEFERRED_MODULE_EDGES:
        graph.get(source, set()).discard(target)
    assert _names(cycles(graph)) == []


def test_no_package_cycle_besides_the_deferred_ones():
    packages = package_graph(import_graph(module_names()))
    for source, target in DEFERRED_PACKAGE_EDGES:
        packages.get(source, set()).discard(target)
    assert _names(cycles(packages)) == []


def test_inference_imports_no_experiment():
    graph = import_graph(module_names())
    reached = {
        target
        for source, targets in graph.items()
        if source.startswith("deliberation.inference")
        for target in targets
    }
    assert sorted(t for t in reached if t.startswith(EXPERIMENTS)) == []


def test_the_check_finds_a_cycle_also_through_a_lazy_import(tmp_path):
    package = tmp_path / "toy"
    package.mkdir()
    (package / "__init__.py").write_text("from toy.a import A\n")
    (package / "a.py").write_text("from toy import b\nA = 1\n")
    (package / "b.py").write_text("def f():\n    from .c import C\n    return C\n")
    (package / "c.py").write_text("import toy.a\nC = 2\n")
    (package / "d.py").write_text("from toy.a import A\n")
    graph = import_graph(module_names(package))
    assert graph["toy"] == {"toy.a"} and graph["toy.d"] == {"toy.a"}
    assert _names(cycles(graph)) == [["toy.a", "toy.b", "toy.c"]]
