"""A run's job is enqueued in the same transaction that creates or resumes the run.

Migration 0006 puts two triggers on `runs` (PostgreSQL): a run inserted in state `running`, or
moved into `running` (a resume), gets a procrastinate job through procrastinate's own SQL
function (`procrastinate_defer_jobs_v1`, what its `defer_async` runs), in the transaction of
that very INSERT or UPDATE. So a run never exists without its job nor a job without its run,
whichever code path creates or resumes runs (they use Core statements, on asyncpg, where
procrastinate's `defer_async(connection=...)`, which wants a psycopg connection, cannot join).

The triggers act only for connections of queue-mode processes: those set the session
parameter `heddle.executor = 'queue'` when they connect (`queue_engine_kwargs`). A database
served in-process on PostgreSQL therefore gets no jobs.
"""

from __future__ import annotations

import uuid
from typing import Any

QUEUE = "heddle_runs"
RUN_TASK = "heddle.execute_run"


def queue_engine_kwargs() -> dict[str, Any]:
    """SQLAlchemy engine arguments of a queue-mode process (asyncpg's per-connection settings)."""
    return {"connect_args": {"server_settings": {"heddle.executor": "queue"}}}


class QueueSubmitter:
    """The API's executor in queue mode: the job was committed with the run, so there is
    nothing to do after the commit; workers execute it."""

    def submit(self, run_id: uuid.UUID, claimed: int | None = None) -> None:
        return None

    def preclaim(self) -> dict | None:
        return None  # a worker claims the run when it takes the job

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None
