"""A tool call's arguments checked against the JSON Schema its tool declares, for every kind.

The schema is the one the model was shown (`ToolKind.spec(...).parameters`: a hosted tool's
`parameters` from the agent file, `identify`'s own, an MCP server's `inputSchema`). The engine
checks every call here before its kind carries it out (heddle/loom/tool_steps.py): a violation
is the call's result, a tool error the model reads (`invalid_arguments`, with the path and
the reason), and no host is called or paid. JSON Schema by the dialect the schema names
($schema), 2020-12 when it names none (MCP's default).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jsonschema

MAX_PROBLEM = 300  # what the model reads of a violation


def problem(schema: Mapping[str, Any], arguments: Any) -> str | None:
    """Why `arguments` do not match the tool's parameter schema, or None when they do."""
    try:
        validator_class = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        validator_class.check_schema(schema)
    except jsonschema.SchemaError as exc:
        return f"the tool's parameter schema is invalid: {exc.message}"[:MAX_PROBLEM]
    error = jsonschema.exceptions.best_match(validator_class(schema).iter_errors(arguments))
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path)
    return f"{where or 'arguments'}: {error.message}"[:MAX_PROBLEM]


def invalid_arguments_message(reason: str) -> str:
    """The `invalid_arguments` result's message the model reads."""
    return f"The arguments do not match the tool's parameters: {reason}"
