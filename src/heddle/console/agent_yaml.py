"""An agent's definition written back as the YAML agent file an operator edits.

The console edits agents in the format they are written in (YAML, the format `heddle agent
create --file` reads), not as the JSON the API stores. Agents keep no source text, so the file is
rendered from the stored definition: keys in agent-file order, multi-line text as `|` blocks,
unset (null) tool fields left out. Parsing it back (heddle.loom.agent_file) gives the same agent.
"""

from __future__ import annotations

from typing import Any

import yaml

from heddle.loom.agent_file import SCHEDULE_ENTRY


class _Dumper(yaml.SafeDumper):
    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        # Lists indented under their key ("tools:\n  - builtin: identify"), as people write them.
        super().increase_indent(flow, False)


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _text)


def _tool(tool: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in tool.items() if v is not None}


def agent_yaml(definition: dict[str, Any]) -> str:
    """The agent file of an agent (or of one of its versions) as the console API returns it."""
    tools = definition.get("tools") or []
    data: dict[str, Any] = {"name": definition["name"], "model_class": definition["model_class"],
                            "instructions": definition.get("instructions") or "",
                            "tools": [_tool(t) for t in tools if t != SCHEDULE_ENTRY]}
    if SCHEDULE_ENTRY in tools:  # the built-in schedule_followup is written `schedules: true`
        data["schedules"] = True
    if definition.get("memory"):  # only when the file had a `memory:` section
        data["memory"] = {k: v for k, v in definition["memory"].items() if v is not None}
    if definition.get("output"):  # structured replies: `output: {schema: ...}`
        data["output"] = definition["output"]
    if definition.get("a2a"):  # publishing over A2A (heddle/interop/)
        data["a2a"] = definition["a2a"]
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)
