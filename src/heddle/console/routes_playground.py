"""/console/api/…/playground: chat with an agent's draft or saved version as a named test
subject, the run's events live (SSE), and approvals answered in place (heddle/control/playground.py)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Path, Request
from pydantic import BaseModel, ConfigDict, Field

from heddle.api.deps import services
from heddle.console.auth import ConsoleOperator, current_operator
from heddle.console.common import reading, success
from heddle.control import agents as agents_control
from heddle.control import playground as control
from heddle.loom.events_routes import SSE_HEADERS
from heddle.loom.sse import RunEventStream, parse_event_id
from heddle.loom.stream_limits import CountedStreamingResponse

router = APIRouter()
WorkspaceId = Path(max_length=40)


class PlaygroundMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")
    subject: Annotated[str, Field(min_length=1, max_length=200)]
    content: Annotated[str, Field(min_length=1, max_length=32_000)]
    # The editor's unsaved agent file ({"yaml": text} or the JSON object), or a saved version.
    draft: dict[str, Any] | None = None
    version: Annotated[int, Field(ge=1)] | None = None


class PlaygroundApproval(BaseModel):
    model_config = ConfigDict(extra="forbid")
    tool_call_id: Annotated[str, Field(min_length=1, max_length=64)]
    approved: Annotated[bool, Field(strict=True)]
    reason: Annotated[str, Field(max_length=2000)] | None = None


@router.post("/workspaces/{ws}/agents/{agent}/playground", status_code=202)
async def playground_message(body: PlaygroundMessage, request: Request, ws: str = WorkspaceId,
                             agent: str = Path(max_length=40), operator: ConsoleOperator = Depends(current_operator)):
    draft = agents_control.parse_spec(body.draft) if body.draft is not None else None
    svc = services(request)
    async with svc.uow.transaction(workspace_id=ws) as work:
        data = await control.post_message(work, ws, agent, subject=body.subject, content=body.content, draft=draft,
                                          version=body.version, model_classes=svc.registry.names(),
                                          created_by=operator.email)
    return success(data)


@router.post("/workspaces/{ws}/playground/runs/{run_id}/approval")
async def playground_approval(body: PlaygroundApproval, request: Request, ws: str = WorkspaceId,
                              run_id: str = Path(max_length=64)):
    async with services(request).uow.transaction(workspace_id=ws) as work:
        data = await control.answer_approval(work, ws, run_id, body.tool_call_id, body.approved, body.reason)
    return success(data)


@router.get("/workspaces/{ws}/playground/runs/{run_id}/events")
async def playground_events(request: Request, ws: str = WorkspaceId, run_id: str = Path(max_length=64),
                            last_event_id: str | None = Header(None, alias="Last-Event-ID", max_length=20)):
    """The playground run's events as the /v1 stream gives them (the live trace)."""
    async with reading(request) as s:
        run = await control.playground_run(s, ws, run_id)
    svc = services(request)
    stream = RunEventStream(svc.database(), svc.run_events.signals, run.id,
                            parse_event_id(last_event_id, "Last-Event-ID", "header"),
                            heartbeat_seconds=svc.settings.sse_heartbeat_seconds,
                            poll_seconds=svc.settings.sse_poll_seconds)
    return CountedStreamingResponse(stream.events(), media_type="text/event-stream", headers=SSE_HEADERS,
                                    release=lambda: None)
