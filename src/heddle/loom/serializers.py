"""The JSON shapes of Thread, Message, Run, Trace, Turn and ToolCall, as the API returns them (the
read models in heddle/loom/schemas.py, which the OpenAPI document lists)."""

from __future__ import annotations

from typing import Any

from heddle.loom.models import Message, Run, Thread, ToolCall, Turn
from heddle.loom.states import AWAITING_INPUT, AWAITING_OUTCOME, FAILED, TERMINAL
from heddle.money import to_credits
from heddle.text import nul_replaced
from heddle.timeutil import iso


def thread_dict(t: Thread) -> dict[str, Any]:
    return {"id": str(t.id), "agent": t.agent_id, "subject": t.subject, "created_at": iso(t.created_at)}


def message_dict(m: Message) -> dict[str, Any]:
    return {"id": str(m.id), "thread_id": str(m.thread_id), "run_id": str(m.run_id) if m.run_id else None,
            # A run's latest answer, read as a row, may carry none of these.
            "role": m.role, "content": m.content, "attachments": getattr(m, "attachments", None) or [],
            "data": getattr(m, "data", None), "scheduled": getattr(m, "scheduled", None),
            "created_at": iso(m.created_at),
            "feedback": None}  # the subject's rating: filled in by the thread's message list


def tool_call_dict(tc: ToolCall) -> dict[str, Any]:
    outcome = None
    if tc.outcome_state:
        outcome = {"state": tc.outcome_state, "detail": tc.outcome_detail or {},
                   "created_at": iso(tc.outcome_at)}
    return {
        "id": str(tc.id), "name": tc.name, "kind": tc.kind, "patch_ref": tc.patch_ref, "interaction": tc.interaction,
        "status": tc.status, "args": tc.args or {}, "result": tc.result, "risk": tc.risk,
        "reliability": tc.reliability, "cost_credits": to_credits(tc.cost_micro), "outcome": outcome,
        "approval": tc.approval,  # interaction: approve — required?, who answered, when, why
        "nul_replaced": nul_replaced(tc.attempts),  # U+0000 in the host's answer (heddle/text.py)
    }


def run_dict(run: Run, *, latest: Message | None, connection: dict[str, str] | None,
             awaiting: list[ToolCall] | None = None, approvals: list[ToolCall] | None = None) -> dict[str, Any]:
    pending = None
    if run.state == AWAITING_INPUT and approvals:
        pending = {"type": "approval", "tool_calls": [tool_call_dict(tc) for tc in approvals]}
    elif run.state == AWAITING_INPUT:
        pending = {"type": "input", "question": run.pending_question}
    elif run.state == AWAITING_OUTCOME:
        pending = {"type": "outcome", "tool_calls": [tool_call_dict(tc) for tc in awaiting or []]}
    data: dict[str, Any] = {
        "id": str(run.id), "thread_id": str(run.thread_id), "state": run.state, "origin": run.origin or "api",
        "terminal": run.state in TERMINAL, "cost_credits": to_credits(run.cost_micro),
        "connection": connection, "latest_message": message_dict(latest) if latest else None,
        "pending": pending, "error": None,
        "created_at": iso(run.created_at), "updated_at": iso(run.updated_at),
    }
    if run.state == FAILED:
        data["error"] = {"code": run.error_code or "internal_error", "message": run.error_message or ""}
    return data


def turn_dict(turn: Turn, tool_calls: list[ToolCall]) -> dict[str, Any]:
    return {
        "seq": turn.seq, "model_class": turn.model_class, "input_tokens": turn.input_tokens,
        "output_tokens": turn.output_tokens, "cost_credits": to_credits(turn.cost_micro),
        "request": turn.request or {}, "response": turn.response or {},
        # Turns stored before attempts were recorded (migration 0012) were all answers.
        "status": turn.status or "ok", "truncated": turn.status == "truncated", "attempts": turn.attempts or [],
        "purpose": turn.purpose or "reply",
        "tool_calls": [tool_call_dict(tc) for tc in tool_calls],
        "created_at": iso(turn.created_at),
    }
