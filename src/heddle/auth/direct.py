"""Direct mode: a browser's session token (JWT) resolves the workspace, subject and connection.

Verification itself is `SessionTokenVerifier` (PyJWT, JWKS cache); this module adds what needs
the database and the request: the key lookup, allowed origins and the `conn` claim.
"""

from __future__ import annotations

from fastapi import Request
from sqlalchemy import bindparam, select
from sqlalchemy.ext.asyncio import AsyncSession

from heddle.auth.context import AuthContext
from heddle.auth.relay import KEYS_WITH_WORKSPACE, workspace_info
from heddle.auth.session_tokens import KeyInfo, SessionTokenVerifier
from heddle.db.base import Database
from heddle.errors import HeddleError
from heddle.workspaces.models import ApiKey, Connection, Workspace

# Built once (every direct request runs them).
_KEY_BY_ID = KEYS_WITH_WORKSPACE.where(ApiKey.id == bindparam("key_id"))
_CONNECTION_OF_WORKSPACE = select(Connection.id).where(
    Connection.id == bindparam("conn", type_=Connection.id.type), Connection.workspace_id == bindparam("ws"))


class DirectAuthenticator:
    def __init__(self, db: Database, verifier: SessionTokenVerifier):
        self.db = db
        self.verifier = verifier

    async def __call__(self, request: Request, token: str, read_session: AsyncSession | None = None) -> AuthContext:
        """Verify `token` for this request. Read routes pass their own (read) session; write
        routes pass none, so the key lookup and a possible JWKS fetch use a short session of
        their own and never hold the database's write lock while the JWKS URI answers."""
        if read_session is not None:
            return await self._authenticate(request, token, read_session)
        async with self.db.session() as session:
            return await self._authenticate(request, token, session)

    async def _authenticate(self, request: Request, token: str, session: AsyncSession) -> AuthContext:
        found: dict[str, Workspace] = {}

        async def lookup(key_id: str) -> KeyInfo | None:
            row = (await session.execute(_KEY_BY_ID, {"key_id": key_id})).first()
            # End this read transaction now: the verifier may fetch the workspace's JWKS next,
            # and no pooled connection may wait on a caller's server (one slow jwks_uri would
            # otherwise drain the pool for every workspace). The next query checks one out again.
            await session.commit()
            if row is None:
                return None
            key, ws = row
            found["ws"] = ws
            return KeyInfo(key_id=key.id, workspace_id=ws.id, active=key.active,
                           jwks_uri=ws.jwks_uri, jwks_json=ws.jwks_json)

        claims = await self.verifier.verify(token, key_lookup=lookup)
        ws = found["ws"]
        origin = request.headers.get("origin")
        if origin is not None and origin not in (ws.allowed_origins or []):
            raise HeddleError("origin_not_allowed", f"Origin {origin!r} is not an allowed origin of this "
                              "workspace (heddle workspace update --allowed-origin).")
        if claims.conn is not None:
            conn = await session.scalar(_CONNECTION_OF_WORKSPACE, {"conn": claims.conn, "ws": ws.id})
            if conn is None:
                raise HeddleError("unauthorized", "Session token rejected: `conn` is not a connection of "
                                  "this workspace.")
        return AuthContext(
            mode="direct", workspace=workspace_info(ws), key_id=claims.key_id, subject=claims.subject,
            connection_ref=str(claims.conn) if claims.conn else None, session_token=token,
            session_token_expires_at=claims.expires_at)
