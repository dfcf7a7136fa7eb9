"""In-process wake-ups after run events are stored: this process's SSE streams of a run, and its
webhook dispatcher when a commit owed a delivery.

`committed` is the first after-commit hook of every unit of work (heddle/container.py): it wakes
the streams of the runs the unit changed. The delta writer (heddle/loom/delta_writer.py) hands
the streams the pieces it just stored, so a live stream need not read them back; streams also
poll, which is how they see events stored by other processes (or sooner, `wake`, when the
shared bus carries another process's event).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from typing import Any

from heddle.loom.run_event import RunEvent, run_id_of


class Waiter:
    """One SSE stream's wake-up: `event` is set on news; `rows` holds freshly stored deltas
    (with their `seq`) it can send without reading them back; `stale` asks for a read."""

    __slots__ = ("event", "rows", "stale")
    MAX_ROWS = 1000  # a stream that falls further behind reads from the table instead

    def __init__(self) -> None:
        self.event = asyncio.Event()
        self.rows: list[RunEvent] = []
        self.stale = False


class RunEventSignals:
    """In-process wake-ups for the SSE streams of a run (one event loop)."""

    def __init__(self) -> None:
        self._waiters: dict[uuid.UUID, set[Waiter]] = {}
        self.listeners: list[Callable[[], None]] = []  # told after a commit that owed webhooks

    def notify(self, run_id: uuid.UUID, rows: list[RunEvent] | None = None) -> None:
        for waiter in self._waiters.get(run_id, ()):
            if rows and len(waiter.rows) + len(rows) <= Waiter.MAX_ROWS:
                waiter.rows.extend(rows)
            else:
                waiter.rows.clear()
                waiter.stale = True
            waiter.event.set()

    def wake(self, name: str, data: dict[str, Any], seq: int | None = None) -> None:
        """An event another process stored, as the shared bus brought it: with its `seq`
        (PostgreSQL, migration 0019) the run's streams are handed the event itself and send it
        without a read when it follows their cursor; without one, woken to read the table."""
        run_id = run_id_of(name, data)
        if run_id is not None:
            self.notify(run_id, None if seq is None else [RunEvent(name, data, None, run_id, seq)])

    def watched(self, run_id: uuid.UUID) -> bool:
        """Whether a stream of this process follows the run (a unit of work then numbers the
        run's events as it stores them, so the stream is handed them instead of reading)."""
        return run_id in self._waiters

    async def committed(self, work) -> None:
        """The after-commit hook of every run unit of work (heddle/loom/unit_of_work.py): wake
        this process's SSE streams of the changed runs (with the events themselves when the unit
        numbered them, see `watched`), and the webhook dispatcher if owed."""
        for run_id in work.changed_runs():
            self.notify(run_id, work.stored.get(run_id))
        if work.webhooks_owed:  # the dispatcher polls too; a wake-up is only for speed
            for listener in self.listeners:
                listener()

    def subscribe(self, run_id: uuid.UUID) -> Waiter:
        waiter = Waiter()
        self._waiters.setdefault(run_id, set()).add(waiter)
        return waiter

    def unsubscribe(self, run_id: uuid.UUID, waiter: Waiter) -> None:
        waiters = self._waiters.get(run_id)
        if waiters is not None:
            waiters.discard(waiter)
            if not waiters:
                del self._waiters[run_id]
