"""Cancelling and queueing runs: cancel a run, interrupt a thread, and the per-thread queue of
messages posted with `if_busy: enqueue` (`POST /runs/{id}/cancel`, `if_busy`).

Every change here is a conditional state transition (`loom/states.py`) in the caller's unit of
work (heddle/loom/unit_of_work.py), so it composes with the engine: an engine step that finds its run no longer
`running` drops what it was doing (a model reply is discarded; a tool call already sent is
still recorded, because its side effect may have happened).

The queue: a queued run waits in state `queued` with its message in `queued_messages`. When
the run ahead of it ends (closed, failed or cancelled), `advance_queue` starts the oldest one in
the same transaction, giving its message the thread's next `seq`. So messages are never lost
(they are stored at the 202) nor reordered (the queue is ordered by an autoincrement id).
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import bindparam, delete, exists, select

from heddle.auth.context import AuthContext
from heddle.db.base import utcnow
from heddle.errors import HeddleError
from heddle.loom import queries as q
from heddle.loom.approvals import actor, decide
from heddle.loom.models import Message, QueuedMessage, Run, Thread, ToolCall
from heddle.loom.serializers import message_dict, run_dict
from heddle.loom.states import (
    AWAITING_INPUT,
    AWAITING_OUTCOME,
    CALL_AWAITING_APPROVAL,
    CALL_PENDING,
    CANCELLED,
    FAILED,
    QUEUED,
    RUNNING,
    TERMINAL,
    in_flight,
)
from heddle.loom.unit_of_work import RunWork
from heddle.loom.views import render_run
from heddle.timeutil import iso

# A thread is busy while one of its runs is in one of these states: a new message waits.
BUSY_STATES = (RUNNING, AWAITING_OUTCOME, AWAITING_INPUT)


def _note(run: Run, key: str, value: dict[str, Any]) -> dict[str, Any]:
    return {**(run.control or {}), key: value}


async def _lock_thread(session, thread_id: uuid.UUID) -> None:
    """Serialise queue changes of one thread with message posts (SQLite's writer lock already does)."""
    if session.bind.dialect.name != "sqlite":
        await session.execute(select(Thread.id).where(Thread.id == thread_id).with_for_update())


async def _stop_unsent_calls(work: RunWork, run: Run, by: dict[str, Any]) -> None:
    """Calls not yet sent never will be; a hosted call already in flight is left to its engine,
    which records its result under its reliability rules (or `awaiting_outcome` if unknown)."""
    calls = await work.session.scalars(select(ToolCall).where(
        ToolCall.run_id == run.id, ToolCall.status.in_((CALL_PENDING, CALL_AWAITING_APPROVAL))))
    for call in list(calls):
        if call.status == CALL_AWAITING_APPROVAL:
            await decide(work, call, False, by, "the run was cancelled")
        elif not in_flight(call.attempts):
            await work.move_call(call, CALL_PENDING, "fail", result={"error": {
                "code": CANCELLED, "message": "The run was cancelled before this call was made."}})


async def _release_queued_message(session, run: Run) -> Message | None:
    """Move a queued run's message into the thread's messages (started or cancelled: never lost)."""
    queued = await session.scalar(select(QueuedMessage).where(QueuedMessage.run_id == run.id))
    if queued is None:
        return None
    message = Message(id=queued.message_id, thread_id=run.thread_id, run_id=run.id,
                      seq=await q.next_message_seq(session, run.thread_id), role="user", content=queued.content,
                      created_at=queued.created_at)
    await session.execute(delete(QueuedMessage).where(QueuedMessage.id == queued.id))
    session.add(message)
    await session.flush()
    return message


async def cancel(work: RunWork, run: Run, *, by: dict[str, Any], reason: str, advance: bool = True) -> Run:
    """Move a non-terminal run to `failed` / `cancelled` in the caller's unit of work.

    `work.start(run.id)` nudges an executor still working on it, so a model call in flight
    is abandoned at once instead of when it returns.
    """
    session = work.session
    was, now = run.state, utcnow()
    await _stop_unsent_calls(work, run, by)
    released = await _release_queued_message(session, run) if was == QUEUED else None
    await work.move(run, "cancel", error_code=CANCELLED, error_message=reason[:2000], pending_question=None,
                    control=_note(run, "cancelled", {"by": by, "at": iso(now), "from_state": was,
                                                     "reason": reason}))
    if released is not None:
        work.message_created(run.thread_id, message_dict(released))
    work.run_updated(run.thread_id, await render_run(session, run))
    if was != QUEUED:
        work.start(run.id)
    if advance:
        await advance_queue(work, run.thread_id)
    return run


async def cancel_run(work: RunWork, auth: AuthContext, run_id: str) -> dict[str, Any]:
    """`POST /runs/{id}/cancel`: idempotent; a run that already ended otherwise is 409."""
    session = work.session
    run = await q.visible_run(session, auth, run_id, for_update=True)
    if run.state == FAILED and run.error_code == CANCELLED:
        return await render_run(session, run)  # a second cancel: nothing more to do
    if run.state in TERMINAL:
        raise HeddleError("run_terminal", f"Run {run.id} already ended ({run.state}); it cannot be cancelled.",
                          details={"run_id": str(run.id), "state": run.state,
                                   "error_code": run.error_code})
    who = "the caller" if auth.mode == "relay" else f"subject {auth.subject}"
    await cancel(work, run, by=actor(auth), reason=f"Cancelled by {who}.")
    return await render_run(session, run)


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
    await _lock_thread(session, thread_id)
    # One statement (it runs at the end of every run): the oldest queued run, if none is busy.
    head = await session.scalar(_QUEUE_HEAD_IF_IDLE, {"thread_id": thread_id})
    if head is None:
        return None
    run = await session.get(Run, head)
    message = await _release_queued_message(session, run)
    now = utcnow()
    await work.move(run, "start", opened_at=now,
                    control=_note(run, "queue", {**(run.control or {}).get("queue", {}), "started_at": iso(now)}))
    work.message_created(thread_id, message_dict(message))
    work.run_updated(thread_id, await render_run(session, run))
    work.start(run.id)
    return run


async def queued_runs(session, thread_id: uuid.UUID) -> list[Run]:
    return list(await session.scalars(
        select(Run).join(QueuedMessage, QueuedMessage.run_id == Run.id)
        .where(QueuedMessage.thread_id == thread_id).order_by(QueuedMessage.id)))


async def enqueue(work: RunWork, auth: AuthContext, thread: Thread, agent_id: str, content: str,
                  connection_id: uuid.UUID | None, *, agent_version: int = 1) -> dict[str, Any]:
    """A queued run and its stored message; it starts when the runs ahead of it have ended."""
    session = work.session
    now = utcnow()
    position = len(await queued_runs(session, thread.id)) + 1
    run = await work.insert_run(dict(
        id=uuid.uuid4(), thread_id=thread.id, workspace_id=auth.workspace_id, agent_id=agent_id,
        agent_version=agent_version, subject=thread.subject, state=QUEUED, connection_id=connection_id,
        auth_mode=auth.mode, key_id=auth.key_id, session_token=auth.session_token,
        session_token_expires_at=auth.session_token_expires_at, opened_at=now, created_at=now, updated_at=now,
        cost_micro=0, turn_count=0, fence=0,
        control={"queue": {"queued_at": iso(now), "position": position, "by": actor(auth)}}))
    queued = QueuedMessage(thread_id=thread.id, run_id=run.id, message_id=uuid.uuid4(), content=content,
                           created_at=now)
    session.add(queued)
    await session.flush()
    data = run_dict(run, latest=None, connection=None)
    work.run_updated(thread.id, data)
    return {"run_id": str(run.id), "message_id": str(queued.message_id), "run": data,
            "queued": True, "queue_position": position}


async def interrupt(work: RunWork, auth: AuthContext, thread_id: uuid.UUID, active: Run | None) -> None:
    """`if_busy: interrupt`: cancel the active run and every queued one (their messages are kept
    in the thread), so the new message runs next."""
    by = actor(auth)
    for run in await queued_runs(work.session, thread_id):
        await cancel(work, run, by=by, reason="Interrupted by a newer message.", advance=False)
    if active is not None and active.state not in TERMINAL:
        await cancel(work, active, by=by, reason="Interrupted by a newer message.", advance=False)
