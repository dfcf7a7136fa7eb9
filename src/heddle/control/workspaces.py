"""Workspaces, their settings, API keys and connections, for the CLI and the console."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from heddle.control.errors import OutboundPolicy, invalid, not_found, translated
from heddle.loom import agents as agent_service
from heddle.money import to_credits
from heddle.timeutil import iso
from heddle.webhooks import service as webhook_service
from heddle.workspaces import service as ws_service
from heddle.workspaces.models import ApiKey, Workspace


async def workspace(session: AsyncSession, workspace_id: str) -> Workspace:
    ws = await session.get(Workspace, workspace_id)
    if ws is None:
        raise not_found("workspace", workspace_id)
    return ws


def summary(ws: Workspace) -> dict[str, Any]:
    return {"id": ws.id, "name": ws.name, "balance_credits": to_credits(ws.balance_micro),
            "created_at": iso(ws.created_at)}


async def create(session: AsyncSession, name: str, credits: float = 0) -> dict[str, Any]:
    if credits is None or credits < 0:
        raise invalid("credits", "credits: must not be negative")
    if len(name.strip()) > 200:
        raise invalid("name", "name: at most 200 characters")
    ws = await translated(ws_service.create_workspace(session, name, credits))
    return summary(ws)


async def list_all(session: AsyncSession) -> dict[str, Any]:
    rows = await session.scalars(select(Workspace).order_by(Workspace.created_at.desc(), Workspace.id.desc()))
    return {"items": [summary(ws) for ws in rows]}


async def settings(session: AsyncSession, ws: Workspace, *, reveal_secrets: bool = False,
                   reveal_webhook_secret: bool | None = None) -> dict[str, Any]:
    data = ws_service.workspace_dict(ws, reveal_secret=reveal_secrets)
    endpoint = await webhook_service.endpoint_for(session, ws.id)
    reveal_webhook = reveal_secrets if reveal_webhook_secret is None else reveal_webhook_secret
    data.update(webhook_service.endpoint_fields(endpoint, reveal_secret=reveal_webhook))
    return data


async def show(session: AsyncSession, workspace_id: str) -> dict[str, Any]:
    """`heddle workspace show --json` and `GET /console/api/workspaces/{ws}`: secrets masked."""
    ws = await workspace(session, workspace_id)
    data = await settings(session, ws)
    data["keys"] = [ws_service.key_dict(k) for k in await ws_service.list_keys(session, ws.id)]
    data["connections"] = [ws_service.connection_dict(c) for c in await ws_service.list_connections(session, ws.id)]
    data["agents"] = [{"id": a.id, "name": a.name, "model_class": a.model_class, "version": a.version}
                      for a in await agent_service.list_agents(session, ws.id)]
    return data


@dataclass
class SettingsChange:
    """What to change; None leaves a setting as it is ('' clears a URL)."""

    jwks_uri: str | None = None
    jwks: dict[str, Any] | None = None
    clear_jwks: bool = False  # forget the pasted JWKS (the JWKS URI stays)
    allowed_origins: list[str] | None = None
    mint_url: str | None = None
    realtime: bool | None = None
    rate_limit_per_key: str | None = None
    rate_limit_per_subject: str | None = None
    retention_days: int | None = None
    webhook_url: str | None = None
    rotate_request_secret: bool = False
    rotate_webhook_secret: bool = False


async def update(session: AsyncSession, workspace_id: str, change: SettingsChange,
                 policy: OutboundPolicy, *, reveal_secrets: bool = False) -> dict[str, Any]:
    """Apply `change`; the settings after it. The console reveals a secret only in the answer
    that rotated it; the CLI (`reveal_secrets`) has always printed them here, per the contract."""
    ws = await workspace(session, workspace_id)
    jwks_uri = policy.check("jwks_uri", change.jwks_uri)
    mint_url = policy.check("mint_url", change.mint_url)
    # The webhook URL gets the syntax check only (webhooks/service.py), as before: deliveries
    # apply the network rules of the server that sends them.
    webhook_url = change.webhook_url
    ws = await translated(ws_service.update_workspace(
        session, ws.id, jwks_uri=jwks_uri, jwks_json=change.jwks, allowed_origins=change.allowed_origins,
        mint_url=mint_url, rotate_request_secret=change.rotate_request_secret, realtime=change.realtime,
        rate_limit_per_key=change.rate_limit_per_key, rate_limit_per_subject=change.rate_limit_per_subject,
        retention_days=change.retention_days))
    if change.clear_jwks:
        ws.jwks_json = None
        await session.flush()
    await translated(webhook_service.configure(session, ws.id, url=webhook_url,
                                               rotate_secret=change.rotate_webhook_secret))
    return await settings(session, ws, reveal_secrets=reveal_secrets or change.rotate_request_secret,
                          reveal_webhook_secret=reveal_secrets or change.rotate_webhook_secret)


# --- keys ---

def key_item(key: ApiKey) -> dict[str, Any]:
    return ws_service.key_dict(key)


async def list_keys(session: AsyncSession, workspace_id: str) -> dict[str, Any]:
    ws = await workspace(session, workspace_id)
    keys = await ws_service.list_keys(session, ws.id)
    return {"items": [key_item(k) for k in sorted(keys, key=lambda k: (k.created_at, k.id), reverse=True)]}


async def create_key(session: AsyncSession, workspace_id: str, mode: str = "live") -> dict[str, Any]:
    """The secret appears in this answer only; the database keeps its SHA-256."""
    ws = await workspace(session, workspace_id)
    key, secret = await translated(ws_service.create_key(session, ws.id, mode))
    return {"id": key.id, "secret": secret}


async def revoke_key(session: AsyncSession, key_id: str, *, workspace_id: str | None = None) -> dict[str, Any]:
    key = await session.get(ApiKey, key_id)
    if key is None or (workspace_id is not None and key.workspace_id != workspace_id):
        raise not_found("key", key_id)
    await translated(ws_service.revoke_key(session, key.id))
    return {"id": key.id, "revoked": True}


async def list_webhook_deliveries(session: AsyncSession, workspace_id: str, *, state: str | None = None,
                                  limit: int = 20) -> dict[str, Any]:
    """The newest deliveries with their attempts; a refused destination shows as `failed` with
    its reason in `last_error`."""
    ws = await workspace(session, workspace_id)
    return {"items": await translated(webhook_service.list_deliveries(session, ws.id, limit=limit, state=state))}


# --- connections ---

async def list_connections(session: AsyncSession, workspace_id: str) -> dict[str, Any]:
    ws = await workspace(session, workspace_id)
    return {"items": [ws_service.connection_dict(c) for c in await ws_service.list_connections(session, ws.id)]}


async def create_connection(session: AsyncSession, workspace_id: str, name: str, base_url: str,
                            policy: OutboundPolicy, kind: str = "http") -> dict[str, Any]:
    ws = await workspace(session, workspace_id)
    base_url = policy.check("base_url", base_url) or ""
    conn = await translated(ws_service.create_connection(session, ws.id, name, base_url, kind))
    return {"id": str(conn.id), "name": conn.name, "kind": conn.kind, "base_url": conn.base_url}
