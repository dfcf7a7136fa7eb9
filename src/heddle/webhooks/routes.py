"""`GET /v1/webhooks/deliveries`: the workspace's newest webhook deliveries and why they failed."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Query

from heddle.api.deps import db_session, workspace_key_auth
from heddle.api.envelope import Page
from heddle.api.operations import WORKSPACE_KEY, operation
from heddle.auth.context import AuthContext
from heddle.webhooks import service
from heddle.webhooks.schemas import DeliveryState, WebhookDelivery

router = APIRouter(prefix="/v1", tags=["workspace"])


@router.get("/webhooks/deliveries", summary="The newest webhook deliveries, each with every attempt",
            **operation(Page[WebhookDelivery], auth=WORKSPACE_KEY))
async def list_webhook_deliveries(auth: AuthContext = Depends(workspace_key_auth),
                                  state: DeliveryState | None = Query(None),
                                  limit: int = Query(20, ge=1, le=100), session=Depends(db_session)):
    items = await service.list_deliveries(session, auth.workspace_id, limit=limit, state=state)
    # Newest first, `limit` of them: an operator's view of what went wrong, not a feed to page through.
    return {"status": "success", "data": {"items": items, "next_cursor": None}}
