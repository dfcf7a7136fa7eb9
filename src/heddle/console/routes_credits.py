"""/console/api/workspaces/{ws}/credits and …/identify (the playground, charged like the API)."""

from __future__ import annotations

from fastapi import APIRouter, Path, Query, Request

from heddle.console.common import reading, success, writing
from heddle.console.schemas import GrantCredits
from heddle.control import credits as control
from heddle.control import identify as identify_control
from heddle.identify.charging import identify_charging
from heddle.identify.schemas import IdentifyRequest

router = APIRouter()
WorkspaceId = Path(max_length=40)


@router.get("/workspaces/{ws}/credits")
async def credits(request: Request, ws: str = WorkspaceId, limit: int = Query(20, ge=1, le=200),
                  before: int | None = Query(None, ge=1)):
    async with reading(request) as s:
        return success(await control.view(s, ws, limit=limit, before=before))


@router.post("/workspaces/{ws}/credits")
async def grant_credits(body: GrantCredits, request: Request, ws: str = WorkspaceId):
    async with writing(request) as s:
        data = await control.grant(s, ws, body.amount)
    return success(data)


@router.post("/workspaces/{ws}/identify")
async def identify(body: IdentifyRequest, request: Request, ws: str = WorkspaceId):
    data = await identify_control.playground(identify_charging(request), ws, body)
    return success(data)
