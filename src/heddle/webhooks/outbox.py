"""Owing a webhook: a delivery row written in the same transaction as the change it reports.

Because the row commits (or rolls back) with the run's state change, a webhook is owed
exactly when the change happened, and the dispatcher (`dispatcher.py`) can deliver it later,
from any process, after any restart.
"""

from __future__ import annotations

import datetime as dt
import secrets
from typing import Any

from sqlalchemy import bindparam, exists, select

from heddle.db.base import utcnow
from heddle.timeutil import iso
from heddle.webhooks.models import WebhookDelivery, WebhookEndpoint


def new_event_id() -> str:
    return f"evt_{secrets.token_hex(12)}"


_ENDPOINT = select(WebhookEndpoint).where(WebhookEndpoint.workspace_id == bindparam("workspace_id"))
_endpoints = WebhookEndpoint.__table__.c
_HAS_ENDPOINT = select(_endpoints.workspace_id).where(_endpoints.workspace_id == bindparam("workspace_id"))


def has_endpoint_of(workspace_id):
    """Whether the workspace `workspace_id` (a column of the statement it goes in) has a webhook
    endpoint, as an SQL expression: a run's closing UPDATE returns it (heddle/loom/lease.py), so
    asking costs no statement of its own on PostgreSQL."""
    return exists().where(_endpoints.workspace_id == workspace_id)


async def endpoint_for(session, workspace_id: str) -> WebhookEndpoint | None:
    return await session.scalar(_ENDPOINT, {"workspace_id": workspace_id})


async def has_endpoint(session, workspace_id: str) -> bool:
    """Whether the workspace has a webhook endpoint (one plain-column read: every run's end asks)."""
    return await session.scalar(_HAS_ENDPOINT, {"workspace_id": workspace_id}) is not None


def enqueue(session, workspace_id: str, event_type: str, data: dict[str, Any],
            now: dt.datetime | None = None) -> WebhookDelivery:
    """Add a delivery of `{id, type, created_at, data}`; its id is the event id for good."""
    now = now or utcnow()
    event_id = new_event_id()
    delivery = WebhookDelivery(id=event_id, workspace_id=workspace_id, type=event_type, state="pending",
                               body={"id": event_id, "type": event_type, "created_at": iso(now), "data": data},
                               attempt_count=0, next_attempt_at=now, created_at=now)
    session.add(delivery)
    return delivery
