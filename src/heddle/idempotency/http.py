"""`Idempotency-Key` for write endpoints, Stripe-style.

How a route becomes idempotent (threads, messages, outcome and identify do this; cancel can):

    @router.post(...)
    @idempotent
    async def handler(..., request: Request):
        async with loom_session(request, write=True) as (auth, session):   # claims the key
            data = await service.something(session, auth, ...)
            response = await commit_response(session, request, ok(data))   # stores + commits
        return response

- `@idempotent` reads and checks the header, and turns a replay into the stored response
  (`Idempotent-Replayed: true`) or a reuse into 409 `idempotency_key_reused`.
- `loom_session(write=True)` calls `claim_key` right after authentication: the key's row is the
  first write of the transaction. A request whose key already holds a response stops there.
- `commit_response` writes the response into that row and commits it together with the
  request's effects: a process killed after the commit but before the response went out still
  replays the response on retry, and a request that failed stored nothing (its retry runs).

Two concurrent requests with the same key: the second waits for the first's transaction (the
row's unique key on PostgreSQL, the single writer on SQLite), then replays its response.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import functools
import hashlib
import json
from dataclasses import dataclass
from typing import Any

from fastapi import Request
from fastapi.responses import Response
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from heddle import process_services
from heddle.errors import HeddleError
from heddle.idempotency import store
from heddle.idempotency.store import Replay, StoredResponse

HEADER = "Idempotency-Key"
MAX_KEY_LENGTH = 255
REPLAYED_HEADER = "Idempotent-Replayed"


@dataclass
class PendingKey:
    key: str
    body_digest: str
    workspace_id: str | None = None
    fingerprint: str | None = None  # set once the caller is known (claim_key / record_key)


def _ttl(request: Request) -> dt.timedelta:
    return dt.timedelta(hours=process_services.settings(request).idempotency_ttl_hours)


def _read_key(request: Request) -> str | None:
    raw = request.headers.get(HEADER.lower())
    if raw is None:
        return None
    key = raw.strip()
    # Visible ASCII only: a key is an opaque token (a UUID, usually), compared byte for byte.
    if not 1 <= len(key) <= MAX_KEY_LENGTH or not all("\x21" <= c <= "\x7e" for c in key):
        raise HeddleError("invalid_request", f"{HEADER} must be 1 to {MAX_KEY_LENGTH} visible ASCII characters.",
                          details=[{"location": "header", "field": HEADER, "message": "invalid idempotency key",
                                    "type": "value_error"}])
    return key


async def _body_digest(request: Request) -> str:
    """The body as JSON with sorted keys, so whitespace or key order is not "another body"."""
    raw = await request.body()  # already read and cached by FastAPI for the body model
    try:
        canonical = json.dumps(json.loads(raw), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except ValueError:
        canonical = raw.decode("latin-1")
    return hashlib.sha256(canonical.encode()).hexdigest()


def _fingerprint(request: Request, pending: PendingKey, subject: str | None) -> str:
    parts = [request.method, request.url.path, subject or "", pending.body_digest]
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()


def _pending(request: Request) -> PendingKey | None:
    return getattr(request.state, "idempotency", None)


def _replayed(stored: StoredResponse) -> Response:
    return Response(stored.body, status_code=stored.status_code, media_type="application/json",
                    headers={REPLAYED_HEADER: "true"})


def _find_request(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Request:
    for value in (*args, *kwargs.values()):
        if isinstance(value, Request):
            return value
    raise TypeError("an @idempotent route must take `request: Request`")


def idempotent(handler, *, streamed: bool = False):
    """Decorate a write route (below `@router.post`) to honour `Idempotency-Key`.

    A `streamed` route (an upload, whose body is never buffered) names what it received with
    `set_body_digest` once it has read its body, before its write session claims the key."""

    @functools.wraps(handler)
    async def wrapper(*args: Any, **kwargs: Any):
        request = _find_request(args, kwargs)
        key = _read_key(request)
        if key is None:
            return await handler(*args, **kwargs)
        pending = PendingKey(key, "" if streamed else await _body_digest(request))
        request.state.idempotency = pending
        try:
            response = await handler(*args, **kwargs)
        except Replay as replay:
            return _replayed(replay.stored)
        except IntegrityError:
            # Usually a concurrent request with the same key committed first; replay it.
            stored = await _committed_by_another(request, pending)
            if stored is None:
                raise
            return _replayed(stored)
        pause = process_services.settings(request).fault_pause_after_commit_s
        if pause:  # crash tests only: the effects are committed, the response not yet sent
            await asyncio.sleep(pause)
        return response

    return wrapper


def idempotent_streamed(handler):
    """`idempotent` for a route that streams its body (see `set_body_digest`)."""
    return idempotent(handler, streamed=True)


def set_body_digest(request: Request, digest: str) -> None:
    """What a streamed route received, as the key's fingerprint takes it (no-op without a key)."""
    pending = _pending(request)
    if pending is not None:
        pending.body_digest = digest


async def _committed_by_another(request: Request, pending: PendingKey) -> StoredResponse | None:
    if pending.workspace_id is None or pending.fingerprint is None:
        return None
    async with process_services.database(request).session() as session:
        return await store.find(session, pending.workspace_id, pending.key, pending.fingerprint, _ttl(request))


async def claim_key(session: AsyncSession, request: Request, workspace_id: str, subject: str | None) -> None:
    """First write of an idempotent request's transaction (no-op without a key)."""
    pending = _pending(request)
    if pending is None:
        return
    pending.workspace_id = workspace_id
    pending.fingerprint = _fingerprint(request, pending, subject)
    await store.claim(session, workspace_id, pending.key, pending.fingerprint, _ttl(request))


async def replay_if_seen(request: Request, workspace_id: str, subject: str | None) -> None:
    """Before work that is not one transaction (Identify's lookup): raise Replay or 409 early,
    so a retry neither looks up nor pays again."""
    pending = _pending(request)
    if pending is None:
        return
    pending.workspace_id = workspace_id
    pending.fingerprint = _fingerprint(request, pending, subject)
    async with process_services.database(request).session() as session:
        stored = await store.find(session, workspace_id, pending.key, pending.fingerprint, _ttl(request))
    if stored is not None:
        raise Replay(stored)


async def record_response(session: AsyncSession, request: Request, response: Response) -> None:
    """Claim the key and store `response` in the caller's open transaction (no-op without a key)."""
    pending = _pending(request)
    if pending is None:
        return
    assert pending.workspace_id is not None and pending.fingerprint is not None, "call replay_if_seen first"
    await store.claim(session, pending.workspace_id, pending.key, pending.fingerprint, _ttl(request),
                      response=StoredResponse(response.status_code, bytes(response.body)))


async def commit_response(session: AsyncSession, request: Request, response: Response) -> Response:
    """Store the response for the request's key (if any), then commit: one transaction."""
    pending = _pending(request)
    if pending is not None and pending.fingerprint is not None:
        await store.complete(session, pending.workspace_id, pending.key, response.status_code, bytes(response.body))
    await session.commit()
    return response


# For `@router.post(..., openapi_extra=OPENAPI)`: the header in the OpenAPI document.
OPENAPI: dict[str, Any] = {"parameters": [{
    "name": HEADER, "in": "header", "required": False,
    "schema": {"type": "string", "minLength": 1, "maxLength": MAX_KEY_LENGTH},
    "description": ("Makes a retry safe: the same key with the same request within 24 hours replays the "
                    f"first response (with `{REPLAYED_HEADER}: true`); with another request it is 409 "
                    "`idempotency_key_reused`. Keys are per workspace."),
}]}
