"""The tool-call step of a run: carry out the pending calls a model turn asked for, and record them.

The engine (heddle/loom/engine.py) calls `ToolSteps.run` when the run has pending calls. They
run concurrently, at most `HEDDLE_RUN_TOOL_CONCURRENCY` at once; each is its own fenced unit of
work (heddle/loom/unit_of_work.py) and its own `execute_tool` span, so a stale executor records
nothing and the tool kinds (heddle/loom/tools/) call no host once the fence moved on. Results
go back to the model in call order because the history reads calls by `seq`
(heddle/loom/history.py), whatever order they finished in. Calls that wait for a person
(`interaction: approve`) are not pending until approved; a `confirm` call ends in
`awaiting_outcome` and the engine pauses once every pending call is recorded.

Every call's arguments are first checked against the JSON Schema its tool declares (every
kind, heddle/loom/tools/arguments.py, rather than in each kind): a violation is the call's
result, a tool error the model reads (`invalid_arguments`, with the path and reason), and no
host is called or paid.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from sqlalchemy import func

from heddle.billing.service import InsufficientCredits
from heddle.errors import HeddleError
from heddle.loom.charging import tool_call_charge
from heddle.loom.lease import Fence
from heddle.loom.models import Agent, Run, ToolCall
from heddle.loom.states import (
    CALL_AWAITING_OUTCOME,
    CALL_EVENT_FOR_STATUS,
    CALL_FAILED,
    CALL_PENDING,
    CALL_SUCCEEDED,
    RunFailure,
    StaleExecutor,
)
from heddle.loom.tools import ToolExecution, ToolKinds, arguments
from heddle.loom.tools.base import failed
from heddle.loom.unit_of_work import RunUnitOfWork
from heddle.observability import tracing
from heddle.observability.metrics import Metrics
from heddle.observability.request_log import insert_rows
from heddle.text import mark_nul_replaced


def metric_status(status: str, error: dict[str, Any]) -> str:
    """The bounded `status` label of heddle_tool_calls_total for a recorded call."""
    code = str(error.get("code") or "")
    if status == CALL_SUCCEEDED:
        return "ok"
    if status == CALL_AWAITING_OUTCOME:
        return "unknown" if code else "ok"  # a confirm call's answer awaits the caller's outcome
    if code == "invalid_arguments":
        return "refused"
    return "timeout" if "timeout" in code else "error"


class ToolSteps:
    def __init__(self, uow: RunUnitOfWork, tools: ToolKinds, metrics: Metrics, concurrency: int):
        self.uow = uow
        self.tools = tools
        self.metrics = metrics
        self.concurrency = concurrency

    async def run(self, run: Run, agent: Agent, pending: list[ToolCall], fence: Fence) -> None:
        """Carry out the run's pending calls (`pending` in call order), at most `concurrency` at once.

        Every call is seen through (none is cancelled because a sibling failed: its host may
        already be acting on it), then the first failure in call order is raised; a stale
        executor first of all, since nothing more is written once the run is lost.
        """
        if len(pending) == 1:  # the common case: no task, no semaphore
            await self._run_tool(run, agent, pending[0], fence)
            return
        slots = asyncio.Semaphore(self.concurrency)

        async def one(call: ToolCall) -> None:
            async with slots:
                await self._run_tool(run, agent, call, fence)

        outcomes = await asyncio.gather(*(one(call) for call in pending), return_exceptions=True)
        errors = [outcome for outcome in outcomes if isinstance(outcome, BaseException)]
        for error in errors:
            if isinstance(error, StaleExecutor):
                raise error
        if errors:
            raise errors[0]

    async def _run_tool(self, run: Run, agent: Agent, call: ToolCall, fence: Fence) -> None:
        started = time.perf_counter()
        with tracing.tool_span(call.name, kind=call.kind, call_id=call.model_call_id) as span:
            status, result = await self._carry_out(run, agent, call, fence)
            error = result.get("error") if isinstance(result, dict) else None
            error = error if isinstance(error, dict) else {}  # a host's result is any JSON
            label = metric_status(status, error)
            span.set("heddle.tool.status", status)
            if label != "ok":
                span.fail(str(error.get("code") or label), str(error.get("message") or "")[:300] or None)
        self.metrics.tool_calls.labels(call.kind, label).inc()
        self.metrics.tool_call_duration.labels(call.kind).observe(time.perf_counter() - started)

    async def _carry_out(self, run: Run, agent: Agent, call: ToolCall, fence: Fence) -> tuple[str, Any]:
        """Validate, execute and record one call; the status and result recorded."""
        kind = self.tools.of(call)
        if kind is not None and kind.unknown_fate(call):
            # A previous process started this call and died: its fate is unknown.
            result = {"error": {"code": "unknown_fate",
                                "message": "The server stopped during this call; confirm its outcome."}}
            # Charged as the same call settled in its own process would be (loom/charging.py).
            await self._record_tool(run, fence, call, CALL_AWAITING_OUTCOME, result,
                                    ToolExecution(status=CALL_AWAITING_OUTCOME, result=result))
            return CALL_AWAITING_OUTCOME, result
        schema = self.tools.parameters(agent, call.name)
        problem = arguments.problem(schema, call.args or {}) if schema is not None else None
        if problem is not None:
            execution = failed("invalid_arguments", arguments.invalid_arguments_message(problem))
        else:
            # The tool kind writes its own fenced marks (an in-flight attempt, a charge) and
            # checks the fence before each attempt, so a stale executor calls no tool host.
            definition = self.tools.definition(agent, call.name) or {}
            try:
                execution = await self.tools.execute(run, call, definition, fence)
            except StaleExecutor:
                stopped = kind.stopped(call) if kind is not None else None
                if stopped is not None:
                    await self._record_stopped(run, fence, call, stopped)
                raise
        await self._record_tool(run, fence, call, execution.status, execution.result, execution)
        return execution.status, execution.result

    async def _record_tool(self, run: Run, fence: Fence, call: ToolCall, status: str,
                           result: dict[str, Any] | None, execution: ToolExecution | None = None) -> None:
        """The call's result, in one fenced transaction (`run` and `call` as this step read them).

        Sibling calls record concurrently, so the run's columns are written relative to what
        the database holds (`cost_micro + n`), never from the `run` this step read."""
        async with self.uow.transaction(fence=fence, workspace_id=run.workspace_id) as work:
            run_values: dict[str, Any] = {}
            fields: dict[str, Any] = {"result": result}
            cost = 0
            if execution is not None:
                fields["patch_ref"] = execution.patch_ref
                if execution.attempts:
                    # This step read the attempts before its own in-flight mark (replaced by the
                    # real attempts); a crashed process's earlier attempts stay in the trace.
                    fields["attempts"] = [*(call.attempts or []), *execution.attempts]
                if execution.connection_id and run.connection_id is None:
                    run_values["connection_id"] = func.coalesce(Run.connection_id, execution.connection_id)
                cost = execution.cost_micro if execution.charged else tool_call_charge(
                    call.kind, price_micro=getattr(self.tools.of(call), "price_micro", 0),
                    attempts=call.attempts, new_attempts=execution.attempts)
                fields["cost_micro"] = cost
                if cost:
                    run_values["cost_micro"] = Run.cost_micro + cost
            fields = mark_nul_replaced(fields, call.attempts)  # a host's U+0000, replaced and recorded
            # A call that was in flight when its run was cancelled is still recorded (its side
            # effect may have happened); any other loss of the run stops here (StaleExecutor).
            await work.hold_or_cancelled(**run_values)
            if execution is not None and cost and not execution.charged:
                try:
                    await work.charge(run, cost, reason="tool_call", ref=str(call.id))
                except InsufficientCredits:
                    raise RunFailure("insufficient_credits",
                                     "The workspace could not pay for a tool call.") from None
            # Conditional on the call still being pending: a resolved call never moves back.
            await work.move_call(call.id, CALL_PENDING, CALL_EVENT_FOR_STATUS[status], **fields)
            if execution is not None and execution.logged:
                await insert_rows(work.session, execution.logged)  # no commit of its own
            for write in execution.writes if execution is not None else ():
                await write(work)  # the call's own writes (a fact remembered), with its result

    async def _record_stopped(self, run: Run, fence: Fence, call: ToolCall, result: dict[str, Any]) -> None:
        """A cancel in the middle of a call (between two attempts of an idempotent one) stops it: record that."""
        try:
            await self._record_tool(run, fence, call, CALL_FAILED, result)
        except (StaleExecutor, HeddleError):
            pass  # not cancelled (another executor holds the run), or the call was already settled
