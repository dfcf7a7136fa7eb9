"""Which tool names may be offered to a model, and how many tools and schema bytes one turn may carry.

The model providers refuse a request whose tool names do not match `^[a-zA-Z0-9_-]{1,64}$`
(OpenAI's and Anthropic's rule), and a name that two tools share lets the model reach one tool
while the agent file meant another. Names come from the agent file (checked when it is saved),
and from MCP servers at run time (unchecked until here): a server may list `ask_user`, an empty
name, a 300-character one, one with a space, `<script>` or a NUL.

`screen` keeps the entries whose names may be offered and reports each other one (its name,
shortened and escaped for the trace, where it came from and why): the run goes on with the
rest, and the turn's trace (`request.refused_tools`, shown by the console) says what was left
out. Built-in names are reserved whatever the source: an MCP tool called `ask_user` is refused,
never offered beside the built-in one; a clash never lets the model reach a tool the agent file
did not mean.

`within_turn_limits` is the other half of what a turn may offer: at most `max_tools` tools and
`max_schema_bytes` of their parameters' JSON, past which the run fails with
`tools_over_turn_limit` instead of sending (and billing) an input that large to the model.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from heddle.loom.providers.base import ASK_USER_TOOL

NAME_RULE = re.compile(r"[a-zA-Z0-9_-]{1,64}")
# Built-in tools, offered or planned: never a name another source may take.
RESERVED_NAMES = frozenset({ASK_USER_TOOL, "identify", "remember", "forget", "schedule_followup",
                            "respond"})  # respond: a structured reply (providers/output.py)
MAX_REPORTED_NAME = 80  # characters of a refused name kept in the trace


@dataclass(frozen=True, slots=True)
class RefusedTool:
    """A tool left out of a turn: its name as the trace shows it, its source, and why."""

    name: str
    source: str
    reason: str  # "invalid_name" | "reserved_name" | "tool_name_clash"

    def as_dict(self) -> dict[str, str]:
        return {"name": self.name, "source": self.source, "reason": self.reason}


def name_problem(name: Any) -> str | None:
    """Why `name` may not be offered to a model ("invalid_name"), or None."""
    if not isinstance(name, str) or NAME_RULE.fullmatch(name) is None:
        return "invalid_name"
    return None


def shown(name: Any) -> str:
    """A refused name as the trace may hold it: escaped (a NUL, a control character, markup) and
    shortened."""
    text = json.dumps(name if isinstance(name, str) else str(name), ensure_ascii=True)[1:-1]
    return text if len(text) <= MAX_REPORTED_NAME else text[: MAX_REPORTED_NAME - 1] + "…"


def screen(
    candidates: Iterable[tuple[str, str, str, Any]],
) -> tuple[list[Any], list[RefusedTool]]:
    """The entries that may be offered, in order, and those refused.

    `candidates` are `(name, source, origin, entry)`, `origin` one of "builtin" (Heddle's own
    tools, the only ones that may use a reserved name), "file" (a tool the agent file writes
    down) or "listed" (a tool a server listed at run time). A name must match `NAME_RULE`; a
    reserved name from any other source is refused. A name the file gives twice is refused
    when the file is saved; a listed name that a built-in or the file already gives is refused
    (the file's tool keeps it: a server adding a tool never displaces one the file meant), and
    a name two listed tools share is refused for both (neither is the one the file meant)."""
    claimed = {ASK_USER_TOOL}  # the engine offers ask_user to every agent
    claimed |= {name for name, _, origin, _ in candidates if origin != "listed" and name_problem(name) is None}
    listed: dict[str, int] = {}
    for name, _, origin, _ in candidates:
        if origin == "listed" and isinstance(name, str):
            listed[name] = listed.get(name, 0) + 1
    kept: list[Any] = []
    refused: list[RefusedTool] = []
    taken: set[str] = set()
    for name, source, origin, entry in candidates:
        reason = name_problem(name)
        if reason is None and origin != "builtin" and name in RESERVED_NAMES:
            reason = "reserved_name"
        if reason is None and (name in taken or (origin == "listed" and (name in claimed or listed[name] > 1))):
            reason = "tool_name_clash"
        if reason is not None:
            refused.append(RefusedTool(shown(name), source, reason))
            continue
        taken.add(name)
        kept.append(entry)
    return kept, refused


def over_turn_limits(
    parameters: Iterable[Any], *, max_tools: int, max_schema_bytes: int
) -> str | None:
    """Why a turn offering tools with these `parameters` schemas is too large, or None (0 = no cap)."""
    schemas = list(parameters)
    if max_tools and len(schemas) > max_tools:
        return f"{len(schemas)} tools are offered, more than the {max_tools} a turn may carry"
    if max_schema_bytes:
        size = sum(len(json.dumps(s, separators=(",", ":"), ensure_ascii=False).encode()) for s in schemas)
        if size > max_schema_bytes:
            return f"the tools' parameters take {size} bytes, more than the {max_schema_bytes} a turn may carry"
    return None
