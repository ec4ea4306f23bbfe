"""Every Sphinx-style reference in the library's docstrings and comments (``:func:`...```,
``:class:``, ``:meth:``, ``:mod:``, ``:data:``, ``:attr:``, ``:exc:``) names something that
exists, so a docstring never sends a reader to a function that was renamed or removed."""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path
from types import ModuleType

import pytest

import deliberation

ROOT = Path(deliberation.__file__).parent
ROLE = re.compile(r":(func|class|meth|mod|data|attr|exc):`~?([^`]+)`")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _lookup(dotted: str) -> bool:
    """Whether ``dotted`` is a module, or an attribute path inside the longest importable one."""
    pieces = dotted.split(".")
    for cut in range(len(pieces), 0, -1):
        try:
            found: object = importlib.import_module(".".join(pieces[:cut]))
        except ImportError:
            continue
        try:
            for attribute in pieces[cut:]:
                found = getattr(found, attribute)
        except AttributeError:
            continue
        return True
    return False


def resolves(target: str, module: ModuleType, role: str) -> bool:
    """``target`` as Sphinx would read it from ``module``: absolute, relative to the package
    (``.sibling.name``), a name in the module, or (``:meth:``/``:attr:``) a member of one of
    the module's classes, as written inside that class's docstring."""
    target = target.removesuffix("()")
    package = module.__name__ if hasattr(module, "__path__") else module.__name__.rpartition(".")[0]
    if target.startswith("."):
        return _lookup(package + target)
    if _lookup(target) or _lookup(f"{module.__name__}.{target}"):
        return True
    if role in ("meth", "attr"):
        classes = [c for _, c in inspect.getmembers(module, inspect.isclass)]
        return any(hasattr(c, target.split(".")[-1]) for c in classes)
    return False


def broken_references(path: Path) -> list[str]:
    name = _module_name(path)
    module = importlib.import_module(name)
    text = path.read_text()
    return [
        f"{path.relative_to(ROOT)}:{text[: m.start()].count(chr(10)) + 1} :{m[1]}:`{m[2]}`"
        for m in ROLE.finditer(text)
        if not resolves(m[2].strip(), module, m[1])
    ]


MODULES = [p for p in sorted(ROOT.rglob("*.py")) if p.name != "__main__.py"]


@pytest.mark.parametrize("path", MODULES, ids=[str(p.relative_to(ROOT)) for p in MODULES])
def test_docstring_references_name_what_exists(path):
    assert broken_references(path) == []


def test_the_check_finds_a_reference_to_nothing():
    from deliberation.inference import generation

    assert resolves("deliberation.inference.generation.generation_settings", generation, "func")
    assert resolves(".cache.request_key", generation, "func")
    assert not resolves("deliberation.inference.generation.stage_settings", generation, "func")
    assert not resolves("no_such_function", generation, "func")
