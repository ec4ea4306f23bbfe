"""The ``openai`` SDK's request types, read strictly (imported by the contract tests, not
collected): :func:`unknown_keys` validates a JSON value against one of the SDK's ``TypedDict``
hints with pydantic and lists every key the types do not define, which pydantic's TypedDict
validation would ignore."""

from __future__ import annotations

import collections.abc
import functools
import types
import typing
from typing import Any

import typing_extensions
from pydantic import TypeAdapter, ValidationError

# The SDK spells its types with typing_extensions (its TypedDict is not typing's).
_WRAPPERS = {
    typing.Required, typing.NotRequired, typing.Annotated,
    typing_extensions.Required, typing_extensions.NotRequired, typing_extensions.Annotated,
}  # fmt: skip
_SEQUENCES = {list, collections.abc.Iterable, collections.abc.Sequence, tuple}


@functools.cache
def _adapter(hint: Any) -> TypeAdapter:
    return TypeAdapter(hint)


def _check(value: Any, hint: Any) -> None:
    """pydantic's strict mode: JSON as sent, so "8" is no integer and 1 no string."""
    _adapter(hint).validate_python(value, strict=True)


def _valid(value: Any, hint: Any) -> bool:
    try:
        _check(value, hint)
    except ValidationError:
        return False
    return True


def unknown_keys(value: Any, hint: Any, path: str = "body") -> list[str]:
    """The dotted paths of ``value``'s keys that ``hint`` (an SDK type) does not define.
    Raises ``ValidationError`` when ``value`` is not of the type (pydantic's own check; an
    ``Iterable`` field's items, which pydantic checks only when iterated, are checked here)."""
    origin = typing_extensions.get_origin(hint)
    if origin in _WRAPPERS:
        return unknown_keys(value, typing_extensions.get_args(hint)[0], path)
    if typing_extensions.is_typeddict(hint):
        _check(value, hint)
        fields = typing_extensions.get_type_hints(hint, include_extras=True)
        found = [f"{path}.{key}" for key in value if key not in fields]
        for key, item in value.items():
            if key in fields:
                found += unknown_keys(item, fields[key], f"{path}.{key}")
        return found
    if origin in (typing.Union, types.UnionType):
        members = [m for m in typing.get_args(hint) if _valid(value, m)]
        if not members:
            _check(value, hint)  # raises, naming what was expected
            raise AssertionError(f"{path}: {value!r} validates as {hint} but as no member of it")
        return min((unknown_keys(value, m, path) for m in members), key=len)
    if origin in _SEQUENCES and isinstance(value, list) and typing.get_args(hint):
        (item_hint, *_) = typing_extensions.get_args(hint)
        return [
            k for i, item in enumerate(value) for k in unknown_keys(item, item_hint, f"{path}[{i}]")
        ]
    _check(value, hint)
    return []
