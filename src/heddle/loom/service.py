"""Loom operations behind the HTTP routes: threads, messages, runs, traces and outcomes."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from functools import cache
from typing import Any

from sqlalchemy import Select, and_, bindparam, func, insert, or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from heddle.auth.context import AuthContext
from heddle.db.base import utcnow
from heddle.errors import HeddleError
from heddle.loom import approvals as approvals_module
from heddle.loom import control
from heddle.loom import queries as q
from heddle.loom.agents import get_agent, has_unpinned_hosted_tools
from heddle.loom.effects import Effects
from heddle.loom.models import Message, Run, Thread, ToolCall
from heddle.loom.serializers import message_dict, run_dict, thread_dict, turn_dict
from heddle.loom.states import (
    AWAITING_INPUT,
    AWAITING_OUTCOME,
    CALL_AWAITING_OUTCOME,
    CALL_PENDING,
    FAILED,
    RUNNING,
    transition,
    transition_call,
)
from heddle.observability.models import RequestLogEntry
from heddle.timeutil import iso
from heddle.workspaces.service import resolve_connection

API_CALLS_CAP = 50
_INSERT_RUN = insert(Run.__table__)
_INSERT_MESSAGE = insert(Message.__table__)


async def render_run(session: AsyncSession, run: Run, latest: Any = False) -> dict[str, Any]:
    """The run as the API shows it; `latest` is its latest answer when the caller read it already."""
    awaiting = await q.awaiting_tool_calls(session, run.id) if run.state == AWAITING_OUTCOME else None
    # Waiting for input without a question: an `interaction: approve` call asks first.
    approvals = (await approvals_module.awaiting_approval(session, run.id)
                 if run.state == AWAITING_INPUT and run.pending_question is None else None)
    if latest is False:
        latest = await q.latest_assistant_message(session, run.id)
    return run_dict(run, latest=latest,
                    connection=await q.connection_ref(session, run.connection_id), awaiting=awaiting,
                    approvals=approvals)


async def open_thread(session: AsyncSession, auth: AuthContext, agent_id: str) -> tuple[dict, bool]:
    """The subject's thread with this agent, created on first use (201) or reused (200)."""
    subject = auth.require_subject()
    agent = await get_agent(session, auth.workspace_id, agent_id)
    if agent is None:
        raise HeddleError("agent_not_found", f"No agent {agent_id!r} in this workspace.")
    query = select(Thread).where(Thread.workspace_id == auth.workspace_id, Thread.agent_id == agent.id,
                                 Thread.subject == subject)
    existing = await session.scalar(query)
    if existing:
        return thread_dict(existing), False
    thread = Thread(id=uuid.uuid4(), workspace_id=auth.workspace_id, agent_id=agent.id, subject=subject)
    try:
        async with session.begin_nested():
            session.add(thread)
    except IntegrityError:  # a concurrent request created it first: reuse that one
        return thread_dict(await session.scalar(query)), False
    return thread_dict(thread), True


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
    return {"items": [message_dict(m) for m in rows], "next_cursor": cursor}


async def _resolve_run_connection(session: AsyncSession, auth: AuthContext, agent) -> uuid.UUID | None:
    if auth.connection_ref:
        conn = await resolve_connection(session, auth.workspace_id, auth.connection_ref)
        if conn is None:
            raise HeddleError("connection_not_found",
                              f"No connection {auth.connection_ref!r} in this workspace.")
        return conn.id
    if has_unpinned_hosted_tools(agent):
        how = "the `conn` claim of the session token" if auth.mode == "direct" else "the Service-Connection header"
        raise HeddleError("connection_required", f"Agent {agent.id} has unpinned tools: name the "
                          f"connection to call them on with {how}.")
    return None


async def post_message(session: AsyncSession, auth: AuthContext, thread_id: str, content: str,
                       effects: Effects, if_busy: str = "reject",
                       preclaim: Callable[[], dict[str, Any] | None] | None = None) -> dict[str, Any]:
    """`preclaim`: the in-process executor's, so that a new run is inserted already claimed."""
    auth.require_subject()
    if session.bind.dialect.name != "sqlite":  # SQLite's BEGIN IMMEDIATE already serialises this
        # Lock the thread row first so two concurrent messages cannot both start a run.
        tid = q.parse_id(thread_id, "thread")
        await session.execute(select(Thread.id).where(Thread.id == tid).with_for_update())
    thread, agent, latest, seq, queue_head = await q.thread_for_message(session, auth, thread_id)
    active = latest if latest is not None and latest.state in (RUNNING, AWAITING_OUTCOME) else None
    if active is not None or (queue_head is not None and (latest is None or latest.state != AWAITING_INPUT)):
        # Busy: a run is working, or messages already wait their turn (see loom/control.py).
        if if_busy == "enqueue":
            connection_id = await _resolve_run_connection(session, auth, agent)
            return await control.enqueue(session, auth, thread, agent.id, content, connection_id, effects,
                                         agent_version=agent.version)
        if if_busy != "interrupt":
            busy_id = active.id if active is not None else queue_head
            state = active.state if active is not None else "queued"
            raise HeddleError("run_active", f"Run {busy_id} is {state}; wait for it (or post its outcome), "
                              "or send if_busy: enqueue or interrupt.", details={"run_id": str(busy_id)})
        await control.interrupt(session, auth, thread.id, active, effects)
        seq = await q.next_message_seq(session, thread.id)  # cancelled queued messages took seqs
        latest = None
    if latest is not None and latest.state == AWAITING_INPUT:
        run = latest
        message = Message(id=uuid.uuid4(), thread_id=thread.id, run_id=run.id, seq=seq, role="user", content=content)
        session.add(message)
        asked = await session.scalar(select(ToolCall).where(
            ToolCall.run_id == run.id, ToolCall.kind == "ask", ToolCall.status == "pending"))
        if asked is not None:
            await transition_call(session, asked.id, CALL_PENDING, "succeed", result={"answer": content})
        else:  # approvals pending: declined, and the message is the next input (see loom/approvals.py)
            await approvals_module.decline_for_message(session, auth, run, message)
        await transition(session, run, "answer", pending_question=None)
        if auth.mode == "direct":
            run.session_token, run.session_token_expires_at = auth.session_token, auth.session_token_expires_at
        await session.flush()
    else:
        connection_id = await _resolve_run_connection(session, auth, agent)
        now = utcnow()
        run_row = dict(id=uuid.uuid4(), thread_id=thread.id, workspace_id=auth.workspace_id, agent_id=agent.id,
                       agent_version=agent.version, subject=thread.subject, state=RUNNING,
                       connection_id=connection_id, auth_mode=auth.mode,
                       key_id=auth.key_id, session_token=auth.session_token,
                       session_token_expires_at=auth.session_token_expires_at, opened_at=now, created_at=now,
                       updated_at=now, cost_micro=0, turn_count=0)
        message_row = dict(id=uuid.uuid4(), thread_id=thread.id, run_id=run_row["id"], seq=seq, role="user",
                           content=content, created_at=now)
        claimed = preclaim() if preclaim is not None else None
        if claimed is not None:
            run_row.update(claimed)
            effects.claimed[run_row["id"]] = claimed["fence"]
        # Core inserts: the hottest write of the API, and the ORM unit of work cost more than
        # the two statements. The objects below are only read back for the response.
        await session.execute(_INSERT_RUN, run_row)
        await session.execute(_INSERT_MESSAGE, message_row)
        run, message = Run(**run_row), Message(**message_row)
        effects.created[run.id] = auth.workspace_id  # its events are staged without a lock or a read
    if run.turn_count == 0 and run.connection_id is None:  # a new run: nothing more to read
        run_data = run_dict(run, latest=None, connection=None)
    else:
        run_data = await render_run(session, run)
    effects.message_created(thread.id, message_dict(message))
    effects.run_updated(thread.id, run_data)
    effects.start(run.id)
    return {"run_id": str(run.id), "message_id": str(message.id), "run": run_data}


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
        # Run control (loom/control.py): queued/started, cancelled or interrupted, by whom and when.
        "control": run.control or {},
    })
    return data


async def post_outcome(session: AsyncSession, auth: AuthContext, run_id: str, tool_call_id: str, state: str,
                       detail: dict[str, Any] | None, effects: Effects) -> dict[str, Any]:
    run = await q.visible_run(session, auth, run_id, for_update=True)
    tc_id = q.parse_id(tool_call_id, "tool call")
    call = await session.scalar(select(ToolCall).where(ToolCall.id == tc_id, ToolCall.run_id == run.id))
    if call is None:
        raise q.not_found("tool call")
    if call.outcome_state is not None:  # a retry: keep the first outcome
        return await render_run(session, run)
    if run.state == FAILED and call.status == "awaiting_outcome":
        # Cancelled while this side effect was unconfirmed: the outcome is recorded for the
        # trace and the ledger of the caller's own systems; the run does not resume.
        await transition_call(session, call.id, CALL_AWAITING_OUTCOME, "resolve", outcome_state=state,
                              outcome_detail=detail or {}, outcome_at=utcnow())
        data = await render_run(session, run)
        effects.run_updated(run.thread_id, data)
        return data
    if run.state != AWAITING_OUTCOME or call.status != "awaiting_outcome":
        raise HeddleError("run_not_awaiting_outcome", f"Run {run.id} is {run.state}; tool call {call.id} "
                          f"is {call.status}.", details={"run_state": run.state, "tool_call_status": call.status})
    # Conditional on the call still awaiting its outcome: a resolved call never moves again.
    await transition_call(session, call.id, CALL_AWAITING_OUTCOME, "resolve", outcome_state=state,
                          outcome_detail=detail or {}, outcome_at=utcnow())
    if not await q.awaiting_tool_calls(session, run.id):
        await transition(session, run, "outcome")
        effects.start(run.id)
    data = await render_run(session, run)
    effects.run_updated(run.thread_id, data)
    return data
