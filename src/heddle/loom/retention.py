"""The retention pruner: erases threads idle for longer than their workspace's `retention_days`,
and the facts agents remember (loom/memory.py) stored longer ago than that.

A thread is idle since its last message, run change or creation, whichever is latest; a thread
with a run that has not ended (or a queued message) is never pruned. Each pass erases at most
`batch` threads per transaction (loom/erasure.py) and repeats until nothing is left, so a
first pass over a large backlog does not hold the database for long. Every process may run a
pruner: two passes racing on one thread erase it once (the second finds nothing).
"""

from __future__ import annotations

import asyncio
import datetime as dt

from sqlalchemy import delete, exists, select

from heddle.db.base import Database, utcnow
from heddle.loom.erasure import erase_threads
from heddle.loom.memory_models import Memory
from heddle.loom.models import Message, QueuedMessage, Run, Thread
from heddle.loom.states import TERMINAL
from heddle.loom.unit_of_work import RunUnitOfWork
from heddle.observability.logging import get_logger
from heddle.workspaces.models import Workspace

log = get_logger(__name__)


async def _idle_threads(session, workspace_id: str, cutoff: dt.datetime, batch: int) -> list:
    recent_message = exists().where(Message.thread_id == Thread.id, Message.created_at >= cutoff)
    recent_run = exists().where(Run.thread_id == Thread.id,
                                (Run.updated_at >= cutoff) | Run.state.not_in(tuple(TERMINAL)))
    queued = exists().where(QueuedMessage.thread_id == Thread.id)
    return list(await session.scalars(
        select(Thread.id).where(Thread.workspace_id == workspace_id, Thread.created_at < cutoff,
                                ~recent_message, ~recent_run, ~queued)
        .order_by(Thread.created_at).limit(batch)))


async def prune_once(db: Database, *, now: dt.datetime | None = None, batch: int = 100,
                     uow: RunUnitOfWork | None = None) -> int:
    """One pass over every workspace with `retention_days`; how many threads were erased.

    Each batch is a run unit of work (`uow`; one without hooks if not given): its after-commit
    hooks send the `thread.deleted` events and nudge an executor still on an erased run.
    """
    uow = uow or RunUnitOfWork(db)
    now = now or utcnow()
    async with db.session() as session:
        workspaces = list(await session.execute(
            select(Workspace.id, Workspace.retention_days, Workspace.realtime_enabled)
            .where(Workspace.retention_days.is_not(None), Workspace.retention_days > 0)))
    erased = 0
    for ws in workspaces:
        cutoff = now - dt.timedelta(days=ws.retention_days)
        async with uow.transaction(workspace_id=ws.id) as work:  # facts older than retention_days
            forgotten = (await work.session.execute(delete(Memory).where(
                Memory.workspace_id == ws.id, Memory.created_at < cutoff))).rowcount
        if forgotten:
            log.info("retention_memories_pruned", workspace_id=ws.id, memories=forgotten)
        while True:
            async with uow.transaction(realtime=ws.realtime_enabled, workspace_id=ws.id) as work:
                ids = await _idle_threads(work.session, ws.id, cutoff, batch)
                if not ids:
                    break
                done = await erase_threads(work, ws.id, ids, "retention")
            erased += done.threads
            log.info("retention_pruned", workspace_id=ws.id, threads=done.threads, runs=done.runs)
            if len(ids) < batch:
                break
    return erased


class RetentionPruner:
    """Runs `prune_once` every `interval` seconds in the background of a server process."""

    def __init__(self, db: Database, interval: float, uow: RunUnitOfWork | None = None):
        self.db = db
        self.interval = interval
        self.uow = uow
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        if self.interval > 0:
            self._task = asyncio.create_task(self._loop(), name="retention-pruner")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _loop(self) -> None:
        while True:
            try:
                await prune_once(self.db, uow=self.uow)
            except Exception:
                log.exception("retention_prune_failed")
            await asyncio.sleep(self.interval)
