"""`interaction: approve` tools: the run asks a person before the call reaches the tool host.

A call of such a tool is created `awaiting_approval` (unless the tool's `approve_when` rule
says this call needs none); the engine then pauses the run in `awaiting_input` with
`pending: {type: "approval", tool_calls: [...]}`. `POST /runs/{id}/approval` answers one call:
approved -> `pending` (the engine makes it, like an `auto` call), declined -> `declined` (the
model is told). A message posted instead declines every pending call and becomes the user's
next input to the same run. Each answer is kept on the call (`approval`: who, when, why).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from heddle.auth.context import AuthContext
from heddle.db.base import utcnow
from heddle.errors import HeddleError
from heddle.loom import queries as q
from heddle.loom.models import Message, Run, ToolCall
from heddle.loom.states import AWAITING_INPUT, CALL_AWAITING_APPROVAL, CALL_PENDING
from heddle.loom.unit_of_work import RunWork
from heddle.loom.views import awaiting_approval, render_run
from heddle.timeutil import iso


def actor(auth: AuthContext) -> dict[str, Any]:
    """Who did it, as the trace shows it (never a secret)."""
    return {"mode": auth.mode, "key_id": auth.key_id, "subject": auth.subject}


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def needs_approval(definition: dict[str, Any], args: dict[str, Any]) -> tuple[bool, str]:
    """Whether this call of an `approve` tool must be asked about, and why (shown in the trace)."""
    rule = definition.get("approve_when")
    if not rule:
        return True, "the tool always needs approval"
    for name, limit in (rule.get("above") or {}).items():
        value = _number((args or {}).get(name))
        if value is None:
            return True, f"argument {name!r} is missing or not a number"
        if value > limit:
            return True, f"{name} {value:g} is above {limit:g}"
    return False, "no approval rule matched"


def initial_status(definition: dict[str, Any], args: dict[str, Any]) -> tuple[str, dict[str, Any] | None]:
    """The status a new tool call starts in, and its `approval` record (None if not an approve tool)."""
    if definition.get("interaction") != "approve":
        return CALL_PENDING, None
    required, why = needs_approval(definition, args)
    record: dict[str, Any] = {"required": required, "why": why}
    if definition.get("approve_when"):
        record["rule"] = definition["approve_when"]
    if not required:
        return CALL_PENDING, record
    return CALL_AWAITING_APPROVAL, {**record, "requested_at": iso(utcnow())}


async def decide(work: RunWork, call: ToolCall, approved: bool, by: dict[str, Any], reason: str | None,
                 message_id: str | None = None) -> None:
    """Answer one call awaiting approval: approved -> pending, declined -> declined."""
    record = {**(call.approval or {}), "approved": approved, "by": by, "at": iso(utcnow()), "reason": reason}
    if approved:
        await work.move_call(call, CALL_AWAITING_APPROVAL, "approve", approval=record)
    else:
        await work.move_call(call, CALL_AWAITING_APPROVAL, "decline", approval=record, result={
            "declined": True, "reason": reason or "The user declined this call.",
            **({"message_id": message_id} if message_id else {})})


async def answer(work: RunWork, auth: AuthContext, run_id: str, tool_call_id: str, approved: bool,
                 reason: str | None) -> dict[str, Any]:
    """`POST /runs/{id}/approval`. A retry for an already answered call keeps the first answer."""
    session = work.session
    run = await q.visible_run(session, auth, run_id, for_update=True)
    tc_id = q.parse_id(tool_call_id, "tool call")
    call = await session.scalar(select(ToolCall).where(ToolCall.id == tc_id, ToolCall.run_id == run.id))
    if call is None:
        raise q.not_found("tool call")
    if call.approval and "approved" in call.approval:
        return await render_run(session, run)
    if run.state != AWAITING_INPUT or call.status != CALL_AWAITING_APPROVAL:
        raise HeddleError("run_not_awaiting_approval", f"Run {run.id} is {run.state}; tool call {call.id} is "
                          f"{call.status}.", details={"run_state": run.state, "tool_call_status": call.status})
    await decide(work, call, approved, actor(auth), reason)
    if not await awaiting_approval(session, run.id):
        await work.move(run, "approval")
        work.start(run.id)
    data = await render_run(session, run)
    work.run_updated(run.thread_id, data)
    return data


async def decline_for_message(work: RunWork, auth: AuthContext, run: Run, message: Message) -> bool:
    """A message posted while approvals are pending declines them all; True if there were any."""
    pending = await awaiting_approval(work.session, run.id)
    for call in pending:
        await decide(work, call, False, actor(auth), "The user sent a message instead.", message_id=str(message.id))
    return bool(pending)
