"""/console/api/workspaces/{ws}/schedules: every schedule of a workspace (or of one thread), with
pause, resume and delete (issue 45)."""

from __future__ import annotations

from fastapi import APIRouter, Path, Query, Request

from heddle.console.common import reading, success, writing
from heddle.control import schedules as control

router = APIRouter()
WorkspaceId = Path(max_length=40)
ScheduleId = Path(max_length=64)


@router.get("/workspaces/{ws}/schedules")
async def list_schedules(request: Request, ws: str = WorkspaceId, thread: str | None = Query(None, max_length=64)):
    async with reading(request) as s:
        return success(await control.list_schedules(s, ws, thread_id=thread))


@router.post("/workspaces/{ws}/schedules/{schedule_id}/pause")
async def pause_schedule(request: Request, ws: str = WorkspaceId, schedule_id: str = ScheduleId):
    async with writing(request) as s:
        return success(await control.set_paused(s, ws, schedule_id, True))


@router.post("/workspaces/{ws}/schedules/{schedule_id}/resume")
async def resume_schedule(request: Request, ws: str = WorkspaceId, schedule_id: str = ScheduleId):
    async with writing(request) as s:
        return success(await control.set_paused(s, ws, schedule_id, False))


@router.delete("/workspaces/{ws}/schedules/{schedule_id}")
async def delete_schedule(request: Request, ws: str = WorkspaceId, schedule_id: str = ScheduleId):
    async with writing(request) as s:
        return success(await control.delete_schedule(s, ws, schedule_id))
