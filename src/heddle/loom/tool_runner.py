"""Carries out tool calls for the engine: built-in tools in-process, hosted tools over HTTP."""

from __future__ import annotations

from typing import Any

from heddle.loom.lease import Fence
from heddle.loom.models import Run, ToolCall
from heddle.loom.tools import ToolExecution


class DefaultToolRunner:
    def __init__(self, services):
        self.services = services

    async def run_builtin(self, run: Run, call: ToolCall, fence: Fence) -> ToolExecution:
        if call.name == "identify":
            from heddle.identify.for_runs import identify_tool_call

            return await identify_tool_call(self.services, run, call.args or {}, guard=fence.hold)
        return ToolExecution(status="failed", result={"error": {
            "code": "unknown_tool", "message": f"No built-in tool {call.name!r}."}})

    async def run_hosted(self, run: Run, call: ToolCall, definition: dict[str, Any], fence: Fence) -> ToolExecution:
        from heddle.outbound.for_runs import hosted_tool_call

        return await hosted_tool_call(self.services, run, call, definition, fence)
