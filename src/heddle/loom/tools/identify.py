"""The built-in `identify` tool: the same paid lookup as `POST /v1/identify`, attributed to the run.

The lookup and its price are Identify's (heddle/identify/charging.py); the charge is the run's
(`RunWork.charge`, fenced: an executor that lost the run charges nothing).
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from pydantic import ValidationError
from sqlalchemy.ext.asyncio import AsyncSession

from heddle.errors import HeddleError
from heddle.identify.charging import IdentifyCharging, identify_and_charge
from heddle.identify.schemas import IdentifyRequest
from heddle.loom.lease import Fence
from heddle.loom.models import Run, ToolCall
from heddle.loom.providers.base import ToolSpec
from heddle.loom.states import CALL_SUCCEEDED
from heddle.loom.tools.base import ToolExecution, failed
from heddle.loom.unit_of_work import RunWork
from heddle.observability.request_log import LoggedRequest, RequestLogWriter

IDENTIFY_SPEC = ToolSpec(
    name="identify",
    description=("Identify the financial institution behind an account identifier (BIC, IBAN, US routing "
                 "number, UK sort code, IFSC, Nigerian NUBAN, mobile-money wallet or Ghana bank code)."),
    parameters={"type": "object", "properties": {
        "identifier": {"type": "string"}, "rail": {"type": "string"}, "country": {"type": "string"},
        "account_number": {"type": "string"}}, "required": ["identifier"]},
)


class IdentifyTool:
    """`builtin: identify`. Built-in calls are logged like API calls (the request log)."""

    kind = "builtin"

    def __init__(self, charging: IdentifyCharging, request_log: RequestLogWriter | None):
        self.charging = charging
        self.request_log = request_log

    def declares(self, tool: dict[str, Any]) -> str | None:
        return "identify" if tool.get("builtin") == "identify" else None

    def spec(self, tool: dict[str, Any]) -> ToolSpec:
        return IDENTIFY_SPEC

    def definition(self, tool: dict[str, Any]) -> dict[str, Any]:
        return {"kind": self.kind, "builtin": "identify"}

    def unknown_fate(self, call: ToolCall) -> bool:
        return False  # a lookup has no side effect: it is simply made again

    def stopped(self, call: ToolCall) -> dict[str, Any] | None:
        return None

    async def execute(self, run: Run, call: ToolCall, definition: dict[str, Any], fence: Fence) -> ToolExecution:
        started = time.perf_counter()
        status = 200

        async def charge(session: AsyncSession, amount: int, ref: str) -> None:
            work = RunWork(session, fence=fence)
            await work.hold()  # first: a stale executor is not charged
            await work.charge(run, amount, reason="identify", ref=ref)

        try:
            request = IdentifyRequest.model_validate(call.args or {})
            data, charged = await identify_and_charge(self.charging, workspace_id=run.workspace_id,
                                                      key_id=run.key_id, request=request, charge=charge)
            execution = ToolExecution(status=CALL_SUCCEEDED, result=data, cost_micro=charged, charged=True)
        except ValidationError as exc:
            status = 400
            fields = ", ".join(".".join(str(p) for p in e["loc"]) or "(args)" for e in exc.errors())
            execution = failed("invalid_request", f"identify arguments are invalid: {fields}")
        except HeddleError as exc:
            status = exc.status
            execution = failed(exc.code, exc.message)
        except BaseException:
            # Not recorded (a stale executor, a cancel): the lookup is still logged, by the writer.
            self._log(run, started, status, lambda row: self.request_log.submit(row))
            raise
        # Written with the call's record (loom/tool_steps.py): in the trace before the run ends.
        self._log(run, started, status, execution.logged.append)
        return execution

    def _log(self, run: Run, started: float, status: int, write) -> None:
        if self.request_log is not None:
            write(LoggedRequest(
                request_id=uuid.uuid4().hex, method="POST", path="/v1/identify", status=status,
                latency_ms=(time.perf_counter() - started) * 1000, workspace_id=run.workspace_id,
                key_id=run.key_id, auth_mode="internal", run_id=run.id, run_verified=True))
