"""Deletes idempotency records older than their 24 hours, in the background."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt

from heddle.db.base import Database
from heddle.idempotency import store
from heddle.observability.logging import get_logger

log = get_logger(__name__)


class IdempotencyPruner:
    def __init__(self, db: Database, *, ttl_hours: float, interval_s: float):
        self.db = db
        self.ttl = dt.timedelta(hours=ttl_hours)
        self.interval_s = interval_s
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name="idempotency-pruner")

    async def prune_once(self) -> int:
        async with self.db.transaction() as session:
            return await store.prune(session, self.ttl)

    async def _loop(self) -> None:
        while True:
            try:
                if removed := await self.prune_once():
                    log.info("idempotency_keys_pruned", removed=removed)
            except Exception:  # a busy or restarting database: try again next interval
                log.warning("idempotency_prune_failed", exc_info=True)
            await asyncio.sleep(self.interval_s)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
