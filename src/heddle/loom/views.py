"""Read models of Loom: runs, threads, messages and traces as the HTTP API shows them.

Nothing here writes. The engine renders a changed run with `render_run` for its events; routes
and the control plane read through the functions below (writes live in heddle/loom/service.py
and heddle/loom/unit_of_work.py).
"""

from __future__ import annotations

from functools import cache
from typing import Any

from sqlalchemy import Select, and_, bindparam, func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from heddle.auth.context import AuthContext
from heddle.loom import feedback
from heddle.loom import queries as q
from heddle.loom.models import Message, Run, Thread, ToolCall
from heddle.loom.serializers import message_dict, run_dict, thread_dict, turn_dict
from heddle.loom.states import AWAITING_INPUT, AWAITING_OUTCOME, CALL_AWAITING_APPROVAL
from heddle.observability.models import RequestLogEntry
from heddle.timeutil import iso

API_CALLS_CAP = 50


async def awaiting_approval(session: AsyncSession, run_id) -> list[ToolCall]:
    """The run's calls waiting for a person's approval (`interaction: approve`), in order."""
    return list(await session.scalars(select(ToolCall).where(
        ToolCall.run_id == run_id, ToolCall.status == CALL_AWAITING_APPROVAL).order_by(ToolCall.seq)))


# `render_run`'s `latest` when the caller has not read the run's latest answer (None is an answer
# read already: the run has none yet).
NOT_READ: Any = object()


async def render_run(session: AsyncSession, run: Run, latest: Any = NOT_READ) -> dict[str, Any]:
    """The run as the API shows it; `latest`: its latest answer (or None) when the caller read it
    already, else read here."""
    awaiting = await q.awaiting_tool_calls(session, run.id) if run.state == AWAITING_OUTCOME else None
    # Waiting for input without a question: an `interaction: approve` call asks first.
    approvals = (await awaiting_approval(session, run.id)
                 if run.state == AWAITING_INPUT and run.pending_question is None else None)
    if latest is NOT_READ:
        latest = await q.latest_assistant_message(session, run.id)
    return run_dict(run, latest=latest,
                    connection=await q.connection_ref(session, run.connection_id), awaiting=awaiting,
                    approvals=approvals)


@cache
def _threads_query(by_agent: bool, after_cursor: bool) -> Select:
    """The subject's threads, newest first; built once per shape (every list runs one)."""
    query = select(Thread).where(Thread.workspace_id == bindparam("ws"), Thread.subject == bindparam("subject"))
    if by_agent:
        query = query.where(Thread.agent_id == bindparam("agent"))
    if after_cursor:
        created_at = bindparam("after_created_at", type_=Thread.created_at.type)
        last_id = bindparam("after_id", type_=Thread.id.type)
        query = query.where(or_(Thread.created_at < created_at,
                                and_(Thread.created_at == created_at, Thread.id < last_id)))
    return query.order_by(Thread.created_at.desc(), Thread.id.desc()).limit(bindparam("limit"))


async def list_threads(session: AsyncSession, auth: AuthContext, *, agent: str | None, limit: int,
                       after: str | None) -> dict[str, Any]:
    params: dict[str, Any] = {"ws": auth.workspace_id, "subject": auth.require_subject(), "agent": agent,
                              "limit": limit + 1}
    if after:
        params["after_created_at"], params["after_id"] = q.decode_thread_cursor(after)
    rows = list(await session.scalars(_threads_query(bool(agent), bool(after)), params))
    rows, cursor = q.page(rows, limit, lambda t: (t.created_at, t.id))
    return {"items": [thread_dict(t) for t in rows], "next_cursor": cursor}


async def list_messages(session: AsyncSession, auth: AuthContext, thread_id: str, *, limit: int,
                        after: str | None) -> dict[str, Any]:
    auth.require_subject()
    thread = await q.visible_thread(session, auth, thread_id)
    query = select(Message).where(Message.thread_id == thread.id)
    if after:
        query = query.where(Message.seq > q.decode_seq_cursor(after))
    rows = list(await session.scalars(query.order_by(Message.seq).limit(limit + 1)))
    rows, cursor = q.page(rows, limit, lambda m: (m.seq,))
    rated = await feedback.of_messages(session, thread.subject, [m.id for m in rows if m.role == "assistant"])
    items = [message_dict(m) for m in rows]
    for item, m in zip(items, rows, strict=True):
        if m.id in rated:
            item["feedback"] = rated[m.id]
    return {"items": items, "next_cursor": cursor}


async def get_run(session: AsyncSession, auth: AuthContext, run_id: str) -> dict[str, Any]:
    run, latest = await q.visible_run_view(session, auth, run_id)
    return await render_run(session, run, latest)


async def get_trace(session: AsyncSession, auth: AuthContext, run_id: str) -> dict[str, Any]:
    run = await q.visible_run(session, auth, run_id)
    data = await render_run(session, run)
    turns = await q.turns_with_tool_calls(session, run.id)
    calls = list(await session.scalars(
        select(RequestLogEntry).where(RequestLogEntry.run_id == run.id)
        .order_by(RequestLogEntry.id.desc()).limit(API_CALLS_CAP)))
    total = await session.scalar(select(func.count()).select_from(RequestLogEntry)
                                 .where(RequestLogEntry.run_id == run.id))
    data.update({
        "opened_at": iso(run.opened_at), "closed_at": iso(run.closed_at),
        "turns": [turn_dict(t, tcs) for t, tcs in turns],
        "api_calls": [{"request_id": c.request_id, "method": c.method, "path": c.path, "status": c.status,
                       "latency_ms": c.latency_ms, "auth_mode": c.auth_mode, "created_at": iso(c.created_at)}
                      for c in calls],
        "api_calls_total": int(total or 0),
        # Run control (loom/cancellation.py): queued/started, cancelled or interrupted, by whom and when.
        "control": run.control or {},
        "feedback": await feedback.of_run(session, run.id),
    })
    return data
