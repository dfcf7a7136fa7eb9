"""The Loom built-in `identify` tool: the same paid lookup, attributed to the run."""

from __future__ import annotations

import time
import uuid

from pydantic import ValidationError

from heddle.errors import HeddleError
from heddle.identify.charging import IdentifyCharging, identify_and_charge
from heddle.identify.schemas import IdentifyRequest
from heddle.loom.models import Run
from heddle.loom.tools import ToolExecution
from heddle.observability.request_log import LoggedRequest, RequestLogWriter


async def identify_tool_call(charging: IdentifyCharging, request_log: RequestLogWriter | None, run: Run,
                             args: dict, guard=None) -> ToolExecution:
    """`guard(session)` runs first in the charge's transaction (the executor's fence check)."""
    started = time.perf_counter()
    status = 200
    try:
        request = IdentifyRequest.model_validate(args)
        data, charged = await identify_and_charge(charging, workspace_id=run.workspace_id, key_id=run.key_id,
                                                  request=request, run_id=run.id, guard=guard)
        return ToolExecution(status="succeeded", result=data, cost_micro=charged, charged=True)
    except ValidationError as exc:
        status = 400
        fields = ", ".join(".".join(str(p) for p in e["loc"]) or "(args)" for e in exc.errors())
        return ToolExecution(status="failed", result={"error": {
            "code": "invalid_request", "message": f"identify arguments are invalid: {fields}"}})
    except HeddleError as exc:
        status = exc.status
        return ToolExecution(status="failed", result={"error": {"code": exc.code, "message": exc.message}})
    finally:
        if request_log is not None:
            request_log.submit(LoggedRequest(
                request_id=uuid.uuid4().hex, method="POST", path="/v1/identify", status=status,
                latency_ms=(time.perf_counter() - started) * 1000, workspace_id=run.workspace_id,
                key_id=run.key_id, auth_mode="internal", run_id=run.id, run_verified=True))
