"""The delta writer: a reply's `message.delta` pieces stored while the model is still writing.

Pieces stream outside any transaction, so `append()` buffers them and one writer task per run
stores them in batches (group commit: the first piece is written after a short gathering
window, `GATHER_SECONDS`, what arrives during a write goes in the next), then hands them to the
run's live SSE streams (heddle/loom/event_signals.py). When the model call ends, the engine
takes the pieces no writer has taken yet (`take()`, after waiting for a write in progress) and
stores them in the turn's own transaction, ahead of the reply's `message.created`: a reply that
arrives at once (or whose last pieces arrive together) costs no transaction of its own. A failed
write drops its pieces (a preview: the whole message still arrives) and never fails the run.
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


class DeltaWriter:
    """Stores streamed deltas in batches, one writer task per run (see the module docstring)."""

    def __init__(self, db: Database, signals: RunEventSignals | None = None):
        self.db = db
        self.signals = signals or RunEventSignals()
        self._pending: dict[uuid.UUID, list[RunEvent]] = {}
        self._writers: dict[uuid.UUID, asyncio.Task[None]] = {}
        self._writing: set[uuid.UUID] = set()  # runs whose writer took a batch and is storing it
        self.dropped = 0  # pieces lost to a failed write (the whole message still arrives)

    def append(self, event: RunEvent) -> None:
        run_id = event.run_id
        self._pending.setdefault(run_id, []).append(event)
        if run_id not in self._writers:
            self._writers[run_id] = asyncio.create_task(self._write(run_id), name=f"run-events-{run_id}")

    async def _write(self, run_id: uuid.UUID) -> None:
        try:
            await asyncio.sleep(GATHER_SECONDS)
            while batch := self._pending.pop(run_id, None):
                self._writing.add(run_id)
                try:
                    async with self.db.transaction() as session:
                        last = await event_log.append(session, run_id, batch)
                except Exception as exc:  # deltas are a preview; never fail the run for them
                    self.dropped += len(batch)
                    log.warning("run_events_write_failed", run_id=str(run_id), error=type(exc).__name__,
                                detail=str(exc)[:200])
                    continue
                first = last - len(batch) + 1  # live streams send these without reading them back
                self.signals.notify(run_id, [event.at(first + i) for i, event in enumerate(batch)])
        finally:
            self._writing.discard(run_id)
            self._writers.pop(run_id, None)

    async def drain(self, run_id: uuid.UUID) -> None:
        """Wait until every piece appended for this run so far is stored."""
        writer = self._writers.get(run_id)
        if writer is not None:
            await asyncio.shield(writer)

    async def take(self, run_id: uuid.UUID) -> list[RunEvent]:
        """The pieces appended for this run that no writer has taken, for the caller to store
        in its own transaction; a write already in progress is waited for first, so what the
        caller stores comes after everything stored before."""
        writer = self._writers.get(run_id)
        if writer is not None and run_id in self._writing:
            await asyncio.shield(writer)  # it also stores whatever arrived during its write
        return self._pending.pop(run_id, [])  # a writer still gathering then finds nothing
