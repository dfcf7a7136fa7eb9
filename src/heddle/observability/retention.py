"""Request-log retention: rows older than `HEDDLE_REQUEST_LOG_RETENTION_DAYS` are deleted in
the background, in small batches (each its own short transaction, so SQLite's single writer
is never held for long), every `HEDDLE_REQUEST_LOG_PRUNE_INTERVAL` seconds.

Several processes on one PostgreSQL database may all prune; deletes of the same old rows are
harmless, so no coordination is needed.
"""

from __future__ import annotations

import asyncio
import datetime as dt

from sqlalchemy import delete, select

from heddle.db.base import Database, utcnow
from heddle.observability.logging import get_logger
from heddle.observability.models import RequestLogEntry

log = get_logger(__name__)


class RequestLogPruner:
    def __init__(self, db: Database, *, retention_days: float, interval: float, batch_size: int = 5000):
        self._db = db
        self._retention = dt.timedelta(days=retention_days)
        self._interval = interval
        self._batch_size = batch_size
        self._task: asyncio.Task | None = None

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="request-log-pruner")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass

    async def prune(self, now: dt.datetime | None = None) -> int:
        """Delete every row older than the retention; the number deleted."""
        cutoff = (now or utcnow()) - self._retention
        old = select(RequestLogEntry.id).where(RequestLogEntry.created_at < cutoff).limit(self._batch_size)
        total = 0
        while True:
            async with self._db.transaction() as session:
                deleted = (await session.execute(
                    delete(RequestLogEntry).where(RequestLogEntry.id.in_(old)),
                    execution_options={"synchronize_session": False})).rowcount or 0
            total += deleted
            if deleted < self._batch_size:
                return total
            await asyncio.sleep(0)  # let requests in between batches

    async def _run(self) -> None:
        while True:
            try:
                deleted = await self.prune()
                if deleted:
                    log.info("request_log_pruned", rows=deleted)
            except Exception:  # a failed prune is retried next interval; never stop serving
                log.exception("request_log_prune_failed")
            await asyncio.sleep(self._interval)
