"""Example: the mint endpoint a caller runs on its own backend for Heddle's direct mode.

Your backend already knows who the browser's user is (its own login session). This endpoint
turns that into a short-lived session token, signed with your private key, that the browser
then sends to Heddle's Loom API as `Authorization: Bearer <token>`. Heddle verifies it with
your public key (the JWKS you pasted into the workspace, or serve at a URL).

The token carries only what this user may do: `sub` is this user (never taken from the
request), `conn` is the connection your backend chose, `exp` is two minutes ahead.

Run it (see README.md for making the key and registering the JWKS with Heddle):

    MINT_PRIVATE_KEY_FILE=keys/private.pem MINT_KID=<kid from jwks.json> \\
    HEDDLE_KEY_ID=key_... APP_SESSION_SECRET=<32+ random bytes> \\
    uvicorn --factory app:app_from_env --port 3000
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from heddle.auth.jwk_keys import PrivateKey, load_private_key, mint_session_token

SESSION_COOKIE = "app_session"
SESSION_MAX_AGE = 8 * 3600
_USER_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@dataclass(frozen=True)
class MintConfig:
    private_key: PrivateKey  # loaded once, not per request
    kid: str  # the `kid` of the matching public key in your JWKS
    alg: str  # ES256 unless your key is RSA
    key_id: str  # your Heddle API key's public id, key_… (NEVER the sk_… secret)
    session_secret: bytes  # signs this app's own login cookie
    ttl: int = 120
    channel: str = "web"  # subjects look like web:<user id>
    connection_id: str | None = None  # the Heddle connection these users' tools live on
    public_jwks: dict[str, Any] | None = None  # served at /.well-known/jwks.json when set
    cookie_secure: bool = True  # False only for plain-http local development

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> MintConfig:
        key_file = Path(environ["MINT_PRIVATE_KEY_FILE"])
        jwks_file = environ.get("MINT_PUBLIC_JWKS_FILE")
        secret = environ["APP_SESSION_SECRET"].encode()
        if len(secret) < 32:
            raise ValueError("APP_SESSION_SECRET must be at least 32 bytes")
        return cls(
            private_key=load_private_key(key_file.read_bytes()),
            kid=environ["MINT_KID"],
            alg=environ.get("MINT_ALG", "ES256"),
            key_id=environ["HEDDLE_KEY_ID"],
            session_secret=secret,
            ttl=int(environ.get("MINT_TTL", "120")),
            connection_id=environ.get("HEDDLE_CONNECTION_ID") or None,
            public_jwks=json.loads(Path(jwks_file).read_text()) if jwks_file else None,
            cookie_secure=environ.get("APP_COOKIE_SECURE", "1") != "0",
        )


# --- this app's own login session: a stand-in for whatever your framework already has ---

def _session_mac(payload: str, secret: bytes) -> str:
    digest = hmac.new(secret, payload.encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def issue_session_cookie(user_id: str, secret: bytes, *, now: float | None = None) -> str:
    """`<user id>.<expiry>.<HMAC>`: tamper-evident, expires after SESSION_MAX_AGE."""
    if not _USER_ID.match(user_id):
        raise ValueError("user ids are 1-64 letters, digits, '_' or '-'")
    payload = f"{user_id}.{int((now or time.time()) + SESSION_MAX_AGE)}"
    return f"{payload}.{_session_mac(payload, secret)}"


def read_session_cookie(value: str | None, secret: bytes, *, now: float | None = None) -> str | None:
    """The user id of a valid, unexpired session cookie; None otherwise."""
    if not value or len(value) > 256 or value.count(".") != 2:
        return None
    user_id, expires, mac = value.split(".")
    expected = _session_mac(f"{user_id}.{expires}", secret)
    if not hmac.compare_digest(mac.encode(), expected.encode()):
        return None
    if not expires.isdigit() or int(expires) < (now or time.time()):
        return None
    return user_id if _USER_ID.match(user_id) else None


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"status": "error", "error": {"code": code, "message": message}},
                        status_code=status, headers={"Cache-Control": "no-store"})


# --- routes ---

async def login(request: Request) -> JSONResponse:
    """DEMO ONLY: trusts the posted user id. Your real login sets your real session."""
    config: MintConfig = request.app.state.config
    try:
        body = await request.json()
        user_id = body["user_id"]
        cookie = issue_session_cookie(user_id, config.session_secret)
    except (ValueError, KeyError, TypeError):
        return _error(400, "invalid_request", 'Send {"user_id": "<1-64 letters/digits/_/->"}.')
    response = JSONResponse({"status": "success", "data": {"user_id": user_id}})
    response.set_cookie(SESSION_COOKIE, cookie, max_age=SESSION_MAX_AGE, httponly=True,
                        secure=config.cookie_secure, samesite="strict")
    return response


async def session_token(request: Request) -> JSONResponse:
    """Mint a Heddle session token for the logged-in user.

    POST (not GET) so no cache or prefetch ever holds a token; the strict SameSite cookie means
    another site cannot make the browser call it with the user's session.
    """
    config: MintConfig = request.app.state.config
    user_id = read_session_cookie(request.cookies.get(SESSION_COOKIE), config.session_secret)
    if user_id is None:
        return _error(401, "unauthorized", "Log in first.")
    subject = f"{config.channel}:{user_id}"
    token = mint_session_token(
        config.private_key, kid=config.kid, alg=config.alg, key_id=config.key_id,
        subject=subject, conn=config.connection_id, ttl=config.ttl,
    )
    return JSONResponse(
        {"status": "success",
         "data": {"token": token, "expires_in": config.ttl, "subject_ref": subject}},
        headers={"Cache-Control": "no-store"},
    )


async def jwks(request: Request) -> JSONResponse:
    """The public keys, for callers who give Heddle a JWKS URI instead of pasting the JWKS."""
    config: MintConfig = request.app.state.config
    if config.public_jwks is None:
        return _error(404, "not_found", "No public JWKS configured.")
    return JSONResponse(config.public_jwks, headers={"Cache-Control": "public, max-age=300"})


def create_app(config: MintConfig) -> Starlette:
    app = Starlette(routes=[
        Route("/login", login, methods=["POST"]),
        Route("/api/heddle/session-token", session_token, methods=["POST"]),
        Route("/.well-known/jwks.json", jwks, methods=["GET"]),
    ])
    app.state.config = config
    return app


def app_from_env() -> Starlette:
    return create_app(MintConfig.from_env())
