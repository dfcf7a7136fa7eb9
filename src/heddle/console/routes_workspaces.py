"""/console/api/workspaces…: workspaces, their settings, keys and connections."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Path, Request

from heddle import process_services
from heddle.console.common import ok, policy, reading, success, writing
from heddle.console.schemas import CreateConnection, CreateKey, CreateWorkspace, UpdateWorkspace
from heddle.control import workspaces as control

router = APIRouter()
WorkspaceId = Path(max_length=40)


@router.get("/workspaces")
async def list_workspaces(request: Request):
    async with reading(request) as s:
        return success(await control.list_all(s))


@router.post("/workspaces", status_code=201)
async def create_workspace(body: CreateWorkspace, request: Request):
    async with writing(request) as s:
        data = await control.create(s, body.name, body.credits)
    return ok(data, status_code=201)


def _with_rate_limits(request: Request, data: dict[str, Any]) -> dict[str, Any]:
    """Add `rate_limits`: each limit's effective rule and whether it is the server's default.

    The stored setting reads "default" when the workspace has none of its own, which tells an
    operator nothing about the limit in force; the server's rule is in its settings."""
    server = process_services.settings(request)
    limits = {}
    for name, default in (("per_key", server.rate_limit_per_key), ("per_subject", server.rate_limit_per_subject)):
        own = data.get(f"rate_limit_{name}")
        is_default = own in (None, "default")
        limits[name] = {"value": default if is_default else own, "is_default": is_default}
    return {**data, "rate_limits": limits}


@router.get("/workspaces/{ws}")
async def show_workspace(request: Request, ws: str = WorkspaceId):
    async with reading(request) as s:
        data = await control.show(s, ws)
    return success(_with_rate_limits(request, data))


@router.patch("/workspaces/{ws}")
async def update_workspace(body: UpdateWorkspace, request: Request, ws: str = WorkspaceId):
    async with writing(request) as s:
        data = await control.update(s, ws, body.change(), policy(request, body.dev))
    return success(_with_rate_limits(request, data))


@router.get("/workspaces/{ws}/webhook-deliveries")
async def list_webhook_deliveries(request: Request, ws: str = WorkspaceId,
                                  state: Literal["pending", "delivered", "failed"] | None = None):
    async with reading(request) as s:
        return success(await control.list_webhook_deliveries(s, ws, state=state))


@router.get("/workspaces/{ws}/keys")
async def list_keys(request: Request, ws: str = WorkspaceId):
    async with reading(request) as s:
        return success(await control.list_keys(s, ws))


@router.post("/workspaces/{ws}/keys", status_code=201)
async def create_key(body: CreateKey, request: Request, ws: str = WorkspaceId):
    async with writing(request) as s:
        data = await control.create_key(s, ws, body.mode)
    return ok(data, status_code=201)


@router.delete("/workspaces/{ws}/keys/{key_id}")
async def revoke_key(request: Request, ws: str = WorkspaceId, key_id: str = Path(max_length=40)):
    async with writing(request) as s:
        data = await control.revoke_key(s, key_id, workspace_id=ws)
    return success(data)


@router.get("/workspaces/{ws}/connections")
async def list_connections(request: Request, ws: str = WorkspaceId):
    async with reading(request) as s:
        return success(await control.list_connections(s, ws))


@router.post("/workspaces/{ws}/connections", status_code=201)
async def create_connection(body: CreateConnection, request: Request, ws: str = WorkspaceId):
    async with writing(request) as s:
        data = await control.create_connection(s, ws, body.name, body.base_url, policy(request, body.dev),
                                                body.kind)
    return ok(data, status_code=201)
