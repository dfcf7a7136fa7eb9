"""Carries out tool calls for the engine: built-in tools in-process, hosted tools over HTTP."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from heddle.loom.lease import Fence
from heddle.loom.models import Run, ToolCall
from heddle.loom.tools import ToolExecution

if TYPE_CHECKING:
    from heddle.identify.charging import IdentifyCharging
    from heddle.observability.request_log import RequestLogWriter
    from heddle.outbound.for_runs import HostedTools


class DefaultToolRunner:
    """Receives only what the tools use: paid Identify lookups, the request log (built-in
    calls are logged like API calls) and what a hosted call needs."""

    def __init__(self, identify: IdentifyCharging, request_log: RequestLogWriter | None, hosted: HostedTools):
        self.identify = identify
        self.request_log = request_log
        self.hosted = hosted

    async def run_builtin(self, run: Run, call: ToolCall, fence: Fence) -> ToolExecution:
        if call.name == "identify":
            from heddle.identify.for_runs import identify_tool_call

            return await identify_tool_call(self.identify, self.request_log, run, call.args or {},
                                            guard=fence.hold)
        return ToolExecution(status="failed", result={"error": {
            "code": "unknown_tool", "message": f"No built-in tool {call.name!r}."}})

    async def run_hosted(self, run: Run, call: ToolCall, definition: dict[str, Any], fence: Fence) -> ToolExecution:
        from heddle.outbound.for_runs import hosted_tool_call

        return await hosted_tool_call(self.hosted, run, call, definition, fence)
