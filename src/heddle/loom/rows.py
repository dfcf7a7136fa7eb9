"""The one home of a thread's rows as written: a new run's row, the thread lock, message numbers.

Every writer that makes a run (a posted message, a queued one), serialises on a thread, or
appends a message to a thread comes here, so the rules are written once:

- `run_row`: a run as inserted, whatever its initial state, with the creating request's
  `traceparent` when tracing is on (the process that executes the run, a worker perhaps,
  puts the run's span in that trace, queued or not).
- `lock_thread`: two writers of one thread (two message posts, a post and a queue change)
  take the thread's row lock first (PostgreSQL; SQLite's one writer already serialises them,
  heddle/db/dialect.py).
- `NEXT_SEQ`: a thread's next message `seq`, one expression used by the joined read of a post
  (heddle/loom/queries.py), by `next_message_seq` and inside the INSERT of an assistant message
  (heddle/loom/engine_sql.py).
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import ColumnElement, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from heddle.auth.context import AuthContext
from heddle.db import dialect
from heddle.db.base import utcnow
from heddle.loom.models import Message, Thread
from heddle.observability import tracing

_seq = Message.__table__.c.seq
_thread_of_message = Message.__table__.c.thread_id


def next_seq_of(thread_id: ColumnElement | Any) -> Any:
    """The scalar subquery of the next message `seq` of the thread `thread_id` (a column or a
    bind parameter): 1 for an empty thread, else one more than its last."""
    return select(func.coalesce(func.max(_seq), 0) + 1).where(_thread_of_message == thread_id).scalar_subquery()


async def next_message_seq(session: AsyncSession, thread_id: uuid.UUID) -> int:
    """The thread's next message `seq` (the caller holds the thread: see `lock_thread`)."""
    return await session.scalar(select(next_seq_of(thread_id)))


async def lock_thread(session: AsyncSession, thread_id: uuid.UUID) -> None:
    """Serialise this transaction with the thread's other writers until it ends."""
    await dialect.lock(session, select(Thread.id).where(Thread.id == thread_id))


def trace_context() -> dict[str, str]:
    """`{"traceparent": ...}` of the current request's span when tracing is on (else empty)."""
    traceparent = tracing.inject({}).get("traceparent")
    return {"traceparent": traceparent} if traceparent else {}


def run_row(auth: AuthContext, thread: Thread, *, agent_id: str, agent_version: int, state: str,
            connection_id: uuid.UUID | None, **extra: Any) -> dict[str, Any]:
    """A new run of `thread` for the caller `auth`, as inserted (RunWork.insert_run checks that
    `state` is an initial one); `extra`: columns of that kind of run (a queued run's `fence`,
    its `control`)."""
    now = utcnow()
    return dict(id=uuid.uuid4(), thread_id=thread.id, workspace_id=auth.workspace_id, agent_id=agent_id,
                agent_version=agent_version, subject=thread.subject, state=state, connection_id=connection_id,
                auth_mode=auth.mode, key_id=auth.key_id, session_token=auth.session_token,
                session_token_expires_at=auth.session_token_expires_at, opened_at=now, created_at=now,
                updated_at=now, cost_micro=0, turn_count=0,
                traceparent=trace_context().get("traceparent"), **extra)
