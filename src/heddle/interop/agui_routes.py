"""`POST /v1/agui/{agent_id}`: a Heddle agent as an AG-UI agent (docs/interop.md).

The body is AG-UI's `RunAgentInput`; the answer is the AG-UI event stream over SSE. Auth is the
`/v1` Loom auth as it is (relay key plus `Service-Subject`, or a direct session token under its
origin rules). The write (a posted message, an answer, an approval, an outcome) commits before
the stream starts, with its after-commit hooks run before answering (the run is submitted, its
first events published), so a client that disconnects leaves the run going; the same user
message again, or the thread's events, pick it up.
"""

from __future__ import annotations

import json

from fastapi import APIRouter, Request

from heddle.api.deps import services
from heddle.api.operations import LOOM, operation, raw_request_body
from heddle.errors import HeddleError
from heddle.interop import agui_input
from heddle.interop.agui_events import Translator, agui_stream
from heddle.interop.agui_start import start
from heddle.interop.run_follow import follow_run
from heddle.interop.schemas import AgUiRunAgentInput
from heddle.loom.events_routes import SSE_HEADERS
from heddle.loom.stream_limits import CountedStreamingResponse
from heddle.loom.write_request import write_request
from heddle.observability import tracing
from heddle.observability.metrics import process_metrics

router = APIRouter(prefix="/v1/agui", tags=["interop"])

@router.post("/{agent_id}", summary="Run an agent over AG-UI (RunAgentInput in, AG-UI events out)",
             **operation(None, auth=LOOM, headers=("Service-Subject", "Service-Connection"), body=True,
                         request_body=raw_request_body(AgUiRunAgentInput),
                         errors=("subject_required", "agent_not_found", "not_found", "run_active",
                                 "run_not_awaiting_outcome", "run_not_awaiting_approval", "agui_nothing_to_run",
                                 "connection_required", "connection_not_found", "rate_limited"),
                         event_stream=("AG-UI events (`data:` lines, ag-ui-protocol's encoder): RUN_STARTED, "
                                       "TEXT_MESSAGE_*, TOOL_CALL_*, then RUN_FINISHED (success, interrupt or "
                                       "cancelled) or RUN_ERROR; see docs/interop.md")))
async def agui_run(agent_id: str, request: Request):
    try:
        raw = json.loads(await request.body() or b"null")
    except ValueError:
        raise HeddleError("invalid_request", "The body is not JSON.") from None
    body = agui_input.parse(raw)
    ask = agui_input.ask_of(body)
    svc = services(request)
    address = request.client.host if request.client else None
    # No BackgroundTasks: the after-commit hooks run before answering (a streaming response
    # would run them only once the stream ended, and the stream waits for the run).
    with tracing.span("agui.run", {"heddle.interop.protocol": "agui", "gen_ai.agent.id": agent_id[:80]}):
        async with write_request(request) as req:
            # Counted like the run event streams (429 past a cap), before anything is written.
            release = request.app.state.services.streams.acquire(req.auth, address)
            try:
                started = await start(req.work, req.auth, agent_id[:80], body.thread_id, ask)
            except BaseException:
                release()
                raise
    process_metrics(request).interop_requests.labels("agui").inc()
    follow = follow_run(request, started.run_id, started.after)
    translator = Translator(svc.database(), started.run_id, body.thread_id, body.run_id,
                            commits_wake=svc.settings.executor != "queue")
    return CountedStreamingResponse(agui_stream(follow, translator, started.thread_id, told=started.told,
                                                told_answered=started.told_answered),
                                    media_type="text/event-stream", headers=SSE_HEADERS, release=release)
