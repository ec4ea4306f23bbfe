"""Read CrossProfile template files into typed :class:`~.schema.Template` records.

Parsing problems come back as :class:`~.errors.Violation` records naming the file and the
fact or field (malformed YAML names the line), so the verifier can report every file at once.
This module only parses; :func:`deliberation.benchmarks.crossprofile.verifier.load_bank` loads and
verifies a whole bank.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from deliberation.benchmarks.crossprofile.errors import TemplateError, Violation
from deliberation.benchmarks.crossprofile.schema import Template
from deliberation.io import paths
from deliberation.io.yaml_errors import describe_yaml_error, load_strict, yaml_error_location

_TEMPLATE_SUFFIXES = (".yaml", ".yml")


def bank_dir() -> Path:
    """The shipped bank: ``templates/crossprofile/``."""
    return paths.templates_dir() / "crossprofile"


def display_name(path: Path) -> str:
    """How a file is named in messages: relative to the cwd when inside it, else as given."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def template_files(paths_or_dirs: Iterable[Path]) -> list[Path]:
    """Expand directories to their ``*.yaml``/``*.yml`` files (sorted); keep files as given.

    A file named twice (directly and through its folder) is listed once.
    """
    found: dict[Path, Path] = {}
    for p in map(Path, paths_or_dirs):
        if p.is_dir():
            files = sorted(f for f in p.iterdir() if f.suffix in _TEMPLATE_SUFFIXES)
        else:
            files = [p]
        for f in files:
            found.setdefault(f.resolve(), f)
    return list(found.values())


def _yaml_problem(name: str, exc: yaml.YAMLError) -> Violation:
    return Violation(name, yaml_error_location(exc), f"malformed YAML: {describe_yaml_error(exc)}")


_MESSAGES = {
    "missing": "missing required field",
    "extra_forbidden": "unknown field (not part of the template format)",
    "tuple_type": "should be a list",
}


def _where(loc: tuple[Any, ...], raw: Any) -> str:
    """Turn a pydantic error location into ``s4.polarity`` or ``options[1]``."""
    if len(loc) >= 2 and loc[0] == "facts" and isinstance(loc[1], int):
        index = loc[1]
        rest = [str(p) for p in loc[2:] if p not in ("support", "decoy", "irrelevant")]
        facts = raw.get("facts") if isinstance(raw, dict) else None
        fact = facts[index] if isinstance(facts, list) and index < len(facts) else None
        fact_id = fact.get("id") if isinstance(fact, dict) else None
        head = str(fact_id) if isinstance(fact_id, str) and fact_id else f"facts[{index}]"
        return ".".join([head, *rest])
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "template"


def parse_template(text: str, name: str) -> tuple[Template | None, list[Violation]]:
    """Parse one template's YAML text; return the record or the violations (never raises)."""
    try:
        raw = load_strict(text)
    except yaml.YAMLError as exc:
        return None, [_yaml_problem(name, exc)]
    if not isinstance(raw, dict):
        kind = "empty" if raw is None else type(raw).__name__
        return None, [Violation(name, "template", f"expected a mapping of fields, got {kind}")]
    try:
        return Template.model_validate(raw), []
    except ValidationError as exc:
        found = []
        for err in exc.errors(include_url=False):
            message = _MESSAGES.get(err["type"], err["msg"])
            message = message.removeprefix("Value error, ")
            found.append(Violation(name, _where(tuple(err["loc"]), raw), message))
        return None, found


def read_template(path: Path) -> tuple[Template | None, list[Violation]]:
    """Read one template file; return the record or the violations (never raises)."""
    name = display_name(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return None, [Violation(name, "file", f"cannot read: {exc}")]
    return parse_template(text, name)


def load_template(path: Path) -> Template:
    """Load one template file, raising :class:`TemplateError` if it does not parse."""
    template, problems = read_template(Path(path))
    if problems or template is None:
        raise TemplateError(problems)
    return template
