"""/console/api/workspaces/{ws}/feedback and /evals: end users' ratings (down-rated first) and
the stored eval runs, for the console's Feedback and Evals pages."""

from __future__ import annotations

import datetime as dt

from fastapi import APIRouter, Path, Query, Request

from heddle.console.common import reading, success
from heddle.control import feedback as control

router = APIRouter()
WorkspaceId = Path(max_length=40)


@router.get("/workspaces/{ws}/feedback")
async def list_feedback(request: Request, ws: str = WorkspaceId,
                        rating: str | None = Query(None, pattern="^(up|down)$"),
                        agent: str | None = Query(None, max_length=40), version: int | None = Query(None, ge=1),
                        since: dt.datetime | None = None, limit: int = Query(100, ge=1, le=500)):
    if since is not None and since.tzinfo is None:
        since = since.replace(tzinfo=dt.UTC)
    async with reading(request) as s:
        return success({"items": await control.list_feedback(s, ws, rating=rating, agent=agent, version=version,
                                                             since=since, limit=limit)})


@router.get("/workspaces/{ws}/evals")
async def list_evals(request: Request, ws: str = WorkspaceId, agent: str | None = Query(None, max_length=40)):
    async with reading(request) as s:
        return success({"items": await control.eval_runs(s, ws, agent)})


@router.get("/workspaces/{ws}/evals/{eval_id}")
async def get_eval(request: Request, ws: str = WorkspaceId, eval_id: str = Path(max_length=64)):
    async with reading(request) as s:
        return success(await control.eval_run(s, ws, eval_id))
