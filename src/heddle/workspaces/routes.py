"""`GET /v1/workspace`: who am I — the workspace and key behind a workspace secret."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from heddle.api.deps import workspace_key_auth
from heddle.api.operations import WORKSPACE_KEY, operation
from heddle.auth.context import AuthContext
from heddle.money import to_credits
from heddle.workspaces.schemas import Workspace

router = APIRouter(prefix="/v1", tags=["workspace"])


@router.get("/workspace", summary="The calling workspace and key",
            **operation(Workspace, auth=WORKSPACE_KEY))
async def current_workspace(auth: AuthContext = Depends(workspace_key_auth)):
    return {"status": "success", "data": {
        "id": auth.workspace_id, "name": auth.workspace.name,
        "balance_credits": to_credits(auth.workspace.balance_micro),
        "key": {"id": auth.key_id, "mode": auth.key_mode},
        "realtime": auth.workspace.realtime_enabled,
    }}
