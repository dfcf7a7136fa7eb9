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
from heddle.loom.memory import tool_entries as memory_tool_entries
from heddle.loom.models import Agent, Run, ToolCall
from heddle.loom.providers.base import ASK_USER_TOOL, ToolSpec
from heddle.loom.tools import client, names
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

    def __init__(self, *kinds: ToolKind, max_tools: int = 0, max_schema_bytes: int = 0, metrics: Any = None):
        self.kinds = kinds
        self.metrics = metrics  # heddle_tools_refused_total
        self.max_tools, self.max_schema_bytes = max_tools, max_schema_bytes  # per turn; 0 = no cap
        self._by_kind = {kind.kind: kind for kind in kinds}

    def _declaring(self, tool: dict[str, Any]) -> tuple[ToolKind, str] | None:
        for kind in self.kinds:
            if (name := kind.declares(tool)) is not None:
                return kind, name
        return None

    @staticmethod
    def entries(agent: Agent) -> list[dict[str, Any]]:
        """The agent file's tools, and the built-ins its `memory:` section adds (loom/memory.py)."""
        return [*agent.tools, *memory_tool_entries(agent)]

    def specs(self, agent: Agent) -> list[ToolSpec]:
        """The tools offered to the model: ask_user, then the agent's own."""
        return self._specs(self.entries(agent))

    def definition(self, agent: Agent, name: str) -> dict[str, Any] | None:
        """What a call of the agent's tool `name` records (`kind` first); None if it has none
        (nor for a tool only a server's list names: `offered` knows those)."""
        return self._definition(self.entries(agent), name)

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
        one entry per tool. Names are screened (heddle/loom/tools/names.py): a name the providers
        refuse, a reserved one, or a server's that clashes is left out and reported in the turn's
        trace (the agent file's own tools keep their names); past the turn's limits on tools and
        schema bytes the run fails (`tools_over_turn_limit`)."""
        candidates: list[tuple[str, str, str, dict[str, Any]]] = []
        for i, tool in enumerate(self.entries(agent)):
            expander = next((k for k in self.kinds if isinstance(k, Expanding) and k.expands(tool)), None)
            source = f"tools.{i}" + (f" (mcp: {tool['mcp']})" if expander else "")
            for entry in await expander.expand(run, tool, i) if expander else [tool]:
                if (found := self._declaring(entry)) is not None:
                    origin = "builtin" if "builtin" in entry else "listed" if expander else "file"
                    candidates.append((found[1], source, origin, entry))
        for entry in client.entries(run):  # the caller's front-end tools for this run (AG-UI)
            if (found := self._declaring(entry)) is not None:
                candidates.append((found[1], "client_tools", "listed", entry))
        entries, refused = names.screen(candidates)
        if self.metrics is not None:
            for r in refused:
                self.metrics.tools_refused.labels(r.reason).inc()
        too_large = names.over_turn_limits((spec.parameters for spec in self._specs(entries)),
                                           max_tools=self.max_tools, max_schema_bytes=self.max_schema_bytes)
        if too_large is not None:
            if self.metrics is not None:
                self.metrics.tools_refused.labels("tools_over_turn_limit").inc()
            raise ToolsUnavailable("tools_over_turn_limit", f"The agent's tools cannot be offered: {too_large}.")
        return Toolset(self, entries, [r.as_dict() for r in refused])

    def parameters(self, agent: Agent, name: str) -> dict[str, Any] | None:
        """The JSON Schema the agent's tool `name` declares for its arguments (as the model sees
        it), or None when it has none; every call's arguments are checked against it first."""
        for tool in self.entries(agent):
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

    def __init__(self, kinds: ToolKinds, entries: list[dict[str, Any]], refused: list[dict[str, str]] | None = None):
        self._kinds, self._entries = kinds, entries
        self.refused = refused or []  # tools left out (names.RefusedTool), for the turn's trace

    def trace(self) -> dict[str, Any]:
        """What the turn's stored request adds about its tools: those left out, if any."""
        return {"refused_tools": self.refused} if self.refused else {}

    def specs(self) -> list[ToolSpec]:
        return self._kinds._specs(self._entries)

    def definition(self, name: str) -> dict[str, Any] | None:
        return self._kinds._definition(self._entries, name)
