"""Relay mode: `Authorization: Bearer sk_…` resolves the workspace."""

from __future__ import annotations

import hmac

from sqlalchemy import Row, bindparam, select
from sqlalchemy.ext.asyncio import AsyncSession

from heddle.auth.context import AuthContext, WorkspaceInfo
from heddle.auth.secrets import hash_secret, is_well_formed_secret
from heddle.errors import HeddleError
from heddle.workspaces.models import ApiKey, Workspace


def workspace_info(ws: Workspace | Row) -> WorkspaceInfo:
    """From a Workspace, or a row of its columns (the relay lookup's)."""
    return WorkspaceInfo(
        id=ws.id, name=ws.name, allowed_origins=tuple(ws.allowed_origins or ()),
        realtime_enabled=ws.realtime_enabled, request_secret=ws.request_secret,
        mint_url=ws.mint_url, balance_micro=ws.balance_micro,
        rate_limit_per_key=ws.rate_limit_per_key, rate_limit_per_subject=ws.rate_limit_per_subject,
    )


# Built once: every authenticated request runs one of these.
KEYS_WITH_WORKSPACE = select(ApiKey, Workspace).join(Workspace, Workspace.id == ApiKey.workspace_id)
# The relay lookup reads plain columns, not ORM objects: no identity map, no unit of work and
# none of the workspace's large columns (its JWKS) for the most frequent statement of the API.
# Table columns (not the mapped attributes), so the session runs it as a Core statement.
_k, _w = ApiKey.__table__.c, Workspace.__table__.c
_KEY_BY_SECRET_HASH = (
    select(_k.id.label("key_id"), _k.secret_hash, _k.revoked_at, _k.mode, _w.id, _w.name, _w.allowed_origins,
           _w.realtime_enabled, _w.request_secret, _w.mint_url, _w.balance_micro, _w.rate_limit_per_key,
           _w.rate_limit_per_subject)
    .join_from(ApiKey.__table__, Workspace.__table__, _w.id == _k.workspace_id)
    .where(_k.secret_hash == bindparam("digest"))
)


async def authenticate_secret(session: AsyncSession, secret: str) -> AuthContext:
    if not is_well_formed_secret(secret):
        raise HeddleError("unauthorized", "The bearer is neither a session token (JWT) nor a "
                          "well-formed workspace secret (sk_live_… or sk_test_…).")
    digest = hash_secret(secret)
    row = (await session.execute(_KEY_BY_SECRET_HASH, {"digest": digest})).first()
    # Compare in constant time even though the lookup was by hash, so that a timing difference
    # never depends on how much of a presented secret matched.
    if row is None or not hmac.compare_digest(row.secret_hash, digest):
        raise HeddleError("unauthorized", "Unknown workspace secret.")
    if row.revoked_at is not None:
        raise HeddleError("unauthorized", f"The API key {row.key_id} was revoked.")
    return AuthContext(mode="relay", workspace=workspace_info(row), key_id=row.key_id, key_mode=row.mode)
