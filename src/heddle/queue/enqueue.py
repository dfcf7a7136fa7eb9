"""Enqueue a run's job in the same transaction that creates or resumes the run.

`HEDDLE_EXECUTOR=queue` installs one hook on the process's write sessions: a run that this
transaction inserts in state `running`, or moves into `running` (a resume), gets a
procrastinate job inserted right before the commit, in the same transaction, through
procrastinate's own SQL function (`procrastinate_defer_jobs_v1`, what its `defer_async` runs).
So a run never exists without its job, nor a job without its run, whichever code path
created or resumed the run: there is no enqueue call to forget.

procrastinate's Python `defer_async(connection=...)` wants a psycopg connection; Heddle's
transaction is SQLAlchemy on asyncpg, so the same statement is issued on that connection.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from sqlalchemy import event, text
from sqlalchemy.orm import Session, attributes

from heddle.db.base import Database
from heddle.loom.models import Run
from heddle.loom.states import RUNNING

QUEUE = "heddle_runs"
RUN_TASK = "heddle.execute_run"

_PENDING = "heddle_queue_runs"  # session.info key: runs entering `running` in this transaction
_ENABLED = "heddle_queue"  # session.info flag set on the write sessions of a queue-mode process

# One job per run: the run's id is its argument and its lock, so two jobs of one run never
# execute at once (procrastinate runs jobs sharing a lock one after the other).
_DEFER = text("""
    SELECT unnest(procrastinate_defer_jobs_v1(ARRAY(
        SELECT ROW(CAST(:queue AS varchar), CAST(:task AS varchar), 0, r, NULL,
                   jsonb_build_object('run_id', r), NULL)::procrastinate_job_to_defer_v1
        FROM unnest(CAST(:run_ids AS text[])) AS r)))
""")


def _params(run_ids: Iterable[uuid.UUID]) -> dict:
    return {"queue": QUEUE, "task": RUN_TASK, "run_ids": sorted(str(run_id) for run_id in run_ids)}


async def enqueue_runs(session, run_ids: Iterable[uuid.UUID]) -> list[int]:
    """Insert one job per run in the session's transaction; returns the job ids."""
    params = _params(run_ids)
    if not params["run_ids"]:
        return []
    return list(await session.scalars(_DEFER, params))


def _entering_running(obj) -> bool:
    if not isinstance(obj, Run) or obj.state != RUNNING:
        return False
    history = attributes.get_history(obj, "state")
    return bool(history.added)


def _after_flush(session: Session, _flush_context) -> None:
    if not session.info.get(_ENABLED):
        return
    entering = {obj.id for obj in (*session.new, *session.dirty) if _entering_running(obj)}
    if entering:
        session.info.setdefault(_PENDING, set()).update(entering)


def _before_commit(session: Session) -> None:
    if not session.info.get(_ENABLED):
        return
    session.flush()  # the commit's own flush comes after this hook; runs added late count too
    run_ids = session.info.pop(_PENDING, set())
    if run_ids:
        session.execute(_DEFER, _params(run_ids))


def _forget(session: Session, *_args) -> None:
    session.info.pop(_PENDING, None)


_installed = False


def install_enqueue_on_commit(db: Database) -> None:
    """Make every write transaction of `db` enqueue the runs it starts or resumes."""
    global _installed
    if not _installed:  # the listeners are global and check the session's flag
        event.listen(Session, "after_flush", _after_flush)
        event.listen(Session, "before_commit", _before_commit)
        event.listen(Session, "after_rollback", _forget)
        _installed = True
    db.write_sessionmaker.configure(info={_ENABLED: True})


class QueueSubmitter:
    """The API's executor in queue mode: the job is already committed with the run, so there
    is nothing to do after the commit; workers execute it."""

    def submit(self, run_id: uuid.UUID) -> None:
        return None

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None
