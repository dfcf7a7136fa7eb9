"""The write of one AG-UI request: which Heddle thread and run it acts on, and what it does there.

Everything goes through loom's own writes in the request's unit of work, so an AG-UI request
is a posted message, an answer, an approval or an outcome like any other (idempotent retries,
credits, traces and webhooks included):

- the AG-UI thread is the caller's subject's thread with the agent: `threadId` may be that
  thread's id; any other value that names no Heddle thread opens (or reuses) the subject's
  thread with the agent; a `threadId` naming a thread the caller may not see is 404 `not_found`;
- resume entries answer the interrupts of the thread's run (loom/approvals.py `answer`,
  loom/service.py `post_outcome`, or the question's answer as a posted message);
- tool messages answer front-end tool calls the run waits on (`post_outcome`, state `occurred`,
  detail `{"result": <content>}`); a call that is not waiting is 409 `run_not_awaiting_outcome`;
- a user message starts a run with `origin: agui` (or answers the run's question). The same user
  message again while its run is still working follows that run instead of posting it twice (a
  client that lost its stream picks the run up again).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy import select

from heddle.auth.context import AuthContext
from heddle.errors import HeddleError
from heddle.interop.agui_input import Ask, answer_text, approval_of, outcome_of
from heddle.interop.run_follow import last_seq
from heddle.loom import approvals, cancellation, rows, service
from heddle.loom import queries as q
from heddle.loom.agents import get_agent
from heddle.loom.models import Message, Run, Thread, ToolCall
from heddle.loom.unit_of_work import RunWork
from heddle.runs_vocabulary import (
    AWAITING_INPUT,
    CALL_AWAITING_APPROVAL,
    CALL_AWAITING_OUTCOME,
    CALL_PENDING,
    ORIGIN_AGUI,
    QUEUED,
    RUNNING,
)


@dataclass(frozen=True)
class Started:
    """The run the request's stream follows, and where in its event log the stream begins."""

    run_id: uuid.UUID
    thread_id: uuid.UUID
    after: int  # the last seq of the run's log before this request (0: from the start)
    # The run's calls as the previous request's stream ended (before this request changed them):
    # those it told, and those whose result it told, which this stream does not tell again.
    told: frozenset[str] = frozenset()
    told_answered: frozenset[str] = frozenset()


def nothing_to_run() -> HeddleError:
    return HeddleError("agui_nothing_to_run", "The RunAgentInput carries no new user message, tool result or "
                       "resume entry after the agent's last message.")


async def _thread(session, auth: AuthContext, agent_pk: str, thread_ref: str) -> Thread:
    try:
        tid = uuid.UUID(thread_ref)
    except ValueError:
        tid = None
    if tid is not None and (thread := await session.get(Thread, tid)) is not None:
        if thread.workspace_id != auth.workspace_id or thread.subject != auth.subject or thread.agent_id != agent_pk:
            raise q.not_found("thread")
        return thread
    data, _ = await service.open_thread(session, auth, agent_pk)
    return await session.get(Thread, uuid.UUID(data["id"]))


async def _told(session, run: Run) -> tuple[frozenset[str], frozenset[str]]:
    calls = list(await session.scalars(select(ToolCall).where(ToolCall.run_id == run.id)))
    told = frozenset(str(c.id) for c in calls if c.kind != "ask" and c.status != CALL_PENDING)
    answered = frozenset(str(c.id) for c in calls if str(c.id) in told
                         and (c.status in ("succeeded", "failed", "resolved", "declined") or c.kind == "client"))
    return told, answered


async def _call_of(session, run: Run | None, tool_call_id: str) -> ToolCall | None:
    if run is None:
        return None
    try:
        tc_id = uuid.UUID(tool_call_id)
    except ValueError:
        return None
    return await session.scalar(select(ToolCall).where(ToolCall.id == tc_id, ToolCall.run_id == run.id))


def _not_waiting(run: Run | None, tool_call_id: str) -> HeddleError:
    state = run.state if run is not None else None
    return HeddleError("run_not_awaiting_outcome", f"No tool call {tool_call_id!r} of this thread's run waits for "
                       "a result.", details={"run_state": state, "tool_call_id": tool_call_id[:64]})


async def _resume(work: RunWork, auth: AuthContext, thread: Thread, run: Run | None, ask: Ask) -> None:
    """Answer the interrupts the input's resume entries name (each a tool call of the thread's run)."""
    for entry in ask.resume:
        call = await _call_of(work.session, run, entry.interrupt_id)
        if call is None:
            raise _not_waiting(run, entry.interrupt_id)
        if call.kind == "ask":
            if call.status != CALL_PENDING or run.state != AWAITING_INPUT:
                raise _not_waiting(run, entry.interrupt_id)
            if entry.status == "cancelled":
                await cancellation.cancel_run(work, auth, str(run.id))
            else:
                await service.post_message(work, auth, str(thread.id), answer_text(entry.payload)[:32_000],
                                           origin=ORIGIN_AGUI)
        elif call.status == CALL_AWAITING_APPROVAL or (call.approval or {}).get("required"):
            approved, reason = approval_of(entry)
            await approvals.answer(work, auth, str(run.id), str(call.id), approved, reason)
        else:
            state, detail = outcome_of(entry)
            await service.post_outcome(work, auth, str(run.id), str(call.id), state, detail)


async def start(work: RunWork, auth: AuthContext, agent_id: str, thread_ref: str, ask: Ask) -> Started:
    """Act on the input in the request's unit of work; the run its stream follows."""
    session = work.session
    auth.require_subject()
    agent = await get_agent(session, auth.workspace_id, agent_id)
    if agent is None:
        raise HeddleError("agent_not_found", f"No agent {agent_id!r} in this workspace.")
    thread = await _thread(session, auth, agent.id, thread_ref)
    await rows.lock_thread(session, thread.id)
    _, _, latest, _, _ = await q.thread_for_message(session, auth, str(thread.id))
    if ask.empty:
        raise nothing_to_run()
    if ask.resume or ask.tool_results:
        if latest is None:
            raise _not_waiting(None, (ask.resume[0].interrupt_id if ask.resume else ask.tool_results[0][0]))
        after = await last_seq(session, latest.id)
        told, answered = await _told(session, latest)
        await _resume(work, auth, thread, latest, ask)
        for tool_call_id, content in ask.tool_results:
            call = await _call_of(session, latest, tool_call_id)
            if call is None or call.status != CALL_AWAITING_OUTCOME:
                raise _not_waiting(latest, tool_call_id)
            await service.post_outcome(work, auth, str(latest.id), str(call.id), "occurred",
                                       {"result": content[:32_000]})
        return Started(latest.id, thread.id, after, told, answered)
    if latest is not None and latest.state in (RUNNING, QUEUED):
        opening = await session.scalar(select(Message.content).where(Message.run_id == latest.id,
                                                                     Message.role == "user")
                                       .order_by(Message.seq).limit(1))
        if opening == ask.user_text:  # the same message again: follow its run from the start
            return Started(latest.id, thread.id, 0)
    answering = latest is not None and latest.state == AWAITING_INPUT
    after = await last_seq(session, latest.id) if answering else 0
    told, answered = await _told(session, latest) if answering else (frozenset(), frozenset())
    extra = {"client_tools": ask.client_tools} if ask.client_tools else None
    data = await service.post_message(work, auth, str(thread.id), ask.user_text or "", origin=ORIGIN_AGUI,
                                      run_extra=extra)
    run_id = uuid.UUID(data["run_id"])
    if latest is None or run_id != latest.id:
        return Started(run_id, thread.id, 0)
    return Started(run_id, thread.id, after, told, answered)
