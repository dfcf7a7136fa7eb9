"""The delta writer: replies' `message.delta` pieces stored while the models are still writing.

Pieces stream outside any transaction, so `append()` buffers them, and one writer task per
process stores what every run has buffered in one write transaction (issue 48: at 100 streaming
conversations the store was 350 write transactions a second, one per run per window, each
holding SQLite's single write lock that `POST /messages` waits on too; it is now one per
window for all of them). When it writes:

- a piece after a quiet spell of its run (the first piece of a reply, or after a tool call) is
  written at once (after `GATHER_SECONDS`, so pieces arriving together share the write), with
  everything else pending: the first text a reader sees never waits for a window;
- otherwise a run's pieces wait until `WRITE_WINDOW_SECONDS` after that run's last write.

The stored pieces are then handed to the runs' live SSE streams (heddle/loom/event_signals.py),
which send them without reading them back.

When a model call ends, the engine takes the pieces no write has taken yet (`take()`) and stores
them in the turn's own transaction, ahead of the reply's `message.created`, so the end of a
reply never waits for a window. The one rule that keeps the log whole and in order: `take()`
waits while a write that carries the run is in progress (its transaction open), since what it
takes must be numbered after that write's rows. A failed write (a busy pool, a lost connection)
puts its pieces back ahead of the pending ones, for the next write or the turn's transaction,
so it loses nothing and fails no run; after `RETRIES` failed writes in a row they are dropped (a
preview: the whole message still arrives). A run that no longer exists (its thread erased
meanwhile) has its pieces dropped by the write, and the others are stored.
"""

from __future__ import annotations

import asyncio
import time
import uuid

from heddle.db.base import Database
from heddle.loom import event_log
from heddle.loom.event_signals import RunEventSignals
from heddle.loom.run_event import RunEvent
from heddle.observability.logging import get_logger

log = get_logger(__name__)

# A piece after a quiet spell is written this soon, so that pieces arriving together (and a
# model call that ends meanwhile, see DeltaWriter.take) share one write.
GATHER_SECONDS = 0.002
# After a write of a run, its next pieces wait up to this long, to go together (and with every
# other run's) in one write. The end of a reply goes in the turn's transaction.
WRITE_WINDOW_SECONDS = 0.2
# A failed write's pieces are written again with the next write (or by the turn's transaction);
# after this many failed writes in a row they are dropped, so a lost database never keeps the
# writer (and a `drain()` waiting for it) going.
RETRIES = 3


class DeltaWriter:
    """Stores streamed deltas, every run's in one write per window (see the module docstring)."""

    def __init__(self, db: Database, signals: RunEventSignals | None = None, *,
                 window_seconds: float = WRITE_WINDOW_SECONDS):
        self.db = db
        self.signals = signals or RunEventSignals()
        self.window_seconds = window_seconds
        self._pending: dict[uuid.UUID, list[RunEvent]] = {}
        self._due: dict[uuid.UUID, float] = {}  # when each pending run's pieces should be written
        self._last_write: dict[uuid.UUID, float] = {}  # runs written within the window
        self._writing: set[uuid.UUID] = set()  # the runs the write in progress carries
        self._written: asyncio.Future[None] | None = None  # done when the write in progress ends
        self._wake: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._failures = 0  # failed writes in a row
        self.writes = 0  # write transactions, for the benchmarks and tests
        self.failed = 0  # writes that failed; their pieces went back ahead of the pending ones
        self.dropped = 0  # pieces given up after RETRIES failed writes in a row (or of erased runs)

    def append(self, event: RunEvent) -> None:
        run_id = event.run_id
        pending = self._pending.get(run_id)
        if pending is not None:
            pending.append(event)
            return
        self._pending[run_id] = [event]
        now = time.monotonic()
        last = now if run_id in self._writing else self._last_write.get(run_id)  # being written: not quiet
        quiet = last is None or now - last >= self.window_seconds
        self._due[run_id] = now + GATHER_SECONDS if quiet else last + self.window_seconds
        self._kick(quiet)

    def _kick(self, now: bool) -> None:
        if self._task is None or self._task.done():
            self._wake = asyncio.Event()
            self._task = asyncio.create_task(self._run(), name="delta-writer")
        if now:
            self._wake.set()

    async def _run(self) -> None:
        while self._pending:
            wait = min(self._due.values()) - time.monotonic()
            if wait > 0:
                self._wake.clear()
                try:  # woken early: a run's piece is due sooner (after a quiet spell, or drained)
                    await asyncio.wait_for(self._wake.wait(), wait)
                    continue
                except TimeoutError:
                    pass
            await self._write_pending()
        self._forget_quiet()

    def _forget_quiet(self) -> None:
        now = time.monotonic()
        self._last_write = {r: t for r, t in self._last_write.items() if now - t < self.window_seconds}

    async def _write_pending(self) -> None:
        # Taking the batches and marking them in progress happen together (no await between
        # them), so `take()` either finds a run's pieces pending or waits for this write.
        batches, self._pending, self._due = self._pending, {}, {}
        self._writing = set(batches)
        self._written = asyncio.get_running_loop().create_future()
        try:
            stored = await self._store(batches)
        finally:
            self._writing = set()
            self._written.set_result(None)
        now = time.monotonic()
        for run_id in stored:
            self._last_write[run_id] = now
        if len(self._last_write) > 4 * len(batches) + 100:  # runs whose calls ended unseen
            self._forget_quiet()
        if not stored and self._pending:  # it failed: the next try waits out a window
            for run_id in self._pending:
                self._due[run_id] = now + self.window_seconds

    async def _store(self, batches: dict[uuid.UUID, list[RunEvent]]) -> list[uuid.UUID]:
        """Store the batches and hand them to the runs' live streams; on failure put them back
        (or drop them after RETRIES failures in a row). The runs stored."""
        try:
            async with self.db.transaction() as session:
                lasts = await event_log.append_many(session, batches)
        except Exception as exc:  # a busy pool, a lost connection: the pieces wait for the next write
            self.failed += 1
            self._failures += 1
            keep = self._failures < RETRIES
            for run_id, batch in batches.items():
                if keep:  # back ahead of what arrived since, so they are stored in order
                    self._pending[run_id] = batch + self._pending.get(run_id, [])
                    self._due.setdefault(run_id, time.monotonic())
                else:
                    self.dropped += len(batch)
            log.warning("run_events_write_failed", runs=len(batches), error=type(exc).__name__,
                        detail=str(exc)[:200], kept=keep)
            return []
        self._failures = 0
        self.writes += 1
        for run_id, batch in batches.items():
            last = lasts.get(run_id)
            if last is None:  # the run is gone (its thread erased): nothing to store or send
                self.dropped += len(batch)
                continue
            first = last - len(batch) + 1  # live streams send these without reading them back
            self.signals.notify(run_id, [event.at(first + i) for i, event in enumerate(batch)])
        return list(lasts)

    async def drain(self, run_id: uuid.UUID) -> None:
        """Wait until every piece appended for this run so far is stored (or given up)."""
        while run_id in self._pending or run_id in self._writing:
            if run_id in self._pending:
                self._due[run_id] = time.monotonic()
                self._kick(True)
            written = self._written
            if run_id in self._writing and written is not None:
                await asyncio.shield(written)
            else:
                await asyncio.sleep(GATHER_SECONDS)

    async def take(self, run_id: uuid.UUID) -> list[RunEvent]:
        """The pieces appended for this run that no write has taken, for the caller to store
        in its own transaction, after everything stored before: a write in progress that
        carries the run is waited for first."""
        while run_id in self._writing and self._written is not None:
            await asyncio.shield(self._written)
        self._due.pop(run_id, None)
        self._last_write.pop(run_id, None)  # the run's next pieces (another call) go at once
        return self._pending.pop(run_id, [])
