"""The delta writer: a reply's `message.delta` pieces stored while the model is still writing.

Pieces stream outside any transaction, so `append()` buffers them and one writer task per run
stores them in batches. The first piece of a reply is written at once (after `GATHER_SECONDS`,
so pieces arriving together share the write); after each write the writer waits out
`WRITE_WINDOW_SECONDS` and then stores everything that arrived meanwhile as one row (issue 48:
a reply of 150 pieces costs a handful of write transactions, not one per piece, and on SQLite
each of them holds the database's single write lock that `POST /messages` waits on too). The
stored pieces are then handed to the run's live SSE streams (heddle/loom/event_signals.py).

When the model call ends, the engine takes the pieces no writer has taken yet (`take()`) and
stores them in the turn's own transaction, ahead of the reply's `message.created`, so the end of
a reply never waits for a window. The one rule that keeps the log whole and in order: `take()`
waits while a write of the run is in progress (its transaction open), since what it takes must
be numbered after that write's rows; a writer that is only waiting out its window has taken
nothing, and finds nothing when it wakes. A failed write (a busy pool, a lost connection) puts
its pieces back ahead of the pending ones, for the next write or the turn's transaction, so it
loses nothing and fails no run; only after `RETRIES` failures in a row are they dropped (a
preview: the whole message still arrives).
"""

from __future__ import annotations

import asyncio
import uuid

from heddle.db.base import Database
from heddle.loom import event_log
from heddle.loom.event_signals import RunEventSignals
from heddle.loom.run_event import RunEvent
from heddle.observability.logging import get_logger

log = get_logger(__name__)

# A delta writer waits this long before its first write, so that pieces arriving together (and a
# model call that ends meanwhile, see DeltaWriter.take) share one write.
GATHER_SECONDS = 0.002
# After a write, what arrives within this window goes in the next one (the first piece of a
# reply is never held back by it; the end of a reply goes in the turn's transaction).
WRITE_WINDOW_SECONDS = 0.2
# A failed write's pieces are written again with the next batch (or by the turn's transaction);
# after this many failures in a row the writer drops them, so a lost database never keeps it
# (and a `drain()` waiting for it) going.
RETRIES = 3


class DeltaWriter:
    """Stores streamed deltas in batches, one writer task per run (see the module docstring)."""

    def __init__(self, db: Database, signals: RunEventSignals | None = None, *,
                 window_seconds: float = WRITE_WINDOW_SECONDS):
        self.db = db
        self.signals = signals or RunEventSignals()
        self.window_seconds = window_seconds
        self._pending: dict[uuid.UUID, list[RunEvent]] = {}
        self._writers: dict[uuid.UUID, asyncio.Task[None]] = {}
        # The write in progress of a run (a batch taken, its transaction open), done when stored.
        self._writing: dict[uuid.UUID, asyncio.Future[None]] = {}
        self.writes = 0  # write transactions, for the benchmarks and tests
        self.failed = 0  # writes that failed; their pieces went back ahead of the pending ones
        self.dropped = 0  # pieces given up after RETRIES failed writes in a row

    def append(self, event: RunEvent) -> None:
        run_id = event.run_id
        self._pending.setdefault(run_id, []).append(event)
        if run_id not in self._writers:
            self._writers[run_id] = asyncio.create_task(self._write(run_id), name=f"run-events-{run_id}")

    async def _write(self, run_id: uuid.UUID) -> None:
        try:
            await asyncio.sleep(GATHER_SECONDS)
            # Taking the batch and marking the write in progress happen together (no await
            # between them), so `take()` either finds the pieces pending or waits for this write.
            failures = 0
            while batch := self._pending.pop(run_id, None):
                done = self._writing[run_id] = asyncio.get_running_loop().create_future()
                try:
                    failures = 0 if await self._store(run_id, batch, keep=failures < RETRIES) else failures + 1
                finally:
                    del self._writing[run_id]
                    done.set_result(None)
                await asyncio.sleep(self.window_seconds)
        finally:
            self._writers.pop(run_id, None)

    async def _store(self, run_id: uuid.UUID, batch: list[RunEvent], *, keep: bool) -> bool:
        """Store `batch` and hand it to the run's live streams; on failure put it back (`keep`)
        or drop it (the whole message still arrives); False if it failed."""
        try:
            async with self.db.transaction() as session:
                last = await event_log.append(session, run_id, batch)
        except Exception as exc:  # a busy pool, a lost connection: the pieces wait for the next write
            # Back ahead of what arrived since, so the next write or the turn's own transaction
            # (`take()`) stores them in order: a failed write loses nothing and fails no run.
            self.failed += 1
            if keep:
                self._pending[run_id] = batch + self._pending.get(run_id, [])
            else:
                self.dropped += len(batch)
            log.warning("run_events_write_failed", run_id=str(run_id), error=type(exc).__name__,
                        detail=str(exc)[:200], kept=keep)
            return False
        self.writes += 1
        first = last - len(batch) + 1  # live streams send these without reading them back
        self.signals.notify(run_id, [event.at(first + i) for i, event in enumerate(batch)])
        return True

    async def drain(self, run_id: uuid.UUID) -> None:
        """Wait until every piece appended for this run so far is stored."""
        writer = self._writers.get(run_id)
        if writer is not None:
            await asyncio.shield(writer)

    async def take(self, run_id: uuid.UUID) -> list[RunEvent]:
        """The pieces appended for this run that no writer has taken, for the caller to store
        in its own transaction, after everything stored before: a write in progress is waited
        for first (again if, by the time this task runs, the writer has started the next)."""
        while (write := self._writing.get(run_id)) is not None:
            await asyncio.shield(write)
        return self._pending.pop(run_id, [])  # the writer then finds nothing when its window ends
