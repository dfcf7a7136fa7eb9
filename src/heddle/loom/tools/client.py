"""The caller's own front-end tools (AG-UI `tools`), offered for one run and carried out by the caller.

A run started over AG-UI keeps the input's tools in `runs.client_tools`; `ToolKinds.offered`
adds them to the model's tools for that run (screened like a server's listed tools: a name that
clashes with the agent's own is left out). A call of one is not made by Heddle: it waits in
`awaiting_outcome` (so the run pauses, as for a `confirm` tool) until the caller answers it with
the next request's tool message (heddle/interop/agui_start.py -> `post_outcome`), whose content
the model then reads as the call's result.
"""

from __future__ import annotations

from typing import Any

from heddle.loom.lease import Fence
from heddle.loom.models import Run, ToolCall
from heddle.loom.providers.base import ToolSpec
from heddle.loom.states import CALL_AWAITING_OUTCOME
from heddle.loom.tools.base import ToolExecution

KIND = "client"


def entries(run: Run) -> list[dict[str, Any]]:
    """The run's front-end tools as tool entries of this kind (`{"client": name, ...}`)."""
    return [{"client": tool["name"], "description": tool.get("description") or "",
             "parameters": tool.get("parameters") or {"type": "object"}}
            for tool in (run.client_tools or []) if isinstance(tool, dict) and tool.get("name")]


class ClientTool:
    kind = KIND

    def declares(self, tool: dict[str, Any]) -> str | None:
        name = tool.get("client")
        return name if isinstance(name, str) else None

    def spec(self, tool: dict[str, Any]) -> ToolSpec:
        return ToolSpec(name=tool["client"], description=tool.get("description") or "",
                        parameters=tool.get("parameters") or {"type": "object"})

    def definition(self, tool: dict[str, Any]) -> dict[str, Any]:
        return {"kind": KIND}

    def unknown_fate(self, call: ToolCall) -> bool:
        return False  # Heddle makes no call: nothing can be half done

    def stopped(self, call: ToolCall) -> dict[str, Any] | None:
        return None

    async def execute(self, run: Run, call: ToolCall, definition: dict[str, Any], fence: Fence) -> ToolExecution:
        """Nothing to do here: the call waits for the caller's result."""
        return ToolExecution(status=CALL_AWAITING_OUTCOME, result=None)
