"""Schedules: a message a thread receives later, once (`at`) or on a cron (issue 45).

Made by the thread's subject (`POST /v1/loom/threads/{id}/schedules`, relay or direct: a direct
caller only in their own threads), or by the agent itself through the built-in
`schedule_followup` tool (loom/tools/schedule.py). The timing rules are loom/schedule_rules.py
(pure); firing is loom/schedule_firing.py. Deleting a thread or erasing a subject deletes its
schedules (loom/erasure.py).
"""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from heddle.auth.context import AuthContext
from heddle.db.base import utcnow
from heddle.errors import HeddleError
from heddle.loom import queries as q
from heddle.loom import rows, schedule_rules
from heddle.loom.models import Schedule, Thread
from heddle.timeutil import iso
from heddle.workspaces.service import resolve_connection

ACTIVE, PAUSED, ENDED = "active", "paused", "ended"
LIVE = (ACTIVE, PAUSED)  # counted against the caps
PAUSED_BY_CREDITS = "insufficient_credits"


@dataclass(frozen=True, slots=True)
class Caps:
    per_thread: int
    per_subject: int


def schedule_dict(s: Schedule) -> dict[str, Any]:
    return {
        "id": str(s.id), "thread_id": str(s.thread_id), "subject": s.subject, "content": s.content,
        "at": iso(s.at), "cron": s.cron, "timezone": s.timezone, "ends_at": iso(s.ends_at),
        "max_runs": s.max_runs, "runs": s.runs or 0, "state": s.state, "paused_reason": s.paused_reason,
        "next_run_at": iso(s.next_run_at),
        "created_by": {"kind": s.created_by, "run_id": str(s.created_by_run_id) if s.created_by_run_id else None},
        "last_run": ({"at": iso(s.last_run_at), "run_id": str(s.last_run_id) if s.last_run_id else None,
                      "late_seconds": s.last_late_seconds} if s.last_run_at else None),
        "last_error": s.last_error, "created_at": iso(s.created_at),
    }


async def _check_caps(session: AsyncSession, thread: Thread, caps: Caps) -> None:
    live = Schedule.state.in_(LIVE)
    on_thread = await session.scalar(select(func.count()).select_from(Schedule).where(
        Schedule.thread_id == thread.id, live))
    if on_thread >= caps.per_thread:
        raise HeddleError("too_many_schedules", f"The thread has {on_thread} schedules, the most it may have.",
                          details={"scope": "thread", "limit": caps.per_thread})
    of_subject = await session.scalar(select(func.count()).select_from(Schedule).where(
        Schedule.workspace_id == thread.workspace_id, Schedule.subject == thread.subject, live))
    if of_subject >= caps.per_subject:
        raise HeddleError("too_many_schedules", f"The subject has {of_subject} schedules, the most it may have.",
                          details={"scope": "subject", "limit": caps.per_subject})


async def add_schedule(session: AsyncSession, thread: Thread, *, content: str, when: schedule_rules.When,
                       caps: Caps, created_by: str, auth_mode: str, key_id: str | None,
                       connection_id: uuid.UUID | None, run_id: uuid.UUID | None = None) -> Schedule:
    """A new active schedule of `thread` (the caller holds the thread's lock or SQLite's writer)."""
    await _check_caps(session, thread, caps)
    now = utcnow()
    schedule = Schedule(
        id=uuid.uuid4(), workspace_id=thread.workspace_id, thread_id=thread.id, subject=thread.subject,
        content=content, at=when.at, cron=when.cron, timezone=when.timezone, ends_at=when.ends_at,
        max_runs=when.max_runs, runs=0, state=ACTIVE, next_run_at=when.first_run_at, created_by=created_by,
        created_by_run_id=run_id, auth_mode=auth_mode, key_id=key_id, connection_id=connection_id,
        created_at=now, updated_at=now)
    session.add(schedule)
    await session.flush()
    return schedule


async def create(session: AsyncSession, auth: AuthContext, thread_id: str, *, content: str,
                 at: dt.datetime | None, cron: str | None, timezone: str | None, ends_at: dt.datetime | None,
                 max_runs: int | None, caps: Caps) -> dict[str, Any]:
    """POST /threads/{id}/schedules: only in the caller's own thread (404 for anyone else's)."""
    auth.require_subject()
    thread = await q.visible_thread(session, auth, thread_id)
    when = schedule_rules.check(at=at, cron=cron, timezone=timezone, ends_at=ends_at, max_runs=max_runs,
                                now=utcnow())
    connection_id = None
    if auth.connection_ref:
        conn = await resolve_connection(session, auth.workspace_id, auth.connection_ref)
        if conn is None:
            raise HeddleError("connection_not_found", f"No connection {auth.connection_ref!r} in this workspace.")
        connection_id = conn.id
    await rows.lock_thread(session, thread.id)  # two concurrent creations count each other
    schedule = await add_schedule(session, thread, content=content, when=when, caps=caps, created_by="caller",
                                  auth_mode=auth.mode, key_id=auth.key_id, connection_id=connection_id)
    return schedule_dict(schedule)


async def list_for_thread(session: AsyncSession, auth: AuthContext, thread_id: str) -> list[dict[str, Any]]:
    auth.require_subject()
    thread = await q.visible_thread(session, auth, thread_id)
    found = await session.scalars(select(Schedule).where(Schedule.thread_id == thread.id)
                                  .order_by(Schedule.created_at, Schedule.id))
    return [schedule_dict(s) for s in found]


async def _visible(session: AsyncSession, auth: AuthContext, schedule_id: str) -> Schedule:
    sid = q.parse_id(schedule_id, "schedule")
    schedule = await session.get(Schedule, sid)
    if schedule is None or schedule.workspace_id != auth.workspace_id or schedule.subject != auth.subject:
        raise q.not_found("schedule")
    return schedule


async def cancel(session: AsyncSession, auth: AuthContext, schedule_id: str) -> dict[str, Any]:
    """DELETE /schedules/{id}: the schedule is gone; a firing already claimed has committed or never will."""
    auth.require_subject()
    schedule = await _visible(session, auth, schedule_id)
    data = schedule_dict(schedule)
    await session.execute(delete(Schedule).where(Schedule.id == schedule.id))
    return {**data, "deleted": True}


# --- the console's (operators) reads and changes, by workspace -----------------------------------

async def list_for_workspace(session: AsyncSession, workspace_id: str, *, thread_id: uuid.UUID | None = None,
                             limit: int = 200) -> list[dict[str, Any]]:
    query = select(Schedule).where(Schedule.workspace_id == workspace_id)
    if thread_id is not None:
        query = query.where(Schedule.thread_id == thread_id)
    found = await session.scalars(query.order_by(Schedule.created_at.desc(), Schedule.id).limit(limit))
    return [schedule_dict(s) for s in found]


async def set_paused(session: AsyncSession, workspace_id: str, schedule_id: uuid.UUID, paused: bool) -> dict:
    """Pause (by an operator) or resume a schedule; a resumed cron takes its next tick after now."""
    schedule = await session.get(Schedule, schedule_id)
    if schedule is None or schedule.workspace_id != workspace_id:
        raise q.not_found("schedule")
    if schedule.state == ENDED:
        return schedule_dict(schedule)
    now = utcnow()
    values: dict[str, Any] = {"state": PAUSED if paused else ACTIVE, "paused_reason": "operator" if paused else None}
    if not paused and schedule.cron and (schedule.next_run_at is None or schedule.next_run_at < now):
        values["next_run_at"] = schedule_rules.next_after_firing(
            cron=schedule.cron, timezone=schedule.timezone, ends_at=schedule.ends_at, max_runs=schedule.max_runs,
            runs=schedule.runs, now=now)
        if values["next_run_at"] is None:
            values["state"] = ENDED
    await session.execute(update(Schedule).where(Schedule.id == schedule.id).values(**values, updated_at=now))
    await session.refresh(schedule)
    return schedule_dict(schedule)


async def delete_one(session: AsyncSession, workspace_id: str, schedule_id: uuid.UUID) -> bool:
    result = await session.execute(delete(Schedule).where(Schedule.id == schedule_id,
                                                          Schedule.workspace_id == workspace_id))
    return bool(result.rowcount)
