"""Where runs execute. The embedded default runs them as asyncio tasks in this process.

The interface is `submit(run_id)`, `preclaim()`, `start()` and `stop()` (container.RunExecutor;
the run unit of work submits to it after each commit); all run state is in the database,
so a queue-backed executor with separate worker processes can replace this one. A run is
held with a lease and a fencing token (heddle/loom/lease.py, shared with every executor); on
start, runs left `running` by a dead process are claimed again and resumed by the engine.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import uuid

from sqlalchemy import or_, select, update

from heddle.db.base import Database, utcnow
from heddle.loom import arrival_order
from heddle.loom.engine import RunEngine
from heddle.loom.lease import Fence, claim_and_execute, claimed_values, executor_name
from heddle.loom.models import Run
from heddle.loom.states import RUNNING
from heddle.observability.logging import get_logger
from heddle.observability.metrics import Metrics

log = get_logger(__name__)


async def _clear_leases(session, *where) -> None:
    """Drop the lease of the matching runs (their fences stay: a later claim still grows them).

    Lease bookkeeping is not a change a caller can see, so `updated_at` is kept as it is.
    """
    await session.execute(update(Run).where(*where)
                          .values(lease_owner=None, lease_expires_at=None, updated_at=Run.updated_at)
                          .execution_options(synchronize_session=False))


class InProcessExecutor:
    def __init__(self, db: Database, engine: RunEngine, metrics: Metrics, *, concurrency: int = 64,
                 lease_seconds: float = 30.0, sweep_interval: float = 10.0, reclaim_all_on_start: bool = False):
        self.db = db
        self.engine = engine
        self.metrics = metrics
        self.owner = executor_name()
        self.lease = dt.timedelta(seconds=lease_seconds)
        self.sweep_interval = sweep_interval
        # Embedded SQLite has one server process per database file: every `running` run found
        # at start-up was left by a dead process, so it need not wait for the lease to expire.
        self.reclaim_all_on_start = reclaim_all_on_start
        self._slots = asyncio.Semaphore(concurrency)
        self._tasks: dict[uuid.UUID, asyncio.Task] = {}
        self._again: set[uuid.UUID] = set()
        self._sweeper: asyncio.Task | None = None
        self._stopping = False

    async def start(self) -> None:
        await self.recover(all_running=self.reclaim_all_on_start)
        self._sweeper = asyncio.create_task(self._sweep(), name="run-lease-sweeper")

    async def stop(self) -> None:
        self._stopping = True
        if self._sweeper:
            self._sweeper.cancel()
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self._release_all()

    def preclaim(self) -> dict | None:
        """Lease columns for a run about to be inserted, so that it is created already claimed by
        this executor (fence 1) and `submit(run_id, claimed=1)` needs no claim transaction; None
        when stopping or every slot is taken (the run then waits and is claimed when it starts)."""
        if self._stopping or self._slots.locked():
            return None
        return claimed_values(self.owner, self.lease)

    def submit(self, run_id: uuid.UUID, claimed: int | None = None) -> None:
        """Execute the run; `claimed`: the fence token it was inserted with (`preclaim`)."""
        if self._stopping:
            return
        if run_id in self._tasks:
            self._again.add(run_id)  # resumed while still finishing: run once more afterwards
            self.engine.nudge(run_id)  # or cancelled: a model call in flight is abandoned
            return
        arrival_order.mark_taken()  # a new message's permit goes with its run (loom/arrival_order.py)
        # An eager task (serving.start_tasks_eagerly) may have finished by the time create_task
        # returns (a reply with no model wait): only a task still going is stored.
        task = asyncio.create_task(self._execute(run_id, claimed), name=f"run-{run_id}")
        if not task.done():
            self._tasks[run_id] = task

    async def drain(self) -> None:
        """Wait until no run is executing (tests and benchmarks)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks.values()), return_exceptions=True)

    async def _execute(self, run_id: uuid.UUID, claimed: int | None = None) -> None:
        try:
            # A run inserted claimed that must wait for a slot (maybe past its lease) is claimed
            # afresh when it starts, its own lease notwithstanding.
            own = claimed is not None and self._slots.locked()
            if own:
                claimed = None
            async with self._slots:
                while True:
                    fence = Fence(run_id, claimed, self.lease) if claimed is not None else None
                    claimed = None  # a second pass (`_again`) claims afresh
                    self.metrics.runs_active.inc()
                    try:
                        await claim_and_execute(self.db, self.engine, run_id, self.owner, self.lease, fence=fence,
                                                own=own)
                        own = False
                    finally:
                        self.metrics.runs_active.dec()
                    if run_id not in self._again:
                        break
                    self._again.discard(run_id)
        finally:
            arrival_order.release_handed()  # if the run ended before its first step's reads were done
            if self._tasks.get(run_id) is asyncio.current_task():  # not yet stored if it ended eagerly
                del self._tasks[run_id]

    async def _release_all(self) -> None:
        try:
            async with self.db.transaction() as session:
                await _clear_leases(session, Run.lease_owner == self.owner)
        except Exception:
            log.exception("lease_release_failed")

    async def recover(self, *, all_running: bool = False) -> list[uuid.UUID]:
        """Resume runs left `running` without a live lease (crash of another process)."""
        now = utcnow()
        query = select(Run.id).where(Run.state == RUNNING)
        if not all_running:
            query = query.where(or_(Run.lease_owner.is_(None), Run.lease_expires_at < now))
        async with self.db.session() as session:
            run_ids = list(await session.scalars(query.order_by(Run.created_at)))
        if all_running and run_ids:
            async with self.db.transaction() as session:
                await _clear_leases(session, Run.id.in_(run_ids))
        for run_id in run_ids:
            if run_id not in self._tasks:
                log.info("run_recovered", run_id=str(run_id))
                self.submit(run_id)
        return run_ids

    async def _sweep(self) -> None:
        while True:
            await asyncio.sleep(self.sweep_interval)
            try:
                await self.recover()
            except Exception:
                log.exception("run_sweep_failed")
