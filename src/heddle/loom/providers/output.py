"""Structured replies at the provider boundary: the agent's output schema travels to a provider as
one more `ToolSpec` named `OUTPUT_TOOL`, and each provider asks for it the way it does best:

- OpenAI-compatible: not a tool at all but `response_format: {type: json_schema}`, `strict` when
  the schema meets strict mode's rules (every object closed with `additionalProperties: false`
  and all its properties required), so the reply's content is the JSON text;
- Anthropic: a tool the model must use (`tool_choice: any`, so it may still call the agent's
  tools first); its `input` becomes the reply's text, as JSON;
- `scripted`: a deterministic instance of the schema (`example`).

The engine checks the reply against the schema (loom/structured_output.py); no provider trusts it.
"""

from __future__ import annotations

import json
from typing import Any

from heddle.loom.providers.base import ToolSpec

OUTPUT_TOOL = "respond"  # reserved (loom/tools/names.py): no other tool may take it
OUTPUT_DESCRIPTION = ("Give your final answer to the user with this tool, in exactly this shape, once you "
                      "are done (after any other tool you need).")


def output_spec(schema: dict[str, Any]) -> ToolSpec:
    return ToolSpec(name=OUTPUT_TOOL, description=OUTPUT_DESCRIPTION, parameters=schema)


def split(tools: list[ToolSpec]) -> tuple[list[ToolSpec], dict[str, Any] | None]:
    """The turn's real tools, and the output schema if the turn asks for one."""
    schema = next((t.parameters for t in tools if t.name == OUTPUT_TOOL), None)
    return [t for t in tools if t.name != OUTPUT_TOOL], schema


def strict_ok(schema: Any) -> bool:
    """Whether OpenAI's strict mode accepts the schema as it is (every object closed, all required)."""
    if isinstance(schema, dict):
        if schema.get("type") == "object" or "properties" in schema:
            props = schema.get("properties") or {}
            if schema.get("additionalProperties") is not False or set(schema.get("required") or ()) != set(props):
                return False
        return all(strict_ok(v) for k, v in schema.items() if k not in ("enum", "const", "default", "examples"))
    if isinstance(schema, list):
        return all(strict_ok(v) for v in schema)
    return True


def response_format(schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": "reply", "schema": schema, "strict": strict_ok(schema)}}


_SCALARS = {"string": "example", "integer": 0, "number": 0, "boolean": True, "null": None}


def example(schema: Any, depth: int = 0) -> Any:
    """A deterministic instance of `schema` (the `scripted` model's structured reply)."""
    if not isinstance(schema, dict) or depth > 8:
        return None
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    if "default" in schema:
        return schema["default"]
    for key in ("anyOf", "oneOf", "allOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return example(schema[key][0], depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or "properties" in schema:
        return {name: example(sub, depth + 1) for name, sub in (schema.get("properties") or {}).items()}
    if kind == "array":
        items = [example(schema.get("items") or {}, depth + 1)] * int(schema.get("minItems") or 0)
        return items
    if kind == "string":
        shortest, longest = int(schema.get("minLength") or 0), max(int(schema.get("maxLength") or 64), 1)
        return ("example" * (shortest // 7 + 1))[:longest]
    if kind in ("integer", "number"):
        return schema.get("minimum", schema.get("exclusiveMinimum", -1) + 1 if "exclusiveMinimum" in schema else 0)
    return _SCALARS.get(kind)


def as_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
