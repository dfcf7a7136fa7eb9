"""Control-plane operations on workspaces, API keys and connections (used by the CLI)."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from heddle import ids
from heddle.auth.secrets import hash_secret, secret_hint
from heddle.billing import service as billing
from heddle.db.base import utcnow
from heddle.money import to_credits, to_micro
from heddle.rate_rules import normalise_rule
from heddle.timeutil import iso
from heddle.workspaces.models import ApiKey, Connection, Workspace
from heddle.workspaces.validation import normalise_origin, validate_http_url


class NotFound(LookupError):
    pass


class Conflict(ValueError):
    pass


async def create_workspace(session: AsyncSession, name: str, credits: float = 0) -> Workspace:
    if not name.strip():
        raise ValueError("name: must not be empty")
    ws = Workspace(id=ids.workspace_id(), name=name.strip(), balance_micro=0,
                   request_secret=ids.request_secret(), allowed_origins=[], realtime_enabled=True)
    session.add(ws)
    await session.flush()
    if credits:
        if credits < 0:
            raise ValueError("credits: must not be negative")
        await billing.grant(session, ws.id, to_micro(credits), ref="initial")
    await session.refresh(ws)
    return ws


async def get_workspace(session: AsyncSession, workspace_id: str) -> Workspace:
    ws = await session.get(Workspace, workspace_id)
    if ws is None:
        raise NotFound(f"workspace {workspace_id} not found")
    return ws


async def update_workspace(
    session: AsyncSession, workspace_id: str, *, jwks_uri: str | None = None,
    jwks_json: dict[str, Any] | None = None, allowed_origins: list[str] | None = None,
    mint_url: str | None = None, rotate_request_secret: bool = False,
    realtime: bool | None = None, clear_jwks: bool = False,
    rate_limit_per_key: str | None = None, rate_limit_per_subject: str | None = None,
    retention_days: int | None = None,
) -> Workspace:
    ws = await get_workspace(session, workspace_id)
    if jwks_uri is not None:
        ws.jwks_uri = validate_http_url(jwks_uri, "jwks_uri") if jwks_uri else None
    if jwks_json is not None:
        keys = jwks_json.get("keys") if isinstance(jwks_json, dict) else None
        if not isinstance(keys, list) or not keys:
            raise ValueError("jwks: must be a JSON object with a non-empty `keys` array")
        if any(isinstance(k, dict) and ("d" in k or "k" in k) for k in keys):
            raise ValueError("jwks: contains private or symmetric key material; paste the PUBLIC JWKS")
        ws.jwks_json = jwks_json
    if clear_jwks:
        ws.jwks_json = None
        ws.jwks_uri = None
    if allowed_origins is not None:
        ws.allowed_origins = sorted({normalise_origin(o) for o in allowed_origins})
    if mint_url is not None:
        ws.mint_url = validate_http_url(mint_url, "mint_url") if mint_url else None
    if rotate_request_secret:
        ws.request_secret = ids.request_secret()
    if realtime is not None:
        ws.realtime_enabled = realtime
    # Checked when saved, so a typo is refused here rather than at the next request.
    if rate_limit_per_key is not None:
        ws.rate_limit_per_key = normalise_rule(rate_limit_per_key)
    if rate_limit_per_subject is not None:
        ws.rate_limit_per_subject = normalise_rule(rate_limit_per_subject)
    if retention_days is not None:  # 0 keeps threads for ever (clears the setting)
        if isinstance(retention_days, bool) or not 0 <= retention_days <= 36_500:
            raise ValueError("retention_days: must be a whole number of days from 0 (keep) to 36500")
        ws.retention_days = retention_days or None
    ws.updated_at = utcnow()
    await session.flush()
    return ws


def workspace_dict(ws: Workspace, *, reveal_secret: bool) -> dict[str, Any]:
    secret = ws.request_secret if reveal_secret else f"{ws.request_secret[:5]}…{ws.request_secret[-4:]}"
    return {
        "id": ws.id, "name": ws.name, "balance_credits": to_credits(ws.balance_micro),
        "jwks_uri": ws.jwks_uri, "jwks": ws.jwks_json, "allowed_origins": list(ws.allowed_origins or []),
        "request_secret": secret, "mint_url": ws.mint_url, "realtime": ws.realtime_enabled,
        "rate_limit_per_key": ws.rate_limit_per_key or "default",
        "rate_limit_per_subject": ws.rate_limit_per_subject or "default",
        "retention_days": ws.retention_days,
        "created_at": iso(ws.created_at), "updated_at": iso(ws.updated_at),
    }


async def create_key(session: AsyncSession, workspace_id: str, mode: str = "live") -> tuple[ApiKey, str]:
    if mode not in ("live", "test"):
        raise ValueError("mode: must be live or test")
    await get_workspace(session, workspace_id)
    secret = ids.secret_key(mode)
    key = ApiKey(id=ids.key_id(), workspace_id=workspace_id, mode=mode,
                 secret_hash=hash_secret(secret), secret_hint=secret_hint(secret))
    session.add(key)
    await session.flush()
    return key, secret


async def revoke_key(session: AsyncSession, key_id: str) -> ApiKey:
    key = await session.get(ApiKey, key_id)
    if key is None:
        raise NotFound(f"key {key_id} not found")
    if key.revoked_at is None:
        key.revoked_at = utcnow()
        await session.flush()
    return key


async def list_keys(session: AsyncSession, workspace_id: str) -> list[ApiKey]:
    return list(await session.scalars(
        select(ApiKey).where(ApiKey.workspace_id == workspace_id).order_by(ApiKey.created_at)))


def key_dict(key: ApiKey) -> dict[str, Any]:
    return {"id": key.id, "workspace_id": key.workspace_id, "mode": key.mode,
            "secret_hint": key.secret_hint, "revoked": key.revoked_at is not None,
            "created_at": iso(key.created_at), "revoked_at": iso(key.revoked_at)}


CONNECTION_KINDS = ("http", "mcp")
"""`http`: Heddle's signed-HTTP tool calls; `mcp`: a Model Context Protocol server (its URL)."""


async def create_connection(session: AsyncSession, workspace_id: str, name: str, base_url: str,
                            kind: str = "http") -> Connection:
    await get_workspace(session, workspace_id)
    name = name.strip()
    if not name or len(name) > 100 or not all(c.isalnum() or c in "-_." for c in name):
        raise ValueError("name: 1-100 letters, digits, '-', '_' or '.'")
    if kind not in CONNECTION_KINDS:
        raise ValueError(f"kind: {kind!r} is not one of {', '.join(CONNECTION_KINDS)}")
    conn = Connection(id=uuid.uuid4(), workspace_id=workspace_id, name=name, kind=kind,
                      base_url=validate_http_url(base_url, "base_url"))
    session.add(conn)
    try:
        async with session.begin_nested():
            await session.flush()
    except IntegrityError as exc:
        raise Conflict(f"name: a connection named {name!r} already exists in this workspace") from exc
    return conn


async def list_connections(session: AsyncSession, workspace_id: str) -> list[Connection]:
    return list(await session.scalars(
        select(Connection).where(Connection.workspace_id == workspace_id).order_by(Connection.name)))


async def resolve_connection(session: AsyncSession, workspace_id: str, ref: str) -> Connection | None:
    """A connection of this workspace by UUID or by name."""
    try:
        conn_id = uuid.UUID(ref)
    except ValueError:
        conn_id = None
    query = select(Connection).where(Connection.workspace_id == workspace_id)
    query = query.where(Connection.id == conn_id) if conn_id else query.where(Connection.name == ref)
    return await session.scalar(query)


def connection_dict(c: Connection) -> dict[str, Any]:
    return {"id": str(c.id), "name": c.name, "kind": c.kind, "base_url": c.base_url,
            "created_at": iso(c.created_at)}


async def origin_allowed_anywhere(session: AsyncSession, origin: str) -> bool:
    """Whether any workspace lists exactly this origin (a text prefilter, then an exact check)."""
    from sqlalchemy import Text, cast

    escaped = origin.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    rows = await session.scalars(
        select(Workspace.allowed_origins)
        .where(cast(Workspace.allowed_origins, Text).like(f'%"{escaped}"%', escape="\\")).limit(50))
    return any(origin in (origins or []) for origins in rows)
