"""The tool-call step of a run: carry out the pending calls a model turn asked for, and record them.

The engine (heddle/loom/engine.py) calls `ToolSteps.run` when the run has pending calls. Every
write is a fenced unit of work (heddle/loom/unit_of_work.py): a stale executor records nothing,
and the tool kinds (heddle/loom/tools/) call no host once the fence moved on.
"""

from __future__ import annotations

from typing import Any

from heddle.billing.service import InsufficientCredits
from heddle.errors import HeddleError
from heddle.loom.lease import Fence
from heddle.loom.models import Agent, Run, ToolCall
from heddle.loom.states import (
    CALL_AWAITING_OUTCOME,
    CALL_EVENT_FOR_STATUS,
    CALL_FAILED,
    CALL_PENDING,
    RunFailure,
    StaleExecutor,
)
from heddle.loom.tools import ToolKinds
from heddle.loom.unit_of_work import RunUnitOfWork
from heddle.text import mark_nul_replaced


class ToolSteps:
    def __init__(self, uow: RunUnitOfWork, tools: ToolKinds):
        self.uow = uow
        self.tools = tools

    async def run(self, run: Run, agent: Agent, pending: list[ToolCall], fence: Fence) -> None:
        """Carry out the run's pending calls (`pending` in call order)."""
        await self._run_tool(run, agent, pending[0], fence)

    async def _run_tool(self, run: Run, agent: Agent, call: ToolCall, fence: Fence) -> None:
        definition = self.tools.definition(agent, call.name) or {}
        kind = self.tools.of(call)
        if kind is not None and kind.unknown_fate(call):
            # A previous process started this call and died: its fate is unknown.
            await self._record_tool(run, fence, call, CALL_AWAITING_OUTCOME, {"error": {
                "code": "unknown_fate", "message": "The server stopped during this call; confirm its outcome."}})
            return
        # The tool kind writes its own fenced marks (an in-flight attempt, a charge) and checks
        # the fence before each attempt, so a stale executor calls no tool host.
        try:
            execution = await self.tools.execute(run, call, definition, fence)
        except StaleExecutor:
            stopped = kind.stopped(call) if kind is not None else None
            if stopped is not None:
                await self._record_stopped(run, fence, call, stopped)
            raise
        await self._record_tool(run, fence, call, execution.status, execution.result, execution)

    async def _record_tool(self, run: Run, fence: Fence, call: ToolCall, status: str,
                           result: dict[str, Any] | None, execution=None) -> None:
        """The call's result, in one fenced transaction (`run` and `call` as this step read them)."""
        async with self.uow.transaction(fence=fence, workspace_id=run.workspace_id) as work:
            run_values: dict[str, Any] = {}
            fields: dict[str, Any] = {"result": result}
            if execution is not None:
                fields["patch_ref"] = execution.patch_ref
                if execution.attempts:
                    # This step read the attempts before its own in-flight mark (replaced by the
                    # real attempts); a crashed process's earlier attempts stay in the trace.
                    fields["attempts"] = [*(call.attempts or []), *execution.attempts]
                if execution.connection_id and run.connection_id is None:
                    run_values["connection_id"] = execution.connection_id
                fields["cost_micro"] = execution.cost_micro
                if execution.cost_micro:
                    run_values["cost_micro"] = run.cost_micro + execution.cost_micro
            fields = mark_nul_replaced(fields, call.attempts)  # a host's U+0000, replaced and recorded
            # A call that was in flight when its run was cancelled is still recorded (its side
            # effect may have happened); any other loss of the run stops here (StaleExecutor).
            await work.hold_or_cancelled(**run_values)
            if execution is not None and execution.cost_micro and not execution.charged:
                try:
                    await work.charge(run, execution.cost_micro, reason="tool_call", ref=str(call.id))
                except InsufficientCredits:
                    raise RunFailure("insufficient_credits",
                                     "The workspace could not pay for a tool call.") from None
            # Conditional on the call still being pending: a resolved call never moves back.
            await work.move_call(call.id, CALL_PENDING, CALL_EVENT_FOR_STATUS[status], **fields)

    async def _record_stopped(self, run: Run, fence: Fence, call: ToolCall, result: dict[str, Any]) -> None:
        """A cancel in the middle of a call (between two attempts of an idempotent one) stops it: record that."""
        try:
            await self._record_tool(run, fence, call, CALL_FAILED, result)
        except (StaleExecutor, HeddleError):
            pass  # not cancelled (another executor holds the run), or the call was already settled
