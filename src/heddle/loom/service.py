"""Loom writes behind the HTTP routes: opening threads, posting messages and outcomes.

Each run or tool-call change goes through the request's unit of work (heddle/loom/unit_of_work.py);
reads are in heddle/loom/views.py.
"""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import insert, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from heddle.auth.context import AuthContext
from heddle.db.base import utcnow
from heddle.errors import HeddleError
from heddle.loom import approvals, cancellation, rows, thread_queue
from heddle.loom import queries as q
from heddle.loom.agents import get_agent, has_unpinned_hosted_tools
from heddle.loom.attachments.rules import AttachmentRules, attach_to_message
from heddle.loom.models import Message, Thread, ToolCall
from heddle.loom.serializers import message_dict, run_dict, thread_dict
from heddle.loom.states import (
    AWAITING_INPUT,
    AWAITING_OUTCOME,
    CALL_AWAITING_OUTCOME,
    CALL_PENDING,
    FAILED,
    RUNNING,
)
from heddle.loom.unit_of_work import RunWork
from heddle.loom.views import render_run
from heddle.runs_vocabulary import ORIGIN_API
from heddle.workspaces.service import resolve_connection

_INSERT_MESSAGE = insert(Message.__table__)


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


async def post_message(work: RunWork, auth: AuthContext, thread_id: str, content: str,
                       if_busy: str = "reject", attachments: AttachmentRules | None = None, *,
                       origin: str = ORIGIN_API, scheduled: dict[str, Any] | None = None,
                       agent_version: int | None = None, run_extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """A user message: starts a run (inserted already claimed by the in-process executor when it
    has a slot), answers the run awaiting input, or waits its turn (`if_busy`). Its attachments
    (ids of files uploaded to the thread) become the message's in the same transaction. `origin`
    marks a run started another way than the API (runs_vocabulary.ORIGIN_*): a schedule
    (loom/schedule_firing.py, with `scheduled` marking the message: which schedule, who made it,
    how late), an eval case or the console's playground (with `agent_version`, default the
    agent's current one), AG-UI or A2A; `run_extra`: more columns of a new run."""
    session = work.session
    auth.require_subject()
    # The thread's lock first, so two concurrent messages cannot both start a run.
    await rows.lock_thread(session, q.parse_id(thread_id, "thread"))
    thread, agent, latest, seq, queue_head = await q.thread_for_message(session, auth, thread_id)
    message_id = uuid.uuid4()
    files = await attach_to_message(session, auth, thread, agent, message_id, attachments)
    active = latest if latest is not None and latest.state in (RUNNING, AWAITING_OUTCOME) else None
    if active is not None or (queue_head is not None and (latest is None or latest.state != AWAITING_INPUT)):
        # Busy: a run is working, or messages already wait their turn (see loom/thread_queue.py).
        if if_busy == "enqueue":
            connection_id = await _resolve_run_connection(session, auth, agent)
            return await thread_queue.enqueue(work, auth, thread, agent.id, content, connection_id,
                                              agent_version=agent.version if agent_version is None else agent_version,
                                              message_id=message_id,
                                              attachments=files, origin=origin, scheduled=scheduled)
        if if_busy != "interrupt":
            busy_id = active.id if active is not None else queue_head
            state = active.state if active is not None else "queued"
            raise HeddleError("run_active", f"Run {busy_id} is {state}; wait for it (or post its outcome), "
                              "or send if_busy: enqueue or interrupt.", details={"run_id": str(busy_id)})
        await cancellation.interrupt(work, auth, thread.id, active)
        seq = await rows.next_message_seq(session, thread.id)  # cancelled queued messages took seqs
        latest = None
    if latest is not None and latest.state == AWAITING_INPUT:
        run = latest
        message = Message(id=message_id, thread_id=thread.id, run_id=run.id, seq=seq, role="user", content=content,
                          attachments=files, scheduled=scheduled)
        session.add(message)
        asked = await session.scalar(select(ToolCall.id).where(
            ToolCall.run_id == run.id, ToolCall.kind == "ask", ToolCall.status == CALL_PENDING))
        if asked is not None:
            answer = {"answer": content, **({"attachments": files} if files else {})}
            await work.move_call(asked, CALL_PENDING, "succeed", result=answer)
        else:  # approvals pending: declined, and the message is the next input (see loom/approvals.py)
            await approvals.decline_for_message(work, auth, run, message)
        tokens = ({"session_token": auth.session_token, "session_token_expires_at": auth.session_token_expires_at}
                  if auth.mode == "direct" else {})
        await work.move(run, "answer", pending_question=None, **tokens, **rows.trace_context())
        await session.flush()
    else:
        connection_id = await _resolve_run_connection(session, auth, agent)
        version = agent.version if agent_version is None else agent_version  # a playground draft is <= 0
        run_row = rows.run_row(auth, thread, agent_id=agent.id, agent_version=version, state=RUNNING,
                               connection_id=connection_id, origin=origin, **(run_extra or {}))
        now = run_row["created_at"]
        message_row = dict(id=message_id, thread_id=thread.id, run_id=run_row["id"], seq=seq, role="user",
                           content=content, attachments=files, created_at=now, scheduled=scheduled)
        # Core inserts: the hottest write of the API, and the ORM unit of work cost more than
        # the two statements. The objects are only read back for the response.
        run = await work.insert_run(run_row, claim=True)
        await session.execute(_INSERT_MESSAGE, message_row)
        message = Message(**message_row)
    if run.turn_count == 0 and run.connection_id is None:  # a new run: nothing more to read
        run_data = run_dict(run, latest=None, connection=None)
    else:
        run_data = await render_run(session, run)
    work.message_created(thread.id, message_dict(message))
    work.run_updated(thread.id, run_data)
    work.start(run.id)
    return {"run_id": str(run.id), "message_id": str(message.id), "run": run_data}


async def post_outcome(work: RunWork, auth: AuthContext, run_id: str, tool_call_id: str, state: str,
                       detail: dict[str, Any] | None) -> dict[str, Any]:
    session = work.session
    run = await q.visible_run(session, auth, run_id, for_update=True)
    tc_id = q.parse_id(tool_call_id, "tool call")
    call = await session.scalar(select(ToolCall).where(ToolCall.id == tc_id, ToolCall.run_id == run.id))
    if call is None:
        raise q.not_found("tool call")
    if call.outcome_state is not None:  # a retry: keep the first outcome
        return await render_run(session, run)
    if run.state == FAILED and call.status == CALL_AWAITING_OUTCOME:
        # Cancelled while this side effect was unconfirmed: the outcome is recorded for the
        # trace and the ledger of the caller's own systems; the run does not resume.
        await work.move_call(call, CALL_AWAITING_OUTCOME, "resolve", outcome_state=state,
                             outcome_detail=detail or {}, outcome_at=utcnow())
        data = await render_run(session, run)
        work.run_updated(run.thread_id, data)
        return data
    if run.state != AWAITING_OUTCOME or call.status != CALL_AWAITING_OUTCOME:
        raise HeddleError("run_not_awaiting_outcome", f"Run {run.id} is {run.state}; tool call {call.id} "
                          f"is {call.status}.", details={"run_state": run.state, "tool_call_status": call.status})
    # Conditional on the call still awaiting its outcome: a resolved call never moves again.
    await work.move_call(call, CALL_AWAITING_OUTCOME, "resolve", outcome_state=state,
                         outcome_detail=detail or {}, outcome_at=utcnow())
    if not await q.awaiting_tool_calls(session, run.id):
        await work.move(run, "outcome")
        work.start(run.id)
    data = await render_run(session, run)
    work.run_updated(run.thread_id, data)
    return data

