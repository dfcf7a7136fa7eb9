"""FastAPI dependencies: database sessions and authentication for each product.

No container here: what a dependency needs comes from the process's services through a typed
accessor (heddle/process_services.py; loom's own in heddle/loom/deps.py)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any

from fastapi import Depends, Request
from sqlalchemy.ext.asyncio import AsyncSession

from heddle import process_services
from heddle.api.headers import from_own_origin
from heddle.api.headers import header as scope_header
from heddle.api.operations import refuse_unknown_query
from heddle.auth.context import AuthContext
from heddle.auth.direct import DirectAuthenticator
from heddle.auth.relay import authenticate_secret
from heddle.auth.session_tokens import looks_like_jwt
from heddle.auth.subjects import subject_from_header
from heddle.errors import HeddleError
from heddle.idempotency.http import claim_key
from heddle.ratelimit.limiter import RateLimiter

_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def services(request: Request) -> Any:
    """The process's shared services, untyped. Only loom's own routes still call this; every
    other handler takes a typed accessor (heddle/process_services.py, `rate_limiter` below,
    identify.charging.identify_charging, loom/deps.py), which names what it depends on."""
    return process_services.of(request)


def rate_limiter(request: Request) -> RateLimiter:
    return process_services.of(request).rate_limiter


def direct_authenticator(request: Request) -> DirectAuthenticator:
    return process_services.of(request).direct_auth


async def db_session(request: Request) -> AsyncIterator[AsyncSession]:
    """For handlers that only read."""
    async with process_services.database(request).session() as session:
        yield session


def header(request: Request, name: bytes) -> str | None:
    return scope_header(request.scope, name)


def _bearer(request: Request) -> str:
    header_value = header(request, b"authorization")
    if not header_value:
        raise HeddleError("unauthorized", "Missing Authorization header (Bearer <credential>).")
    scheme, _, value = header_value.partition(" ")
    value = value.strip()
    if scheme.lower() != "bearer" or not value or " " in value:
        raise HeddleError("unauthorized", "Authorization must be `Bearer <credential>`.")
    if len(value) > 8192:
        raise HeddleError("unauthorized", "The bearer credential is too long.")
    return value


def _publish(request: Request, ctx: AuthContext) -> AuthContext:
    """Expose the caller to the request-log middleware."""
    request.state.workspace_id = ctx.workspace_id
    request.state.key_id = ctx.key_id
    request.state.auth_mode = ctx.mode
    request.state.auth = ctx
    return ctx


async def _admit(request: Request, ctx: AuthContext) -> AuthContext:
    """Publish the caller (the request log records a refused request too), then count the
    request against its key's and subject's rate limits: 429 `rate_limited` before any work."""
    _publish(request, ctx)
    refuse_unknown_query(request)
    run = header(request, b"service-run")
    if run is not None and not _UUID.fullmatch(run):
        # Said, not ignored: a caller who meant to attribute the call learns that it was not.
        raise HeddleError("invalid_request", "Service-Run must be a run id (a UUID).",
                          details=[{"location": "header", "field": "Service-Run", "message": "not a UUID"}])
    await rate_limiter(request).check(ctx)
    return ctx


def client_address(request: Request) -> str | None:
    """The client's address as uvicorn reports it (the proxy's `X-Forwarded-For` when trusted)."""
    return request.client.host if request.client else None


@asynccontextmanager
async def counting_failures(request: Request) -> AsyncIterator[None]:
    """Authenticate inside this: an address past its failed-authentication budget is refused
    first (429), and a 401 raised inside is counted against it (heddle/ratelimit/limiter.py)."""
    limiter = rate_limiter(request)
    address = client_address(request)
    await limiter.check_address(address)
    try:
        yield
    except HeddleError as err:
        if err.status == 401:
            await limiter.count_failure(address)
        raise


async def _relay(request: Request, bearer: str, session: AsyncSession) -> AuthContext:
    # A workspace key from a web page is a leak, except from the server's own pages: /docs
    # "Try it out" with the key pressed into Authorize (docs/decisions.md, issue 30).
    if header(request, b"origin") and not from_own_origin(request.scope):
        raise HeddleError("secret_key_in_browser", "A workspace secret must never be used from a "
                          "browser: mint a short-lived session token on your backend instead.")
    return await authenticate_secret(session, bearer)


async def workspace_key_auth(request: Request) -> AuthContext:
    """Identify and other workspace-key-only endpoints.

    Uses its own short session, released before the handler runs: Identify then opens its own
    sessions (lookup refresh, charge), and holding one connection while waiting for another
    would deadlock the pool under load.
    """
    async with counting_failures(request):
        bearer = _bearer(request)
        if looks_like_jwt(bearer):
            raise HeddleError("unauthorized", "This endpoint accepts only a workspace API key "
                              "(Bearer sk_…), not a session token.")
        async with process_services.database(request).session() as session:
            ctx = await _relay(request, bearer, session)
    return await _admit(request, ctx)


async def loom_auth(request: Request, session: AsyncSession = Depends(db_session)) -> AuthContext:
    """Loom reads: a session token (direct) or a workspace secret with relay headers.

    Authentication runs in the handler's own session (FastAPI gives both the same one), so a
    request opens one database session, not two.
    """
    return await _loom(request, session, write=False)


@asynccontextmanager
async def loom_session(request: Request, *, write: bool = False) -> AsyncIterator[tuple[AuthContext, AsyncSession]]:
    """The caller and one database session for a Loom handler (a write session if `write`).

    A context manager rather than two `Depends` generators: FastAPI wraps each generator
    dependency's exit in a shielded cancel scope, which cost more than the queries of a read.
    On SQLite the caller is authenticated before the write transaction starts, so neither a
    JWKS fetch nor a rate-limit check holds the database's write lock; on PostgreSQL, which has
    no such lock, in the write session itself.
    """
    db = process_services.database(request)
    if not write:
        async with db.session() as session:
            yield await _loom(request, session, write=False), session
        return
    if not db.is_sqlite:
        # PostgreSQL has no database-wide writer lock: the caller is authenticated in the write
        # session itself (its first statement), which saves a session and its pool checkout per
        # write. A rate-limit check awaited here holds no row lock.
        async with db.write_session() as session:
            auth = await _loom(request, session, write=True)
            await claim_key(session, request, auth.workspace_id, auth.subject)
            yield auth, session
        return
    # On SQLite a write authenticates (and is counted against its rate limits, which may be a
    # Redis round trip) in a short read session first, so nothing is awaited under the write lock.
    async with db.session() as session:
        auth = await _loom(request, session, write=True)
    async with db.write_session() as session:
        # An `Idempotency-Key` is the transaction's first write (heddle/idempotency/http.py).
        await claim_key(session, request, auth.workspace_id, auth.subject)
        yield auth, session


async def _loom(request: Request, session: AsyncSession, *, write: bool) -> AuthContext:
    async with counting_failures(request):
        return await _authenticate_loom(request, session, write=write)


async def _authenticate_loom(request: Request, session: AsyncSession, *, write: bool) -> AuthContext:
    bearer = _bearer(request)
    subject_header = header(request, b"service-subject")
    connection_header = header(request, b"service-connection")
    if looks_like_jwt(bearer):
        if subject_header is not None:
            raise HeddleError("subject_header_with_token", "Service-Subject must not be sent with a "
                              "session token: the token's `sub` is the subject.")
        authenticate_direct = direct_authenticator(request)
        ctx = await authenticate_direct(request, bearer, None if write else session)
        return await _admit(request, ctx)
    ctx = await _relay(request, bearer, session)
    subject = subject_from_header(subject_header) if subject_header is not None else None
    connection = connection_header.strip() if connection_header else None
    if connection is not None and not (0 < len(connection) <= 100):
        raise HeddleError("connection_not_found", "Service-Connection must be a connection id or name.")
    return await _admit(request, replace(ctx, subject=subject, connection_ref=connection))
