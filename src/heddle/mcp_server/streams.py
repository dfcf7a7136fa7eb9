"""`GET /mcp`: the MCP endpoint's optional event stream, bounded like every other event stream.

In stateless mode the server never sends a message of its own, so the stream only ever carries
`: ping` comments; the spec lets a server answer the GET with a stream or 405, and clients (the
official SDK's among them) open it after `initialize`. Issue 40 found it unbounded: open
forever, not counted, still open 42.7 s after `heddle key revoke`, and 300 of them from one key
made another workspace's requests 503. Now each stream:

* is counted with the run event streams (heddle/loom/stream_limits.py): per key, per subject,
  per client address and in all, 429 `rate_limited` past a cap;
* lives at most `HEDDLE_MCP_STREAM_MAX_SECONDS` (a client that wants one reopens it);
* ends within `HEDDLE_MCP_STREAM_CHECK_SECONDS` of its key being revoked: one task per process
  looks up the keys of the open streams (one query for them all) while any is open.

Ending a stream closes its response cleanly (the last chunk), so the client sees the end of
the stream rather than a dropped connection.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from sqlalchemy import select

from heddle.db.base import Database
from heddle.workspaces.models import ApiKey


class McpStreams:
    """The open `GET /mcp` streams of this process, by key, and the task that ends the revoked ones."""

    def __init__(self, *, max_seconds: float, check_seconds: float):
        self.max_seconds, self.check_seconds = max_seconds, check_seconds
        self._open: dict[str, set[anyio.CancelScope]] = {}
        self._watcher: asyncio.Task | None = None

    def count(self) -> int:
        return sum(len(scopes) for scopes in self._open.values())

    async def serve(self, db: Database, key_id: str, scope: dict, receive: Any, send: Any,
                    app: Callable[[dict, Any, Any], Awaitable[None]]) -> None:
        """Run `app` (the SDK's answer to the GET) until it ends, its lifetime is over, or its key
        is revoked; then end the response if it was left open."""
        finished = False

        async def watched_send(message: dict) -> None:
            nonlocal finished
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                finished = True
            await send(message)

        started = False

        async def first_send(message: dict) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await watched_send(message)

        cancel = anyio.CancelScope(deadline=anyio.current_time() + self.max_seconds)
        self._open.setdefault(key_id, set()).add(cancel)
        if self._watcher is None or self._watcher.done():
            self._watcher = asyncio.get_running_loop().create_task(self._watch(db))  # ends with the last stream
        try:
            with cancel:
                await app(scope, receive, first_send)
        finally:
            scopes = self._open.get(key_id)
            if scopes is not None:
                scopes.discard(cancel)
                if not scopes:
                    del self._open[key_id]
            if started and not finished:
                with contextlib.suppress(Exception):
                    await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _watch(self, db: Database) -> None:
        """Every `check_seconds` while streams are open: end those whose key was revoked."""
        while self._open:
            await asyncio.sleep(self.check_seconds)
            keys = list(self._open)
            if not keys:
                break
            try:
                async with db.session() as session:
                    revoked = set(await session.scalars(
                        select(ApiKey.id).where(ApiKey.id.in_(keys), ApiKey.revoked_at.is_not(None))))
            except Exception:  # the database is away: look again next time
                continue
            for key in revoked:
                for cancel in list(self._open.get(key, ())):
                    cancel.cancel()
