"""The stored log of a run's events, which `GET /v1/loom/runs/{id}/events` streams and resumes.

Every `run.updated`, `message.created` and `message.delta` of a run is a row of `run_events`
with the run's next `seq` (1, 2, 3, ... per run): the SSE `id:`. A client that reconnects with
`Last-Event-ID: n` gets the rows after `n` from the table, whether the run is still going or
ended long ago, so nothing is lost between connections.

- `run.updated` and `message.created` are written by `stage()` in the same transaction as the
  change they describe (an outbox): an event is stored exactly when its change commits.
- `message.delta` pieces stream outside any transaction (the model is still writing), so
  `RunEventLog.append()` buffers them and one writer task per run stores them in batches
  (group commit: the first piece is written after a short gathering window, `GATHER_SECONDS`,
  what arrives during a write goes in the next). When the model call ends, the engine takes
  the pieces no writer has taken yet (`take()`, after waiting for a write in progress) and
  stores them in the turn's own transaction, ahead of the reply's `message.created`: a reply
  that arrives at once (or whose last pieces arrive together) costs no transaction of its own.

Consecutive `message.delta` pieces stored together are one row (`PACKED_DELTAS`: the pieces'
list as `data`, `seq` the last piece's), so a reply of 50 words costs one row, not 50:
`read_after()` unpacks them, each piece with its own `seq`, exactly as if stored one by one.

`seq` is allocated as max + 1 while holding the run's row lock (PostgreSQL `FOR UPDATE`; every
writer of a run's events holds it, SQLite has one writer anyway), so ids never collide.
After a commit, `RunEventSignals.notify(run_id)` wakes this process's SSE streams of that run
(handing them the stored deltas, so a live stream need not read them back); streams also
poll, which is how they see events written by other processes.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from sqlalchemy import bindparam, func, insert, select

from heddle.db.base import Database, utcnow
from heddle.loom.deltas import DELTA_EVENT
from heddle.loom.models import Run, RunEvent
from heddle.observability.logging import get_logger
from heddle.webhooks import outbox as webhooks
from heddle.webhooks import run_rule

log = get_logger(__name__)

STORED_EVENTS = ("run.updated", "message.created", "message.delta")
# The row of several consecutive `message.delta` pieces (never sent under this name).
PACKED_DELTAS = "message.deltas"
# A delta writer waits this long before its first write, so that pieces arriving together (and a
# model call that ends meanwhile, see RunEventLog.take) share one write.
GATHER_SECONDS = 0.002
_INSERT = insert(RunEvent.__table__)


def event_run_id(name: str, data: dict[str, Any]) -> uuid.UUID | None:
    """The run an event belongs to: a Run's own `id`, or a message's (or delta's) `run_id`."""
    raw = data.get("id") if name == "run.updated" else data.get("run_id")
    if not raw or name not in STORED_EVENTS:
        return None
    return raw if isinstance(raw, uuid.UUID) else uuid.UUID(str(raw))


def sent_by_database(name: str, data: dict[str, Any]) -> bool:
    """True for an event `stage()` or a delta write stores (a run's event), which PostgreSQL's
    event bus then sends from the storing transaction (migration 0010)."""
    try:
        return event_run_id(name, data) is not None
    except ValueError:
        return False


def runs_of(work) -> set[uuid.UUID]:
    return {run_id for _, name, data in work.events if (run_id := event_run_id(name, data))}


async def _lock_run(session, run_id: uuid.UUID) -> str | None:
    """Take the run's row lock (a no-op on SQLite's single writer); returns its workspace."""
    return await session.scalar(select(Run.workspace_id).where(Run.id == run_id).with_for_update())


# Built once, of table columns (Core statements: every step that changes a run runs them).
_e = RunEvent.__table__.c
_LAST_UPDATE = (select(_e.data).where(_e.run_id == bindparam("rid"), _e.event == "run.updated")
                .order_by(_e.seq.desc()).limit(1))
_LAST_SEQ = select(func.coalesce(func.max(_e.seq), 0)).where(_e.run_id == bindparam("rid"))
# A row numbered after the run's last one by the statement that stores it (`span`: the events
# the row carries, more than one for packed deltas): one round trip fewer than reading the
# last seq first. Each row of an executemany sees the rows stored before it in the transaction,
# and the run's row lock (held by the staging transaction) keeps other writers out.
_INSERT_AFTER_LAST = insert(RunEvent.__table__).from_select(
    ["run_id", "seq", "event", "data", "created_at"],
    select(bindparam("run_id", type_=_e.run_id.type),
           func.coalesce(func.max(_e.seq), 0) + bindparam("span", type_=_e.seq.type),
           bindparam("event", type_=_e.event.type), bindparam("data", type_=_e.data.type),
           bindparam("created_at", type_=_e.created_at.type))
    .where(_e.run_id == bindparam("run_id", type_=_e.run_id.type)))


def _packed(events: list[tuple[str, dict[str, Any]]], first_seq: int) -> list[tuple[int, str, Any]]:
    """`(seq, event, data)` rows of `events` numbered from `first_seq`, each run of two or more
    consecutive deltas packed into one row that carries the seq of its last piece."""
    rows: list[tuple[int, str, Any]] = []
    pieces: list[dict[str, Any]] = []
    seq = first_seq - 1
    for name, data in events:
        seq += 1
        if name == DELTA_EVENT:
            pieces.append(data)
            continue
        if pieces:
            rows.append(_delta_row(seq - 1, pieces))
            pieces = []
        rows.append((seq, name, data))
    if pieces:
        rows.append(_delta_row(seq, pieces))
    return rows


def _delta_row(last_seq: int, pieces: list[dict[str, Any]]) -> tuple[int, str, Any]:
    return (last_seq, DELTA_EVENT, pieces[0]) if len(pieces) == 1 else (last_seq, PACKED_DELTAS, pieces)


def unpack(seq: int, event: str, data: Any) -> list[tuple[int, str, dict[str, Any]]]:
    """A stored row as the events it holds, `(seq, event, data)` each."""
    if event != PACKED_DELTAS:
        return [(seq, event, data)]
    first = seq - len(data) + 1
    return [(first + i, DELTA_EVENT, piece) for i, piece in enumerate(data)]


async def _insert(session, run_id: uuid.UUID, events: list[tuple[str, dict[str, Any]]], *, new: bool = False,
                  need_last: bool = True) -> int:
    """Insert after the run's last event (`new`: the run was created in this transaction, so
    none); returns the seq of the last one, or 0 when the caller needs none (`need_last`)."""
    now = utcnow()
    if not new and not need_last:
        previous, rows = 0, []
        for seq, name, data in _packed(events, 1):
            rows.append({"run_id": run_id, "span": seq - previous, "event": name, "data": data, "created_at": now})
            previous = seq
        await session.execute(_INSERT_AFTER_LAST, rows)
        return 0
    last = 0 if new else await session.scalar(_LAST_SEQ, {"rid": run_id})
    rows = [{"run_id": run_id, "seq": seq, "event": name, "data": data, "created_at": now}
            for seq, name, data in _packed(events, last + 1)]
    await session.execute(_INSERT, rows)
    return last + len(events)


async def append_rows(session, run_id: uuid.UUID, events: Iterable[tuple[str, dict[str, Any]]]) -> int:
    """Store `events` as the run's next rows; returns the seq of the last one (0 if none)."""
    events = list(events)
    if not events:
        return 0
    if session.bind.dialect.name != "sqlite":  # SQLite's write transaction is the database's only one
        await _lock_run(session, run_id)
    return await _insert(session, run_id, events)


async def stage(work) -> None:
    """Store the run events a unit of work (heddle/loom/unit_of_work.py) collected inside its
    transaction, and the webhook deliveries they cause (a run that entered closed, failed or a
    waiting state). Called by `RunWork.stage()`.

    `work.held` maps runs whose row the transaction already locked (a fenced UPDATE or a move
    does) to their workspace: their lock is not taken again. `work.first`: events stored ahead
    of the staged ones (a reply's deltas, already published: see RunEventLog.take).
    """
    session = work.session
    by_run: dict[uuid.UUID, list[tuple[str, dict[str, Any]]]] = {
        run_id: list(events) for run_id, events in work.first.items() if events}
    for _, name, data in work.events:
        run_id = event_run_id(name, data)
        if run_id is not None:
            by_run.setdefault(run_id, []).append((name, data))
    held = {**work.held, **work.created}
    for run_id, events in by_run.items():
        workspace_id = held.get(run_id) or await _lock_run(session, run_id)
        if workspace_id is None:
            continue
        if await _enqueue_webhooks(session, workspace_id, run_id, events, work.endpoints.get(workspace_id)):
            work.webhooks_owed = True
        await _insert(session, run_id, events, new=run_id in work.created, need_last=False)


async def _enqueue_webhooks(session, workspace_id: str, run_id: uuid.UUID,
                            events: list[tuple[str, dict[str, Any]]], has_endpoint: bool | None = None) -> bool:
    """The deliveries the webhook rule (heddle/webhooks/run_rule.py) owes for these events, given
    the run's last stored update; True if any. `has_endpoint`: already known in this
    transaction (a closing hold returned it), else asked."""
    updates = [data for name, data in events if name == "run.updated"]
    if not run_rule.may_owe(updates):
        return False
    if has_endpoint is None:
        has_endpoint = await webhooks.has_endpoint(session, workspace_id)
    if not has_endpoint:
        return False
    previous = await session.scalar(_LAST_UPDATE, {"rid": run_id})
    deliveries = run_rule.owed((previous or {}).get("state"), updates)
    for event_type, data in deliveries:
        webhooks.enqueue(session, workspace_id, event_type, data)
    return bool(deliveries)


async def read_after(session, run_id: uuid.UUID, after: int,
                     limit: int = 500) -> list[tuple[int, str, dict[str, Any]]]:
    """The run's events after `after` as `(seq, event, data)`, packed deltas unpacked: up to
    `limit` stored rows (a packed row that straddles `after` gives only its later pieces)."""
    rows = await session.execute(
        select(_e.seq, _e.event, _e.data).where(_e.run_id == run_id, _e.seq > after)
        .order_by(_e.seq).limit(limit))
    return [event for seq, name, data in rows for event in unpack(seq, name, data) if event[0] > after]


class Waiter:
    """One SSE stream's wake-up: `event` is set on news; `rows` holds freshly stored deltas
    `(seq, event, data)` it can send without reading them back; `stale` asks for a read."""

    __slots__ = ("event", "rows", "stale")
    MAX_ROWS = 1000  # a stream that falls further behind reads from the table instead

    def __init__(self) -> None:
        self.event = asyncio.Event()
        self.rows: list[tuple[int, str, dict[str, Any]]] = []
        self.stale = False


class RunEventSignals:
    """In-process wake-ups for the SSE streams of a run (one event loop)."""

    def __init__(self) -> None:
        self._waiters: dict[uuid.UUID, set[Waiter]] = {}

    def notify(self, run_id: uuid.UUID, rows: list[tuple[int, str, dict[str, Any]]] | None = None) -> None:
        for waiter in self._waiters.get(run_id, ()):
            if rows and len(waiter.rows) + len(rows) <= Waiter.MAX_ROWS:
                waiter.rows.extend(rows)
            else:
                waiter.rows.clear()
                waiter.stale = True
            waiter.event.set()

    def notify_for(self, work) -> None:
        for run_id in runs_of(work):
            self.notify(run_id)

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


class RunEventLog:
    """Stores streamed deltas in batches, one writer task per run (see the module docstring)."""

    def __init__(self, db: Database, signals: RunEventSignals | None = None):
        self.db = db
        self.signals = signals or RunEventSignals()
        self.listeners: list[Callable[[], None]] = []  # told after a commit that owed webhooks
        self._pending: dict[uuid.UUID, list[tuple[str, dict[str, Any]]]] = {}
        self._writers: dict[uuid.UUID, asyncio.Task[None]] = {}
        self._writing: set[uuid.UUID] = set()  # runs whose writer took a batch and is storing it
        self.dropped = 0  # pieces lost to a failed write (the whole message still arrives)

    def wake(self, name: str, data: dict[str, Any]) -> None:
        """Wake the run's streams to read the table (an event another process published)."""
        try:
            run_id = event_run_id(name, data)
        except ValueError:
            return
        if run_id is not None:
            self.signals.notify(run_id)

    def append(self, run_id: uuid.UUID, event: str, data: dict[str, Any]) -> None:
        self._pending.setdefault(run_id, []).append((event, data))
        if run_id not in self._writers:
            self._writers[run_id] = asyncio.create_task(self._write(run_id), name=f"run-events-{run_id}")

    async def _write(self, run_id: uuid.UUID) -> None:
        try:
            await asyncio.sleep(GATHER_SECONDS)
            while batch := self._pending.pop(run_id, None):
                self._writing.add(run_id)
                try:
                    async with self.db.transaction() as session:
                        last = await append_rows(session, run_id, batch)
                except Exception as exc:  # deltas are a preview; never fail the run for them
                    self.dropped += len(batch)
                    log.warning("run_events_write_failed", run_id=str(run_id), error=type(exc).__name__,
                                detail=str(exc)[:200])
                    continue
                first = last - len(batch) + 1  # live streams send these without reading them back
                self.signals.notify(run_id, [(first + i, name, data) for i, (name, data) in enumerate(batch)])
        finally:
            self._writing.discard(run_id)
            self._writers.pop(run_id, None)

    async def committed(self, work) -> None:
        """The after-commit hook of every run unit of work (heddle/loom/unit_of_work.py): wake
        this process's SSE streams of the changed runs, and the webhook dispatcher if owed."""
        if any(True for _ in runs_of(work)):
            self.signals.notify_for(work)
        if work.webhooks_owed:  # the dispatcher polls too; a wake-up is only for speed
            for listener in self.listeners:
                listener()

    async def drain(self, run_id: uuid.UUID) -> None:
        """Wait until every piece appended for this run so far is stored."""
        writer = self._writers.get(run_id)
        if writer is not None:
            await asyncio.shield(writer)

    async def take(self, run_id: uuid.UUID) -> list[tuple[str, dict[str, Any]]]:
        """The pieces appended for this run that no writer has taken, for the caller to store
        in its own transaction; a write already in progress is waited for first, so what the
        caller stores comes after everything stored before."""
        writer = self._writers.get(run_id)
        if writer is not None and run_id in self._writing:
            await asyncio.shield(writer)  # it also stores whatever arrived during its write
        return self._pending.pop(run_id, [])  # a writer still gathering then finds nothing
