"""`heddle worker`: executes queued runs with procrastinate, fenced like every executor.

A job carries a run id. The worker claims the run (heddle/loom/lease.py: a lease plus a fence
token that grows on every claim), executes it with the same engine as `heddle serve`, and
releases it. What procrastinate gives us, instead of code written here:

* the queue itself, LISTEN/NOTIFY wake-ups and `concurrency` jobs at once per worker;
* a worker heartbeat; a worker that stops beating (kill -9, a lost host) is "stalled", and the
  `retry_stalled_jobs` periodic task of any live worker puts its jobs back in the queue;
* graceful shutdown on SIGTERM/SIGINT: no new jobs, running jobs get `shutdown_grace`
  seconds to finish, then are aborted and, through the task's retry strategy, handed back to
  the queue for another worker.

A job whose run is held by another executor with a live lease (a stalled worker's job retried
while that worker is merely paused) waits for the lease to expire, then claims the run with a
new fence; the paused worker, if it wakes, finds its fence stale and writes nothing.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import time
import uuid

from sqlalchemy import select

from heddle.container import Container
from heddle.loom.lease import claim_and_execute, executor_name
from heddle.loom.models import Run
from heddle.loom.states import RUNNING
from heddle.observability.logging import get_logger
from heddle.queue.enqueue import QUEUE, RUN_TASK
from heddle.queue.metrics import QueueMetrics
from heddle.realtime.bus import postgres_dsn

log = get_logger(__name__)

RETRY_STALLED_TASK = "heddle.retry_stalled_jobs"


class RunWorker:
    def __init__(self, container: Container, *, concurrency: int, shutdown_grace: float,
                 heartbeat_seconds: float, stalled_seconds: float):
        import procrastinate

        self.container = container
        self.concurrency = concurrency
        self.shutdown_grace = shutdown_grace
        self.heartbeat_seconds = heartbeat_seconds
        self.stalled_seconds = stalled_seconds
        self.owner = executor_name()
        self.lease = dt.timedelta(seconds=container.settings.run_lease_seconds)
        self.metrics = QueueMetrics(container.metrics.registry, container.db)
        self.app = procrastinate.App(connector=procrastinate.PsycopgConnector(
            conninfo=postgres_dsn(container.settings.database_url)))
        self.running = False  # the procrastinate worker loop is up (health)
        self._register_tasks()

    def _register_tasks(self) -> None:
        import procrastinate

        # Any failure, including the abort of a shutdown past its grace period, puts the job
        # back in the queue; the run's fence makes a repeated execution safe.
        retry = procrastinate.RetryStrategy(max_attempts=50, wait=1)

        @self.app.task(name=RUN_TASK, queue=QUEUE, retry=retry, pass_context=False)
        async def execute_run(run_id: str, enqueued_at: float | None = None) -> None:
            if enqueued_at is not None:
                self.metrics.job_wait.observe(max(0.0, time.time() - enqueued_at))
            await self.execute(uuid.UUID(run_id))

        # procrastinate's recipe for stalled workers (docs: "Retry stalled jobs"), every few seconds.
        seconds = max(1, int(self.heartbeat_seconds))
        manager = self.app.job_manager

        @self.app.periodic(cron=f"* * * * * */{seconds}")
        @self.app.task(name=RETRY_STALLED_TASK, queue=QUEUE, queueing_lock=RETRY_STALLED_TASK,
                       pass_context=False)
        async def retry_stalled_jobs(timestamp: int) -> None:
            for job in await manager.get_stalled_jobs(seconds_since_heartbeat=self.stalled_seconds):
                log.info("stalled_job_retried", job_id=job.id, task=job.task_name)
                await manager.retry_job(job)

    async def execute(self, run_id: uuid.UUID) -> None:
        """Claim and execute the run; wait out another holder's live lease first."""
        db = self.container.db
        while True:
            self.container.metrics.runs_active.inc()  # runs in flight
            try:
                if await claim_and_execute(db, self.container.engine, run_id, self.owner, self.lease):
                    return
            finally:
                self.container.metrics.runs_active.dec()
            async with db.session() as session:
                row = (await session.execute(select(Run.state, Run.lease_expires_at)
                                             .where(Run.id == run_id))).first()
            if row is None or row.state != RUNNING:
                return  # closed, failed or waiting for the caller: nothing to execute
            if row.lease_expires_at is not None:
                left = (row.lease_expires_at - dt.datetime.now(dt.UTC)).total_seconds()
                await asyncio.sleep(min(max(left, 0.05), 1.0))

    async def run(self) -> None:
        """Work until SIGTERM/SIGINT (procrastinate's handlers), then shut down gracefully."""
        async with self.app.open_async():
            self.running = True
            try:
                await self.app.run_worker_async(
                    queues=[QUEUE], concurrency=self.concurrency, name=self.owner, wait=True,
                    install_signal_handlers=True, shutdown_graceful_timeout=self.shutdown_grace,
                    update_heartbeat_interval=self.heartbeat_seconds,
                    stalled_worker_timeout=self.stalled_seconds, delete_jobs="successful")
            finally:
                self.running = False
