"""The agent's tools as the model sees them, and which kind of tool carries out each call.

Each kind of tool is an adapter behind `ToolKind` (heddle/loom/tools/base.py): `hosted.py`
(HTTP tools on the caller's backend), `identify.py` (the built-in `identify`), `mcp.py` (the tools
of the caller's MCP servers). `ask_user` is not a kind: the engine turns it into a question to
the user. A new kind is one module implementing `ToolKind` plus one line where the process builds
its `ToolKinds` (heddle/container.py).

A kind whose agent-file entry stands for several tools known only at run time (an `mcp:` entry:
whatever its server lists) also implements `expand`; `ToolKinds.offered` turns such entries into
one entry per tool before the model turn, and the engine reads the turn's tools from that.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from heddle.loom.lease import Fence
from heddle.loom.models import Agent, Run, ToolCall
from heddle.loom.providers.base import ASK_USER_TOOL, ToolSpec
from heddle.loom.tools.base import ToolExecution, ToolKind, failed

__all__ = ["ASK_USER_SPEC", "ToolExecution", "ToolKind", "ToolKinds", "Toolset", "ToolsUnavailable"]

ASK_USER_SPEC = ToolSpec(
    name=ASK_USER_TOOL,
    description="Ask the user a question and wait for their answer.",
    parameters={"type": "object", "properties": {"question": {"type": "string"}}, "required": ["question"]},
)


class ToolsUnavailable(Exception):
    """The run's tools cannot be offered to the model (the run fails with `code`)."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code, self.message = code, message


@runtime_checkable
class Expanding(Protocol):
    """A kind whose agent-file entries each stand for the tools a server lists when the run asks."""

    def expands(self, tool: dict[str, Any]) -> bool: ...

    async def expand(self, run: Run, tool: dict[str, Any], index: int) -> list[dict[str, Any]]:
        """One entry per tool (each declared by this kind); raises ToolsUnavailable."""


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
        return self._specs(agent.tools)

    def definition(self, agent: Agent, name: str) -> dict[str, Any] | None:
        """What a call of the agent's tool `name` records (`kind` first); None if it has none
        (nor for a tool only a server's list names: `offered` knows those)."""
        return self._definition(agent.tools, name)

    def _specs(self, entries: list[dict[str, Any]]) -> list[ToolSpec]:
        specs = [ASK_USER_SPEC]
        for tool in entries:
            if (found := self._declaring(tool)) is not None:
                specs.append(found[0].spec(tool))
        return specs

    def _definition(self, entries: list[dict[str, Any]], name: str) -> dict[str, Any] | None:
        if name == ASK_USER_TOOL:
            return {"kind": "ask"}
        for tool in entries:
            found = self._declaring(tool)
            if found is not None and found[1] == name:
                return found[0].definition(tool)
        return None

    async def offered(self, run: Run, agent: Agent) -> Toolset:
        """The agent's tools for this turn of `run`: entries that stand for a server's tools become
        one entry per tool. A name two entries end up with is refused (`tool_name_clash`): the
        model must never reach one tool while the file meant another."""
        entries: list[dict[str, Any]] = []
        origin: dict[str, str] = {}
        for i, tool in enumerate(agent.tools):
            expander = next((k for k in self.kinds if isinstance(k, Expanding) and k.expands(tool)), None)
            for entry in await expander.expand(run, tool, i) if expander else [tool]:
                found = self._declaring(entry)
                if found is None:
                    continue
                name = found[1]
                if name in origin:
                    raise ToolsUnavailable(
                        "tool_name_clash",
                        f"Tool {name!r} is offered by both {origin[name]} and tools.{i} of the agent.",
                    )
                origin[name] = f"tools.{i}"
                entries.append(entry)
        return Toolset(self, entries)

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


class Toolset:
    """The tools one model turn offers: specs for the model, and what a call of each records."""

    def __init__(self, kinds: ToolKinds, entries: list[dict[str, Any]]):
        self._kinds, self._entries = kinds, entries

    def specs(self) -> list[ToolSpec]:
        return self._kinds._specs(self._entries)

    def definition(self, name: str) -> dict[str, Any] | None:
        return self._kinds._definition(self._entries, name)
