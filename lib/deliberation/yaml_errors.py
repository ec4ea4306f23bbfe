"""One wording for YAML syntax errors, used by every loader (profiles, templates)."""

from __future__ import annotations

import yaml


def yaml_error_location(exc: yaml.YAMLError) -> str:
    """``line L, column C`` of the problem, or ``yaml`` when PyYAML gives no position."""
    mark = getattr(exc, "problem_mark", None)
    return f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else "yaml"


def describe_yaml_error(exc: yaml.YAMLError) -> str:
    """The problem and, when PyYAML knows it, where the enclosing construct started."""
    problem = getattr(exc, "problem", None) or str(exc)
    context = getattr(exc, "context", None)
    context_mark = getattr(exc, "context_mark", None)
    if context and context_mark is not None:
        return f"{problem} ({context} started at line {context_mark.line + 1})"
    if context:
        return f"{problem} ({context})"
    return problem
