"""JSON schemas as engines and validators need them: a plain-dict copy any engine can serialise,
and a validator in the draft the schema declares.

Its own module because both the request types (``base.StructuredOutput`` checks its schema) and
the structured-output shim (``structured``) need it, and the shim imports the request types.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import jsonschema


def plain_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A deep plain-dict copy (mapping proxies and tuples become dicts and lists), so engines
    that serialise the schema never see a type they cannot encode and never share our object."""

    def plain(value: Any) -> Any:
        if isinstance(value, Mapping):
            return {str(key): plain(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [plain(item) for item in value]
        return value

    return json.loads(json.dumps(plain(schema)))


def schema_validator(schema: Mapping[str, Any]) -> jsonschema.protocols.Validator:
    """A validator for ``schema`` in the draft it declares (latest draft when it declares none);
    raises ``jsonschema.SchemaError`` for a schema that is not valid itself."""
    plain = plain_schema(schema)
    validator_class = jsonschema.validators.validator_for(plain)
    validator_class.check_schema(plain)
    return validator_class(plain)
