"""Prometheus metrics of the run queue: depth (by job status) and how long jobs wait.

Runs in flight are `heddle_runs_executing`, the same gauge every executor keeps.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Gauge, Histogram
from sqlalchemy import text

from heddle.db.base import Database
from heddle.queue.enqueue import QUEUE

_DEPTH = text("SELECT status::text, count(*) FROM procrastinate_jobs "
              "WHERE queue_name = :queue AND status IN ('todo', 'doing') GROUP BY status")


class QueueMetrics:
    def __init__(self, registry: CollectorRegistry, db: Database):
        self.db = db
        self.depth = Gauge("heddle_queue_jobs", "Run jobs in the queue, by status (todo: waiting; doing: "
                           "taken by a worker)", ["status"], registry=registry)
        self.job_wait = Histogram(
            "heddle_queue_job_wait_seconds", "From enqueue (the run's commit) to a worker starting the job",
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60), registry=registry)

    async def refresh(self) -> dict[str, int]:
        """Read the queue depth from the database (on each scrape)."""
        async with self.db.session() as session:
            counts = {status: n for status, n in (await session.execute(_DEPTH, {"queue": QUEUE})).all()}
        for status in ("todo", "doing"):
            self.depth.labels(status).set(counts.get(status, 0))
        return {status: counts.get(status, 0) for status in ("todo", "doing")}
