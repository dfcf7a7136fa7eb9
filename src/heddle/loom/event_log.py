"""The stored log of a run's events, which `GET /v1/loom/runs/{id}/events` streams and resumes.

Every `run.updated`, `message.created` and `message.delta` of a run is a row of `run_events`
with the run's next `seq` (1, 2, 3, ... per run): the SSE `id:`. A client that reconnects with
`Last-Event-ID: n` gets the rows after `n` (`read_after`), whether the run is still going or
ended long ago, so nothing is lost between connections.

Who writes it: the outbox (heddle/loom/event_outbox.py) in the transaction of the change an
event describes, and the delta writer (heddle/loom/delta_writer.py) for a reply's pieces while
the model writes. Consecutive `message.delta` pieces stored together are one row
(`runs_vocabulary.pack`: the pieces' list as `data`, `seq` the last piece's), so a reply of 50
words costs one row, not 50: `read_after` unpacks them, each piece with its own `seq`, exactly
as if stored one by one.

`seq` is allocated as max + 1 while holding the run's row lock (PostgreSQL `FOR UPDATE`; every
writer of a run's events holds it, SQLite has one writer anyway), so ids never collide.
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import bindparam, func, insert, select

from heddle.db import dialect
from heddle.db.base import utcnow
from heddle.loom.models import Run, RunEventRow
from heddle.loom.run_event import RunEvent
from heddle.runs_vocabulary import DELTA_EVENT, pack, unpack

_INSERT = insert(RunEventRow.__table__)


async def lock_run(session, run_id: uuid.UUID) -> str | None:
    """Take the run's row lock (a no-op on SQLite's single writer); returns its workspace."""
    return await session.scalar(dialect.for_update(session, select(Run.workspace_id).where(Run.id == run_id)))


# Built once, of table columns (Core statements: every step that changes a run runs them).
_e = RunEventRow.__table__.c
_LAST_SEQ = select(func.coalesce(func.max(_e.seq), 0)).where(_e.run_id == bindparam("rid"))
# A row numbered after the run's last one by the statement that stores it (`span`: the events
# the row carries, more than one for packed deltas): one round trip fewer than reading the
# last seq first. Each row of an executemany sees the rows stored before it in the transaction,
# and the run's row lock (held by the staging transaction) keeps other writers out.
_INSERT_AFTER_LAST = insert(RunEventRow.__table__).from_select(
    ["run_id", "seq", "event", "data", "created_at"],
    select(bindparam("run_id", type_=_e.run_id.type),
           func.coalesce(func.max(_e.seq), 0) + bindparam("span", type_=_e.seq.type),
           bindparam("event", type_=_e.event.type), bindparam("data", type_=_e.data.type),
           bindparam("created_at", type_=_e.created_at.type))
    .where(_e.run_id == bindparam("run_id", type_=_e.run_id.type)))


def _rows(events: list[RunEvent], first_seq: int) -> list[tuple[int, str, Any]]:
    """`(seq, event, data)` rows of `events` numbered from `first_seq`, each run of two or more
    consecutive deltas packed into one row that carries the seq of its last piece."""
    rows: list[tuple[int, str, Any]] = []
    pieces: list[dict[str, Any]] = []
    seq = first_seq - 1
    for event in events:
        seq += 1
        if event.name == DELTA_EVENT:
            pieces.append(event.payload)
            continue
        if pieces:
            rows.append((seq - 1, *pack(pieces)))
            pieces = []
        rows.append((seq, event.name, event.payload))
    if pieces:
        rows.append((seq, *pack(pieces)))
    return rows


async def insert(session, run_id: uuid.UUID, events: list[RunEvent], *, new: bool = False,
                 need_last: bool = True) -> int:
    """Insert after the run's last event (`new`: the run was created in this transaction, so
    none); returns the seq of the last one, or 0 when the caller needs none (`need_last`)."""
    now = utcnow()
    if not new and not need_last:
        previous, rows = 0, []
        for seq, name, data in _rows(events, 1):
            rows.append({"run_id": run_id, "span": seq - previous, "event": name, "data": data, "created_at": now})
            previous = seq
        await session.execute(_INSERT_AFTER_LAST, rows)
        return 0
    last = 0 if new else await session.scalar(_LAST_SEQ, {"rid": run_id})
    rows = [{"run_id": run_id, "seq": seq, "event": name, "data": data, "created_at": now}
            for seq, name, data in _rows(events, last + 1)]
    await session.execute(_INSERT, rows)
    return last + len(events)


async def append(session, run_id: uuid.UUID, events: list[RunEvent]) -> int:
    """Store `events` as the run's next rows, under its row lock; the seq of the last one (0 if none)."""
    if not events:
        return 0
    if not dialect.one_writer(session):  # SQLite's write transaction is the database's only one
        await lock_run(session, run_id)
    return await insert(session, run_id, events)


_RUNS_LOCKED = select(Run.id).where(Run.id.in_(bindparam("ids", expanding=True))).order_by(Run.id)
_LAST_SEQS = (select(_e.run_id, func.max(_e.seq)).where(_e.run_id.in_(bindparam("ids", expanding=True)))
              .group_by(_e.run_id))


async def append_many(session, batches: dict[uuid.UUID, list[RunEvent]]) -> dict[uuid.UUID, int]:
    """Store each run's `batches[run]` as its next rows, every run in one statement: the seq of
    each run's last event. Runs that no longer exist (a thread erased meanwhile) are left out of
    the result and their events dropped. Their row locks are taken in id order (PostgreSQL; so
    two writers never wait on each other), then one read of every run's last seq and one insert."""
    ids = list(batches)
    query = dialect.for_update(session, _RUNS_LOCKED)
    alive = set(await session.scalars(query, {"ids": ids}))
    if not alive:
        return {}
    live = [run_id for run_id in ids if run_id in alive]
    last = dict((await session.execute(_LAST_SEQS, {"ids": live})).all())
    now = utcnow()
    rows, lasts = [], {}
    for run_id in live:
        first = last.get(run_id, 0) + 1
        rows += [{"run_id": run_id, "seq": seq, "event": name, "data": data, "created_at": now}
                 for seq, name, data in _rows(batches[run_id], first)]
        lasts[run_id] = first + len(batches[run_id]) - 1
    await session.execute(_INSERT, rows)
    return lasts


async def read_after(session, run_id: uuid.UUID, after: int, limit: int = 500) -> list[RunEvent]:
    """The run's events after `after`, packed deltas unpacked: up to `limit` stored rows (a
    packed row that straddles `after` gives only its later pieces)."""
    rows = await session.execute(
        select(_e.seq, _e.event, _e.data).where(_e.run_id == run_id, _e.seq > after)
        .order_by(_e.seq).limit(limit))
    return [event for seq, name, data in rows for event in unpack_row(run_id, seq, name, data) if event.seq > after]


def unpack_row(run_id: uuid.UUID, seq: int, name: str, data: Any) -> list[RunEvent]:
    """The events a stored row holds, each with its own `seq` (a packed row's last is the row's)."""
    held = unpack(name, data)
    first = seq - len(held) + 1
    return [RunEvent(event, piece, None, run_id, first + i) for i, (event, piece) in enumerate(held)]
