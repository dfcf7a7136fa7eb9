"""`heddle worker`: executes queued runs with procrastinate, fenced like every executor.

A job carries a run id. The worker claims the run (heddle/loom/lease.py: a lease plus a fence
token that grows on every claim), executes it with the same engine as `heddle serve`, and
releases it. What procrastinate gives us, instead of code written here:

* the queue itself, LISTEN/NOTIFY wake-ups and `concurrency` jobs at once per worker (its
  poll, every `FETCH_POLL_SECONDS`, only finds retried jobs, which procrastinate does not
  announce); a wake-up takes several jobs at once (heddle/worker/fetching.py);
* a worker heartbeat; a worker that stops beating (kill -9, a lost host) is "stalled", and
  every live worker looks for stalled workers' jobs every `stalled_seconds / 2` and puts them
  back in the queue (procrastinate's `get_stalled_jobs` and `retry_job`, from a plain loop: its
  periodic-task recipe cost four commits a tick, most of an idle deployment's commits);
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

FETCH_POLL_SECONDS = 5.0  # procrastinate's default; LISTEN/NOTIFY wakes the worker for new jobs


CHECK_IDLE_SECONDS = 30.0

# How often psycopg wakes while it waits on a connection with nothing to read. Its default, 0.1 s,
# is there to let a blocking wait see Ctrl-C; an asyncio wait needs none of it (signals reach the
# loop), and procrastinate's LISTEN connection waits all the time: ten wake-ups a second of an
# idle worker, nearly half of all it had. A wait ends as soon as the socket is readable, whatever
# this is; procrastinate still checks the connection every `LISTEN_TIMEOUT` (30 s).
PSYCOPG_WAIT_INTERVAL = 30.0


def _quiet_connection_class():
    import psycopg

    class QuietConnection(psycopg.AsyncConnection):
        """psycopg's connection waiting for its socket without waking every 0.1 s."""

        async def wait(self, gen, interval: float = PSYCOPG_WAIT_INTERVAL, timeout: float | None = None):
            return await super().wait(gen, interval=interval, timeout=timeout)

    return QuietConnection


def _queue_pool(**kwargs):
    """procrastinate's psycopg pool, in autocommit, checking a connection only after it sat idle.

    procrastinate has the pool check every connection it hands out with an empty query, each a
    transaction of its own: two commits per job (fetch, finish) on top of the job's own. A
    connection used within the last `CHECK_IDLE_SECONDS` is handed out as it is; one idle for
    longer (that PostgreSQL or a proxy may have dropped) is still checked.
    """
    import weakref

    import psycopg_pool

    last_used: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    async def check(conn) -> None:
        now = time.monotonic()
        previous, last_used[conn] = last_used.get(conn), now
        if conn.closed or previous is None or now - previous > CHECK_IDLE_SECONDS:
            await psycopg_pool.AsyncConnectionPool.check_connection(conn)

    async def configure(conn) -> None:
        # Autocommit: each of procrastinate's calls is one statement (a function such as
        # `procrastinate_fetch_job_v2`), atomic on its own; psycopg's implicit BEGIN and the
        # pool's COMMIT around it were two more round trips per call, six per job. (Set here:
        # procrastinate's own LISTEN connection passes `autocommit` itself.)
        await conn.set_autocommit(True)

    return psycopg_pool.AsyncConnectionPool(**{**kwargs, "check": check, "configure": configure,
                                                "connection_class": _quiet_connection_class()})


class RunWorker:
    def __init__(self, container: Container, *, concurrency: int, shutdown_grace: float,
                 heartbeat_seconds: float, stalled_seconds: float):
        import procrastinate

        from heddle.worker.fetching import FETCH_BATCH

        self.container = container
        self.concurrency = concurrency
        self.shutdown_grace = shutdown_grace
        self.heartbeat_seconds = heartbeat_seconds
        self.stalled_seconds = stalled_seconds
        self.owner = executor_name()
        self.lease = dt.timedelta(seconds=container.settings.run_lease_seconds)
        self.metrics = QueueMetrics(container.metrics.registry, container.db)
        # psycopg's pool default is 4 connections: as many again for a batch of fetches
        # (heddle/worker/fetching.py) beside the heartbeat and the jobs' finishes.
        self.app = procrastinate.App(connector=procrastinate.PsycopgConnector(
            conninfo=postgres_dsn(container.settings.database_url), min_size=4, max_size=4 + FETCH_BATCH,
            kwargs={"application_name": "heddle-worker-queue"}, pool_factory=_queue_pool))
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


    async def retry_stalled_jobs(self) -> int:
        """Put the jobs of workers that stopped beating back in the queue; returns how many."""
        manager = self.app.job_manager
        retried = 0
        for job in await manager.get_stalled_jobs(queue=QUEUE, seconds_since_heartbeat=self.stalled_seconds):
            try:
                await manager.retry_job(job)
            except Exception as exc:  # another live worker retried it first
                log.info("stalled_job_not_retried", job_id=job.id, error=type(exc).__name__)
                continue
            log.info("stalled_job_retried", job_id=job.id, task=job.task_name)
            retried += 1
        return retried

    async def _watch_stalled(self) -> None:
        while True:
            await asyncio.sleep(max(0.5, self.stalled_seconds / 2))
            try:
                await self.retry_stalled_jobs()
            except Exception as exc:  # the database is away: try again next time
                log.warning("stalled_jobs_check_failed", error=type(exc).__name__, detail=str(exc)[:200])

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
        from heddle.worker.fetching import BatchFetchingWorker

        async with self.app.open_async():
            self.running = True
            watcher = asyncio.create_task(self._watch_stalled(), name="retry-stalled-jobs")
            try:
                # App.run_worker_async with procrastinate's worker taking jobs a batch at a time
                await BatchFetchingWorker(
                    app=self.app, queues=[QUEUE], concurrency=self.concurrency, name=self.owner, wait=True,
                    install_signal_handlers=True, shutdown_graceful_timeout=self.shutdown_grace,
                    update_heartbeat_interval=self.heartbeat_seconds, fetch_job_polling_interval=FETCH_POLL_SECONDS,
                    stalled_worker_timeout=self.stalled_seconds, delete_jobs="successful").run()
            finally:
                self.running = False
                watcher.cancel()
                await asyncio.gather(watcher, return_exceptions=True)
