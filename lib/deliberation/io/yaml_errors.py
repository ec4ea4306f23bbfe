"""YAML reading shared by every loader (profiles, templates): a safe loader that refuses a key
repeated in one mapping (PyYAML silently keeps the last) and any alias (``*name``), and one
wording for YAML errors.

Aliases are refused rather than capped: no shipped file needs one, and a few lines of nested
aliases (the "billion laughs" shape) expand into billions of values once merged, validated
and hashed. They are found in the event stream, before anything is built."""

from __future__ import annotations

from typing import Any

import yaml

_SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _StrictLoader(_SafeLoader):  # type: ignore[misc, valid-type]
    """Safe YAML loader that rejects a key repeated in one mapping."""


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode, deep: bool = False) -> Any:
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"duplicate key {key!r} (first at line {seen[key] + 1})",
                key_node.start_mark,
            )
        seen[key] = key_node.start_mark.line
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _refuse_aliases(text: str) -> None:
    """Raise a ``yaml.YAMLError`` at the first alias (``*name``, also in ``<<: *name``)."""
    for event in yaml.parse(text, Loader=_StrictLoader):
        if isinstance(event, yaml.AliasEvent):
            raise yaml.composer.ComposerError(
                None,
                None,
                f"YAML alias *{event.anchor} is not allowed (aliases can expand without bound);"
                " write the value out",
                event.start_mark,
            )


def load_strict(text: str) -> Any:
    """Parse YAML like ``yaml.safe_load``, but a repeated key or an alias is a
    ``yaml.YAMLError``."""
    _refuse_aliases(text)
    return yaml.load(text, Loader=_StrictLoader)  # a SafeLoader subclass


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
