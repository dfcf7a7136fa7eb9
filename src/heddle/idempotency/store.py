"""Reading, claiming, completing and pruning idempotency records (no HTTP here)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlalchemy import delete, update
from sqlalchemy.ext.asyncio import AsyncSession

from heddle.db.base import utcnow
from heddle.errors import HeddleError
from heddle.idempotency.models import IdempotencyRecord


@dataclass(frozen=True)
class StoredResponse:
    status_code: int
    body: bytes


class Replay(Exception):
    """Raised inside a request's transaction when its key already holds a response: the
    transaction rolls back (nothing was done) and the stored response is sent instead."""

    def __init__(self, stored: StoredResponse):
        super().__init__("idempotent replay")
        self.stored = stored


def _reused(key: str) -> HeddleError:
    return HeddleError("idempotency_key_reused",
                       f"Idempotency-Key {key!r} was first used with another request (method, path, "
                       "subject or body); use a new key for a new request.")


async def find(session: AsyncSession, workspace_id: str, key: str, fingerprint: str,
               ttl: dt.timedelta) -> StoredResponse | None:
    """The stored response for this exact request, None if the key is unused (or expired);
    409 `idempotency_key_reused` when it was used for another request."""
    row = await session.get(IdempotencyRecord, (workspace_id, key), populate_existing=True)
    if row is None or row.created_at < utcnow() - ttl or row.status_code is None:
        return None
    if row.fingerprint != fingerprint:
        raise _reused(key)
    return StoredResponse(row.status_code, (row.body or "").encode())


async def claim(session: AsyncSession, workspace_id: str, key: str, fingerprint: str, ttl: dt.timedelta,
                response: StoredResponse | None = None) -> None:
    """Insert the key's row in the caller's transaction, or raise Replay / 409 if it holds one.
    With `response` (known already, as for Identify) the row is inserted complete.

    On PostgreSQL a concurrent transaction that inserted the same key first makes this INSERT
    wait until it ends, then fail with IntegrityError (the HTTP layer then replays the winner).
    On SQLite writers are serialised, so the row of a finished winner is simply found here.
    """
    row = await session.get(IdempotencyRecord, (workspace_id, key), populate_existing=True)
    if row is not None:
        if row.created_at >= utcnow() - ttl and row.status_code is not None:
            if row.fingerprint != fingerprint:
                raise _reused(key)
            raise Replay(StoredResponse(row.status_code, (row.body or "").encode()))
        await session.delete(row)  # expired: the key is free again
        await session.flush()
    session.add(IdempotencyRecord(workspace_id=workspace_id, key=key, fingerprint=fingerprint,
                                  status_code=response.status_code if response else None,
                                  body=response.body.decode() if response else None))
    await session.flush()


async def complete(session: AsyncSession, workspace_id: str, key: str, status_code: int, body: bytes) -> None:
    """Store the response in the same transaction as the request's effects."""
    await session.execute(update(IdempotencyRecord)
                          .where(IdempotencyRecord.workspace_id == workspace_id, IdempotencyRecord.key == key)
                          .values(status_code=status_code, body=body.decode()))


async def prune(session: AsyncSession, ttl: dt.timedelta, *, now: dt.datetime | None = None) -> int:
    """Delete the records older than `ttl`; returns how many."""
    cutoff = (now or utcnow()) - ttl
    result = await session.execute(delete(IdempotencyRecord).where(IdempotencyRecord.created_at < cutoff))
    return result.rowcount or 0

