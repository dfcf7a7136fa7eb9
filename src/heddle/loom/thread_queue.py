"""A thread's queue: messages posted with `if_busy: enqueue` wait their turn as queued runs.

A queued run waits in state `queued` with its message in `queued_messages`. When the run ahead
of it ends (closed, failed or cancelled), `advance_queue` starts the oldest one in the same
transaction, giving its message the thread's next `seq`. So messages are never lost (they are
stored at the 202) nor reordered (the queue is ordered by an autoincrement id). Cancelling a
queued run (heddle/loom/cancellation.py) releases its message into the thread the same way.

Every change here is a conditional state transition (heddle/loom/states.py) in the caller's unit
of work (heddle/loom/unit_of_work.py); new rows, the thread lock and message numbers come from
heddle/loom/rows.py.
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import bindparam, delete, exists, select

from heddle.auth.context import AuthContext
from heddle.db.base import utcnow
from heddle.loom import rows
from heddle.loom.approvals import actor
from heddle.loom.models import Message, QueuedMessage, Run, Thread
from heddle.loom.serializers import message_dict, run_dict
from heddle.loom.states import AWAITING_INPUT, AWAITING_OUTCOME, QUEUED, RUNNING
from heddle.loom.unit_of_work import RunWork
from heddle.loom.views import render_run
from heddle.timeutil import iso

# A thread is busy while one of its runs is in one of these states: a new message waits.
BUSY_STATES = (RUNNING, AWAITING_OUTCOME, AWAITING_INPUT)


def with_note(run: Run, key: str, value: dict[str, Any]) -> dict[str, Any]:
    """The run's `control` column with `value` noted under `key` (the queue's, a cancel's)."""
    return {**(run.control or {}), key: value}


async def release_message(session, run: Run) -> Message | None:
    """Move a queued run's message into the thread's messages (started or cancelled: never lost)."""
    queued = await session.scalar(select(QueuedMessage).where(QueuedMessage.run_id == run.id))
    if queued is None:
        return None
    message = Message(id=queued.message_id, thread_id=run.thread_id, run_id=run.id,
                      seq=await rows.next_message_seq(session, run.thread_id), role="user", content=queued.content,
                      attachments=queued.attachments, created_at=queued.created_at, scheduled=queued.scheduled)
    await session.execute(delete(QueuedMessage).where(QueuedMessage.id == queued.id))
    session.add(message)
    await session.flush()
    return message


_queued, _runs = QueuedMessage.__table__.c, Run.__table__.c
_THREAD_ID = bindparam("thread_id", type_=_queued.thread_id.type)
# Built once, of table columns (every run's end runs it): the thread's oldest queued run, if no
# run of it is busy.
_QUEUE_HEAD_IF_IDLE = (
    select(_queued.run_id)
    .where(_queued.thread_id == _THREAD_ID,
           ~exists().where(_runs.thread_id == _THREAD_ID, _runs.state.in_(BUSY_STATES)))
    .order_by(_queued.id).limit(1)
)


async def advance_queue(work: RunWork, thread_id: uuid.UUID) -> Run | None:
    """Start the thread's oldest queued run when no run of the thread is busy any more."""
    session = work.session
    await rows.lock_thread(session, thread_id)
    # One statement (it runs at the end of every run): the oldest queued run, if none is busy.
    head = await session.scalar(_QUEUE_HEAD_IF_IDLE, {"thread_id": thread_id})
    if head is None:
        return None
    run = await session.get(Run, head)
    message = await release_message(session, run)
    now = utcnow()
    await work.move(run, "start", opened_at=now,
                    control=with_note(run, "queue", {**(run.control or {}).get("queue", {}), "started_at": iso(now)}))
    work.message_created(thread_id, message_dict(message))
    work.run_updated(thread_id, await render_run(session, run))
    work.start(run.id)
    return run


async def queued_runs(session, thread_id: uuid.UUID) -> list[Run]:
    return list(await session.scalars(
        select(Run).join(QueuedMessage, QueuedMessage.run_id == Run.id)
        .where(QueuedMessage.thread_id == thread_id).order_by(QueuedMessage.id)))


async def enqueue(work: RunWork, auth: AuthContext, thread: Thread, agent_id: str, content: str,
                  connection_id: uuid.UUID | None, *, agent_version: int = 1, message_id: uuid.UUID | None = None,
                  attachments: list[dict[str, Any]] | None = None, origin: str = "api",
                  scheduled: dict[str, Any] | None = None) -> dict[str, Any]:
    """A queued run and its stored message; it starts when the runs ahead of it have ended."""
    session = work.session
    position = len(await queued_runs(session, thread.id)) + 1
    row = rows.run_row(auth, thread, agent_id=agent_id, agent_version=agent_version, state=QUEUED,
                       connection_id=connection_id, fence=0, origin=origin)
    now = row["created_at"]
    row["control"] = {"queue": {"queued_at": iso(now), "position": position, "by": actor(auth)}}
    run = await work.insert_run(row)
    queued = QueuedMessage(thread_id=thread.id, run_id=run.id, message_id=message_id or uuid.uuid4(), content=content,
                           attachments=attachments or None, created_at=now, scheduled=scheduled)
    session.add(queued)
    await session.flush()
    data = run_dict(run, latest=None, connection=None)
    work.run_updated(thread.id, data)
    return {"run_id": str(run.id), "message_id": str(queued.message_id), "run": data,
            "queued": True, "queue_position": position}
