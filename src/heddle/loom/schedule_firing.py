"""Firing due schedules, exactly once, from whichever process finds them first.

Each firing is one run unit of work (loom/unit_of_work.py): claim one due schedule under its row
lock (`FOR UPDATE SKIP LOCKED` on PostgreSQL, heddle/db/dialect.py `claim`; SQLite's one writer
on the embedded layout), post its content as the thread's next message through the same path as
`POST /threads/{id}/messages` (loom/service.py `post_message`, `if_busy: enqueue`, run origin
`schedule`), and move `next_run_at` on, all in one commit. Two processes never fire one due time
twice (the second skips the locked row, then finds it moved on); a process killed before the
commit fired nothing, and the next pass fires it. After downtime a schedule is found due late:
it fires once, its message marked late by how much, and a cron then waits for its next tick.

A workspace out of credits does not fire: its due schedules are paused (`paused_reason:
insufficient_credits`, visible in the API and the console), a cron's missed ticks are not kept,
and they resume when the balance is above zero again.

`SchedulePoller` runs `fire_due` every `HEDDLE_SCHEDULE_POLL_SECONDS` in each process that
executes runs: `heddle serve` in the embedded layout, each `heddle worker` in queue mode (the run
a worker's firing creates is enqueued by the database trigger like any other).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import uuid
from typing import Any

from sqlalchemy import select, update

from heddle.auth.context import AuthContext
from heddle.auth.relay import workspace_info
from heddle.db import dialect
from heddle.db.base import Database, utcnow
from heddle.errors import HeddleError
from heddle.loom import schedule_rules, service
from heddle.loom.lease import executor_name
from heddle.loom.models import Schedule
from heddle.loom.schedules import ACTIVE, ENDED, PAUSED, PAUSED_BY_CREDITS
from heddle.loom.unit_of_work import RunUnitOfWork
from heddle.observability.logging import get_logger
from heddle.runs_vocabulary import ORIGIN_SCHEDULE
from heddle.timeutil import iso
from heddle.workspaces.models import Workspace

log = get_logger(__name__)
PROCESS = executor_name()  # which process fired a schedule, in the message's mark


def _due(now: dt.datetime):
    return (select(Schedule).where(Schedule.state == ACTIVE, Schedule.next_run_at <= now)
            .order_by(Schedule.next_run_at, Schedule.id).limit(1))


def mark(schedule: Schedule, due: dt.datetime, now: dt.datetime) -> dict[str, Any]:
    """What the posted message carries: which schedule, who made it, when it was due, how late."""
    late = schedule_rules.late_seconds(due, now)
    return {"schedule_id": str(schedule.id), "created_by": schedule.created_by,
            "created_by_run_id": str(schedule.created_by_run_id) if schedule.created_by_run_id else None,
            "due_at": iso(due), "fired_at": iso(now), "late_seconds": late,
            "late": late > schedule_rules.LATE_AFTER_SECONDS, "fired_by": PROCESS}


async def fire_one(uow: RunUnitOfWork, *, now: dt.datetime | None = None) -> Schedule | None:
    """Claim and fire one due schedule; None when none is due (or all due ones are held)."""
    now = now or utcnow()
    async with uow.transaction() as work:
        session = work.session
        schedule = await session.scalar(dialect.claim(session, _due(now)))
        if schedule is None:
            return None
        ws = await session.get(Workspace, schedule.workspace_id)
        work.realtime = bool(ws.realtime_enabled)
        due = schedule.next_run_at
        values: dict[str, Any] = {"updated_at": now}
        if ws.balance_micro <= 0:
            # Paused, visibly, rather than piling up: a cron forgets the ticks it misses.
            values |= {"state": PAUSED, "paused_reason": PAUSED_BY_CREDITS}
            if schedule.cron:
                values["next_run_at"] = schedule_rules.next_after_firing(
                    cron=schedule.cron, timezone=schedule.timezone, ends_at=schedule.ends_at,
                    max_runs=schedule.max_runs, runs=schedule.runs, now=now) or due
            log.info("schedule_paused_no_credits", schedule_id=str(schedule.id), workspace_id=ws.id)
        else:
            auth = AuthContext(mode=schedule.auth_mode, workspace=workspace_info(ws), key_id=schedule.key_id,
                               subject=schedule.subject,
                               connection_ref=str(schedule.connection_id) if schedule.connection_id else None)
            runs = schedule.runs + 1
            try:
                async with session.begin_nested():
                    posted = await service.post_message(work, auth, str(schedule.thread_id), schedule.content,
                                                        "enqueue", origin=ORIGIN_SCHEDULE,
                                                        scheduled=mark(schedule, due, now))
                values |= {"last_run_id": uuid.UUID(posted["run_id"]), "last_error": None}
            except HeddleError as exc:  # the thread's agent needs a connection now, say: shown, not retried
                values |= {"last_run_id": None, "last_error": {"code": exc.code, "message": exc.message}}
                log.warning("schedule_post_failed", schedule_id=str(schedule.id), code=exc.code)
            following = schedule_rules.next_after_firing(
                cron=schedule.cron, timezone=schedule.timezone, ends_at=schedule.ends_at,
                max_runs=schedule.max_runs, runs=runs, now=now)
            values |= {"runs": runs, "last_run_at": now, "last_late_seconds": schedule_rules.late_seconds(due, now),
                       "next_run_at": following, "state": ACTIVE if following is not None else ENDED}
        await session.execute(update(Schedule).where(Schedule.id == schedule.id).values(**values)
                              .execution_options(synchronize_session=False))
    return schedule


async def resume_paid(db: Database, *, now: dt.datetime | None = None) -> int:
    """Schedules paused for credits whose workspace has credits again: active, due as they were
    (a one-off fires, late; a cron at its next tick)."""
    now = now or utcnow()
    paused = select(Schedule.id).where(Schedule.state == PAUSED, Schedule.paused_reason == PAUSED_BY_CREDITS).limit(1)
    async with db.session() as session:  # a read first: an idle poll takes no write lock (SQLite's one writer)
        if await session.scalar(paused) is None:
            return 0
    funded = select(Workspace.id).where(Workspace.balance_micro > 0)
    async with db.transaction() as session:
        result = await session.execute(
            update(Schedule).where(Schedule.state == PAUSED, Schedule.paused_reason == PAUSED_BY_CREDITS,
                                   Schedule.workspace_id.in_(funded))
            .values(state=ACTIVE, paused_reason=None, updated_at=now).execution_options(synchronize_session=False))
    return result.rowcount or 0


async def fire_due(uow: RunUnitOfWork, *, limit: int = 1000, now: dt.datetime | None = None) -> int:
    """Fire the due schedules (up to `limit`), one transaction each; how many were fired or paused."""
    fired = 0
    while fired < limit and await fire_one(uow, now=now) is not None:
        fired += 1
    return fired


class SchedulePoller:
    """`resume_paid` then `fire_due` every `interval` seconds in the background of a process."""

    def __init__(self, db: Database, uow: RunUnitOfWork, interval: float, batch: int = 50):
        self.db, self.uow, self.interval, self.batch = db, uow, interval, batch
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        if self.interval > 0:
            self._task = asyncio.create_task(self._loop(), name="schedule-poller")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def poll(self) -> int:
        await resume_paid(self.db)
        async with self.db.session() as session:  # a read first: an idle poll writes nothing
            if await session.scalar(_due(utcnow()).with_only_columns(Schedule.id)) is None:
                return 0
        total = 0
        while (fired := await fire_due(self.uow, limit=self.batch)) > 0:  # a backlog: no sleep between
            total += fired
            if fired < self.batch:
                break
        return total

    async def _loop(self) -> None:
        while True:
            try:
                await self.poll()
            except Exception:
                log.exception("schedule_poll_failed")
            await asyncio.sleep(self.interval)
