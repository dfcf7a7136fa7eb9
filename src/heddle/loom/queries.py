"""Reads shared by the API service and the engine.

The `visible_*` reads and `thread_for_message` take an id from the caller and answer only what
the caller may see (its workspace, and its subject's when it has one): 404 `not_found`
otherwise, never a hint that the row exists. The other helpers take an id the code already
reached through one of those (or the engine's own run) and are not scoped again.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import uuid
from types import SimpleNamespace

from sqlalchemy import bindparam, select
from sqlalchemy.ext.asyncio import AsyncSession

from heddle.auth.context import AuthContext
from heddle.errors import HeddleError
from heddle.loom.models import Agent, Message, QueuedMessage, Run, Thread, ToolCall, Turn
from heddle.loom.rows import next_seq_of
from heddle.workspaces.models import Connection


def not_found(what: str) -> HeddleError:
    return HeddleError("not_found", f"No {what} with that id is visible to this caller.")


def parse_id(value: str, what: str) -> uuid.UUID:
    try:
        return uuid.UUID(value)
    except ValueError:
        raise not_found(what) from None


async def visible_thread(session: AsyncSession, auth: AuthContext, thread_id: str) -> Thread:
    """The thread if it belongs to the caller's workspace and subject; 404 otherwise (no leak)."""
    tid = parse_id(thread_id, "thread")
    thread = await session.get(Thread, tid)
    if thread is None or thread.workspace_id != auth.workspace_id or thread.subject != auth.subject:
        raise not_found("thread")
    return thread


# Queued runs (if_busy: enqueue) are not the thread's current run: they wait behind it.
_LATEST_RUN_ID = (select(Run.id).where(Run.thread_id == Thread.id, Run.state != "queued")
                  .order_by(Run.created_at.desc(), Run.id).limit(1).correlate(Thread).scalar_subquery())
_QUEUE_HEAD = (select(QueuedMessage.run_id).where(QueuedMessage.thread_id == Thread.id)
               .order_by(QueuedMessage.id).limit(1).correlate(Thread).scalar_subquery())
_NEXT_SEQ = next_seq_of(Thread.id).correlate(Thread)
# Built once: a message is the hottest write, and this one statement replaces four reads.
_THREAD_FOR_MESSAGE = (
    select(Thread, Agent, Run, _NEXT_SEQ, _QUEUE_HEAD)
    .join(Agent, Agent.id == Thread.agent_id)
    .outerjoin(Run, Run.id == _LATEST_RUN_ID)
    .where(Thread.id == bindparam("thread_id", type_=Thread.id.type))
)


async def thread_for_message(session: AsyncSession, auth: AuthContext,
                             thread_id: str) -> tuple[Thread, Agent, Run | None, int, uuid.UUID | None]:
    """The visible thread with its agent, its latest run (or None), the next message seq and
    the first queued run's id (or None)."""
    tid = parse_id(thread_id, "thread")
    row = (await session.execute(_THREAD_FOR_MESSAGE, {"thread_id": tid})).first()
    if row is None or row[0].workspace_id != auth.workspace_id or row[0].subject != auth.subject:
        raise not_found("thread")
    thread, agent, run, next_seq, queue_head = row
    return thread, agent, run, next_seq, queue_head


_RUN = select(Run).where(Run.id == bindparam("run_id", type_=Run.id.type))
_RUN_FOR_UPDATE = _RUN.with_for_update()


async def visible_run(session: AsyncSession, auth: AuthContext, run_id: str, *, for_update=False) -> Run:
    """Relay without a subject sees every run of the workspace; otherwise only the subject's."""
    rid = parse_id(run_id, "run")
    run = await session.scalar(_RUN_FOR_UPDATE if for_update else _RUN, {"run_id": rid})
    if not _run_visible(run, auth):
        raise not_found("run")
    return run


def _run_visible(run, auth: AuthContext) -> bool:
    """A Run or a row of its columns: the caller's workspace's, and its subject's if it has one."""
    return (run is not None and run.workspace_id == auth.workspace_id
            and (auth.subject is None or run.subject == auth.subject))


# A run as `GET /v1/loom/runs/{id}` shows it, with its latest answer, in one statement of plain
# columns (no ORM objects): the most frequent request of a client waiting for a run.
# Table columns (not mapped attributes): the session runs it as a Core statement.
_m, _runs = Message.__table__, Run.__table__
_r = _runs.c
_LATEST_ANSWER_ID = (select(_m.c.id).where(_m.c.run_id == _r.id, _m.c.role == "assistant")
                     .order_by(_m.c.seq.desc()).limit(1).correlate(_runs).scalar_subquery())
_RUN_VIEW = (
    select(_r.id, _r.thread_id, _r.workspace_id, _r.subject, _r.state, _r.origin, _r.cost_micro, _r.connection_id,
           _r.pending_question, _r.error_code, _r.error_message, _r.created_at, _r.updated_at,
           _m.c.id.label("m_id"), _m.c.run_id.label("m_run_id"), _m.c.thread_id.label("m_thread_id"),
           _m.c.role.label("m_role"), _m.c.content.label("m_content"), _m.c.created_at.label("m_created_at"),
           _m.c.data.label("m_data"))
    .select_from(_runs).outerjoin(_m, _m.c.id == _LATEST_ANSWER_ID)
    .where(_r.id == bindparam("run_id", type_=_r.id.type))
)


async def visible_run_view(session: AsyncSession, auth: AuthContext, run_id: str):
    """The visible run's columns that a Run shows (a row, not an ORM object) and its latest
    answer (an object with a Message's fields, or None); 404 as `visible_run`."""
    rid = parse_id(run_id, "run")
    row = (await session.execute(_RUN_VIEW, {"run_id": rid})).first()
    if not _run_visible(row, auth):
        raise not_found("run")
    latest = None
    if row.m_id is not None:
        latest = SimpleNamespace(id=row.m_id, thread_id=row.m_thread_id, run_id=row.m_run_id, role=row.m_role,
                                 content=row.m_content, created_at=row.m_created_at, data=row.m_data)
    return row, latest


_LATEST_ANSWER = (select(Message).where(Message.run_id == bindparam("run_id", type_=Message.run_id.type),
                                        Message.role == "assistant").order_by(Message.seq.desc()).limit(1))


async def latest_assistant_message(session: AsyncSession, run_id: uuid.UUID) -> Message | None:
    return await session.scalar(_LATEST_ANSWER, {"run_id": run_id})


async def awaiting_tool_calls(session: AsyncSession, run_id: uuid.UUID) -> list[ToolCall]:
    return list(await session.scalars(
        select(ToolCall).where(ToolCall.run_id == run_id, ToolCall.status == "awaiting_outcome")
        .order_by(ToolCall.seq)))


async def connection_ref(session: AsyncSession, connection_id: uuid.UUID | None) -> dict[str, str] | None:
    if connection_id is None:
        return None
    conn = await session.get(Connection, connection_id)
    return {"id": str(conn.id), "name": conn.name} if conn else None


async def turns_with_tool_calls(session: AsyncSession, run_id: uuid.UUID) -> list[tuple[Turn, list[ToolCall]]]:
    turns = list(await session.scalars(select(Turn).where(Turn.run_id == run_id).order_by(Turn.seq)))
    calls = list(await session.scalars(select(ToolCall).where(ToolCall.run_id == run_id).order_by(ToolCall.seq)))
    by_turn: dict[uuid.UUID, list[ToolCall]] = {}
    for tc in calls:
        by_turn.setdefault(tc.turn_id, []).append(tc)
    return [(t, by_turn.get(t.id, [])) for t in turns]


def encode_cursor(*parts: object) -> str:
    raw = json.dumps([p.isoformat() if isinstance(p, dt.datetime) else str(p) for p in parts])
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _invalid_cursor() -> HeddleError:
    return HeddleError("invalid_request", "`after` is not a cursor returned by this API.",
                       details=[{"location": "query", "field": "after", "message": "invalid cursor"}])


def _decode_parts(cursor: str, n: int) -> list[str]:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        parts = json.loads(base64.urlsafe_b64decode(padded.encode()))
    except (ValueError, UnicodeDecodeError):
        raise _invalid_cursor() from None
    if not isinstance(parts, list) or len(parts) != n or not all(isinstance(p, str) for p in parts):
        raise _invalid_cursor()
    return parts


def decode_thread_cursor(cursor: str) -> tuple[dt.datetime, uuid.UUID]:
    """(created_at, id) of the last thread of the previous page."""
    created, thread_id = _decode_parts(cursor, 2)
    try:
        return dt.datetime.fromisoformat(created), uuid.UUID(thread_id)
    except ValueError:
        raise _invalid_cursor() from None


def decode_seq_cursor(cursor: str) -> int:
    """The `seq` of the last message of the previous page."""
    (seq,) = _decode_parts(cursor, 1)
    if not seq.isdigit():
        raise _invalid_cursor()
    return int(seq)


def page(rows: list, limit: int, cursor_of) -> tuple[list, str | None]:
    """Trim a `limit + 1` fetch to `limit` rows and the cursor of the next page (or None)."""
    if len(rows) <= limit:
        return rows, None
    rows = rows[:limit]
    return rows, encode_cursor(*cursor_of(rows[-1]))
