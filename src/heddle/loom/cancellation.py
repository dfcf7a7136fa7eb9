"""Cancelling runs: `POST /runs/{id}/cancel`, and `if_busy: interrupt` (cancel the thread's active
run and every queued one, so the new message runs next).

Every change here is a conditional state transition (heddle/loom/states.py) in the caller's unit
of work (heddle/loom/unit_of_work.py), so it composes with the engine: an engine step that
finds its run no longer `running` drops what it was doing (a model reply is discarded; a tool
call already sent is still recorded, because its side effect may have happened). A cancelled
run hands its thread to the next queued one (heddle/loom/thread_queue.py).
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import select

from heddle.auth.context import AuthContext
from heddle.db.base import utcnow
from heddle.errors import HeddleError
from heddle.loom import queries as q
from heddle.loom.approvals import actor, decide
from heddle.loom.models import Run, ToolCall
from heddle.loom.serializers import message_dict
from heddle.loom.states import (
    CALL_AWAITING_APPROVAL,
    CALL_PENDING,
    CANCELLED,
    FAILED,
    QUEUED,
    TERMINAL,
    in_flight,
)
from heddle.loom.thread_queue import advance_queue, queued_runs, release_message, with_note
from heddle.loom.unit_of_work import RunWork
from heddle.loom.views import render_run
from heddle.timeutil import iso


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


async def cancel(work: RunWork, run: Run, *, by: dict[str, Any], reason: str, advance: bool = True) -> Run:
    """Move a non-terminal run to `failed` / `cancelled` in the caller's unit of work.

    `work.start(run.id)` nudges an executor still working on it, so a model call in flight
    is abandoned at once instead of when it returns.
    """
    session = work.session
    was, now = run.state, utcnow()
    await _stop_unsent_calls(work, run, by)
    released = await release_message(session, run) if was == QUEUED else None
    await work.move(run, "cancel", error_code=CANCELLED, error_message=reason[:2000], pending_question=None,
                    control=with_note(run, "cancelled", {"by": by, "at": iso(now), "from_state": was,
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


async def interrupt(work: RunWork, auth: AuthContext, thread_id: uuid.UUID, active: Run | None) -> None:
    """`if_busy: interrupt`: cancel the active run and every queued one (their messages are kept
    in the thread), so the new message runs next."""
    by = actor(auth)
    for run in await queued_runs(work.session, thread_id):
        await cancel(work, run, by=by, reason="Interrupted by a newer message.", advance=False)
    if active is not None and active.state not in TERMINAL:
        await cancel(work, active, by=by, reason="Interrupted by a newer message.", advance=False)
