"""Control-plane operations on run webhooks: the workspace endpoint and its delivery log."""

from __future__ import annotations

import secrets
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from heddle.db.base import utcnow
from heddle.timeutil import iso
from heddle.webhooks.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint
from heddle.webhooks.outbox import endpoint_for

__all__ = ["configure", "endpoint_fields", "endpoint_for", "list_deliveries"]
from heddle.workspaces.validation import validate_http_url

DELIVERY_STATES = ("pending", "delivered", "failed")


def new_webhook_secret() -> str:
    return f"whsec_{secrets.token_urlsafe(32)}"


async def configure(session: AsyncSession, workspace_id: str, *, url: str | None = None,
                    rotate_secret: bool = False) -> WebhookEndpoint | None:
    """Set (`url`), remove (`url=""`) or re-key (`rotate_secret`) the workspace's endpoint.

    The secret is made once, when the first URL is set, and kept when only the URL changes
    (a receiver that verifies signatures keeps working). Deliveries already owed go to the
    URL configured at the time of each attempt.
    """
    endpoint = await endpoint_for(session, workspace_id)
    now = utcnow()
    if url is not None and not url.strip():
        if endpoint is not None:
            await session.delete(endpoint)
            await session.flush()
        return None
    if url is not None:
        checked = validate_http_url(url, "webhook_url")
        if endpoint is None:
            endpoint = WebhookEndpoint(workspace_id=workspace_id, url=checked, secret=new_webhook_secret(),
                                       created_at=now, updated_at=now)
            session.add(endpoint)
        else:
            endpoint.url, endpoint.updated_at = checked, now
    if rotate_secret:
        if endpoint is None:
            raise ValueError("--rotate-webhook-secret: the workspace has no webhook URL; set --webhook-url first")
        endpoint.secret, endpoint.updated_at = new_webhook_secret(), now
    await session.flush()
    return endpoint


def endpoint_fields(endpoint: WebhookEndpoint | None, *, reveal_secret: bool) -> dict[str, Any]:
    """The `webhook_url` and `webhook_secret` keys of a workspace's settings."""
    if endpoint is None:
        return {"webhook_url": None, "webhook_secret": None}
    secret = endpoint.secret if reveal_secret else f"{endpoint.secret[:8]}…{endpoint.secret[-4:]}"
    return {"webhook_url": endpoint.url, "webhook_secret": secret}


async def list_deliveries(session: AsyncSession, workspace_id: str, *, limit: int = 20,
                          state: str | None = None) -> list[dict[str, Any]]:
    """The newest deliveries with every attempt, oldest attempt first."""
    if state is not None and state not in DELIVERY_STATES:
        raise ValueError(f"state: must be one of {', '.join(DELIVERY_STATES)}")
    query = select(WebhookDelivery).where(WebhookDelivery.workspace_id == workspace_id)
    if state is not None:
        query = query.where(WebhookDelivery.state == state)
    deliveries = list(await session.scalars(
        query.order_by(WebhookDelivery.created_at.desc(), WebhookDelivery.id.desc()).limit(limit)))
    attempts: dict[str, list[WebhookAttempt]] = {d.id: [] for d in deliveries}
    if deliveries:
        for attempt in await session.scalars(select(WebhookAttempt).where(
                WebhookAttempt.delivery_id.in_(list(attempts))).order_by(WebhookAttempt.id)):
            attempts[attempt.delivery_id].append(attempt)
    return [delivery_dict(d, attempts[d.id]) for d in deliveries]


def delivery_dict(delivery: WebhookDelivery, attempts: list[WebhookAttempt]) -> dict[str, Any]:
    data = delivery.body.get("data") or {}
    return {
        "id": delivery.id, "type": delivery.type, "state": delivery.state,
        # A run's webhook carries the Run; message.feedback a Feedback, which names its run;
        # memory.* a Memory, of no run.
        "run_id": (data.get("id") if delivery.type.startswith("run.")
                   else data.get("run_id") if delivery.type == "message.feedback" else None),
        "attempt_count": delivery.attempt_count, "next_attempt_at": iso(delivery.next_attempt_at),
        "last_error": delivery.last_error, "created_at": iso(delivery.created_at),
        "delivered_at": iso(delivery.delivered_at),
        "attempts": [{"n": a.n, "url": a.url, "started_at": iso(a.started_at), "duration_ms": a.duration_ms,
                      "http_status": a.http_status, "error": a.error} for a in attempts],
    }
