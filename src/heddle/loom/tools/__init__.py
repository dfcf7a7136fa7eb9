"""The agent's tools as the model sees them, and which kind of tool carries out each call.

Each kind of tool is an adapter behind `ToolKind` (heddle/loom/tools/base.py): `hosted.py`
(HTTP tools on the caller's backend), `identify.py` (the built-in `identify`). `ask_user` is not
a kind: the engine turns it into a question to the user. A new kind is one module implementing
`ToolKind` plus one line where the process builds its `ToolKinds` (heddle/container.py).
"""

from __future__ import annotations

from typing import Any

from heddle.loom.lease import Fence
from heddle.loom.models import Agent, Run, ToolCall
from heddle.loom.providers.base import ASK_USER_TOOL, ToolSpec
from heddle.loom.tools.base import ToolExecution, ToolKind, failed

__all__ = ["ASK_USER_SPEC", "ToolExecution", "ToolKind", "ToolKinds"]

ASK_USER_SPEC = ToolSpec(
    name=ASK_USER_TOOL,
    description="Ask the user a question and wait for their answer.",
    parameters={"type": "object", "properties": {"question": {"type": "string"}}, "required": ["question"]},
)


class ToolKinds:
    """The tool kinds this process knows, in the order they are asked about an agent's tools."""

    def __init__(self, *kinds: ToolKind):
        self.kinds = kinds
        self._by_kind = {kind.kind: kind for kind in kinds}

    def _declaring(self, tool: dict[str, Any]) -> tuple[ToolKind, str] | None:
        for kind in self.kinds:
            if (name := kind.declares(tool)) is not None:
                return kind, name
        return None

    def specs(self, agent: Agent) -> list[ToolSpec]:
        """The tools offered to the model: ask_user, then the agent's own."""
        specs = [ASK_USER_SPEC]
        for tool in agent.tools:
            if (found := self._declaring(tool)) is not None:
                specs.append(found[0].spec(tool))
        return specs

    def definition(self, agent: Agent, name: str) -> dict[str, Any] | None:
        """What a call of the agent's tool `name` records (`kind` first); None if it has none."""
        if name == ASK_USER_TOOL:
            return {"kind": "ask"}
        for tool in agent.tools:
            found = self._declaring(tool)
            if found is not None and found[1] == name:
                return found[0].definition(tool)
        return None

    def parameters(self, agent: Agent, name: str) -> dict[str, Any] | None:
        """The JSON Schema the agent's tool `name` declares for its arguments (as the model sees
        it), or None when it has none; every call's arguments are checked against it first."""
        for tool in agent.tools:
            found = self._declaring(tool)
            if found is not None and found[1] == name:
                return found[0].spec(tool).parameters
        return None

    def of(self, call: ToolCall) -> ToolKind | None:
        return self._by_kind.get(call.kind)

    async def execute(self, run: Run, call: ToolCall, definition: dict[str, Any], fence: Fence) -> ToolExecution:
        kind = self.of(call)
        if kind is None:
            return failed("unknown_tool", f"No tool {call.name!r} of kind {call.kind!r} on this server.")
        return await kind.execute(run, call, definition, fence)
