"""/console/api/workspaces/{ws}/runs, threads and requests: what ran, and what was called."""

from __future__ import annotations

import datetime as dt

from fastapi import APIRouter, Path, Query, Request

from heddle.console.common import reading, success
from heddle.control import overview as control_overview
from heddle.control import runs as control
from heddle.loom.states import STATES
from heddle.runs_vocabulary import RUN_ORIGINS

router = APIRouter()
WorkspaceId = Path(max_length=40)
STATE_PATTERN = "^(" + "|".join(STATES) + ")$"
Cursor = Query(None, max_length=500)


def _utc(value: dt.datetime | None) -> dt.datetime | None:
    """A time without a zone is read as UTC (every time Heddle returns has one)."""
    if value is not None and value.tzinfo is None:
        return value.replace(tzinfo=dt.UTC)
    return value


@router.get("/workspaces/{ws}/runs")
async def list_runs(request: Request, ws: str = WorkspaceId,
                    state: str | None = Query(None, pattern=STATE_PATTERN),
                    agent: str | None = Query(None, max_length=40),
                    subject: str | None = Query(None, max_length=300),
                    since: dt.datetime | None = None, until: dt.datetime | None = None,
                    updated_after: dt.datetime | None = None,
                    error_code: str | None = Query(None, max_length=64),
                    origin: str | None = Query(None, pattern="^(" + "|".join(RUN_ORIGINS) + ")$"),
                    limit: int = Query(50, ge=1, le=200), cursor: str | None = Cursor):
    f = control.RunFilter(state=state, agent=agent, subject=subject, since=_utc(since), until=_utc(until),
                          updated_after=_utc(updated_after), error_code=error_code, origin=origin, limit=limit,
                          cursor=cursor)
    async with reading(request) as s:
        return success(await control.list_runs(s, ws, f))


@router.get("/workspaces/{ws}/overview")
async def overview(request: Request, ws: str = WorkspaceId, period: str = Query("day", pattern="^(day|week)$")):
    async with reading(request) as s:
        return success(await control_overview.overview(s, ws, period))


@router.get("/workspaces/{ws}/runs/{run_id}")
async def run_detail(request: Request, ws: str = WorkspaceId, run_id: str = Path(max_length=64)):
    async with reading(request) as s:
        return success(await control.run_detail(s, ws, run_id))


@router.get("/workspaces/{ws}/threads")
async def list_threads(request: Request, ws: str = WorkspaceId, agent: str | None = Query(None, max_length=40),
                       subject: str | None = Query(None, max_length=200),
                       limit: int = Query(50, ge=1, le=200), cursor: str | None = Cursor):
    f = control.ThreadFilter(agent=agent, subject=subject, limit=limit, cursor=cursor)
    async with reading(request) as s:
        return success(await control.list_threads(s, ws, f))


@router.get("/workspaces/{ws}/threads/{thread_id}")
async def thread_detail(request: Request, ws: str = WorkspaceId, thread_id: str = Path(max_length=64)):
    async with reading(request) as s:
        return success(await control.thread_detail(s, ws, thread_id))


@router.get("/workspaces/{ws}/requests")
async def list_requests(request: Request, ws: str = WorkspaceId,
                        status: int | None = Query(None, ge=100, le=599),
                        path: str | None = Query(None, max_length=500), since: dt.datetime | None = None,
                        limit: int = Query(50, ge=1, le=200), cursor: str | None = Cursor):
    f = control.RequestFilter(status=status, path=path, since=_utc(since), limit=limit, cursor=cursor)
    async with reading(request) as s:
        return success(await control.list_requests(s, ws, f))
