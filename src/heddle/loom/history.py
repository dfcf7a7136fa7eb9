"""Rebuild the model conversation of a run from the database (so any process can resume it).

Earlier runs of the thread contribute their user/assistant messages; the current run
contributes its opening message, then each turn as an assistant message with tool calls
followed by one tool message per call that has a result. A question asked through `ask_user`
and its answer appear as that tool call and its result, not as separate messages.
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from heddle.loom.models import Agent, Message, Run, ToolCall, Turn
from heddle.loom.providers.base import ChatMessage, ModelToolCall

HISTORY_MESSAGES = 40  # earlier thread messages given to the model


def tool_result_content(tc: ToolCall) -> str | None:
    """What the model sees for a tool call, or None while it has no result yet."""
    if tc.kind == "ask":
        return json.dumps(tc.result) if tc.status == "succeeded" and tc.result else None
    if tc.status in ("pending", "awaiting_outcome"):
        return None
    body: dict[str, Any] = {"status": tc.status}
    if tc.result is not None:
        body["result"] = tc.result
    if tc.patch_ref:
        body["patch_ref"] = tc.patch_ref
    if tc.outcome_state:
        body["outcome"] = {"state": tc.outcome_state, "detail": tc.outcome_detail or {}}
    return json.dumps(body, default=str)


async def build_conversation(session: AsyncSession, run: Run, agent: Agent,
                             calls: list[ToolCall] | None = None) -> list[ChatMessage]:
    """The model's view of the run; `calls` are the run's tool calls when the caller has them."""
    messages: list[ChatMessage] = []
    if agent.instructions:
        messages.append(ChatMessage(role="system", content=agent.instructions))
    # One read for the earlier thread messages and this run's opening message (the newest row
    # of this run that qualifies), instead of two.
    opening_id = (select(Message.id).where(Message.run_id == run.id, Message.role == "user")
                  .order_by(Message.seq).limit(1).scalar_subquery())
    rows = list(await session.scalars(
        select(Message).where(Message.thread_id == run.thread_id,
                              or_(Message.run_id != run.id, Message.id == opening_id))
        .order_by(Message.seq.desc()).limit(HISTORY_MESSAGES + 1)))
    opening = next((m for m in rows if m.run_id == run.id), None)
    if opening is None and len(rows) > HISTORY_MESSAGES:  # later runs' messages crowded it out
        opening = await session.scalar(select(Message).where(Message.id == opening_id))
    earlier = [m for m in rows if m.run_id != run.id][:HISTORY_MESSAGES]
    messages += [ChatMessage(role=m.role, content=m.content) for m in reversed(earlier)]
    if opening is not None:
        messages.append(ChatMessage(role="user", content=opening.content))
    if calls is None:
        calls = list(await session.scalars(select(ToolCall).where(ToolCall.run_id == run.id).order_by(ToolCall.seq)))
    if not calls:  # turns without tool calls add nothing (see below): no need to read them
        return messages
    turns = list(await session.scalars(select(Turn).where(Turn.run_id == run.id).order_by(Turn.seq)))
    for turn in turns:
        turn_calls = [tc for tc in calls if tc.turn_id == turn.id]
        if not turn_calls:
            continue  # a final answer: it is the run's assistant message, nothing to continue from
        messages.append(ChatMessage(
            role="assistant", content=(turn.response or {}).get("text"),
            tool_calls=tuple(ModelToolCall(id=tc.model_call_id, name=tc.name, arguments=tc.args or {})
                             for tc in turn_calls)))
        for tc in turn_calls:
            content = tool_result_content(tc)
            if content is not None:
                messages.append(ChatMessage(role="tool", content=content, tool_call_id=tc.model_call_id,
                                            name=tc.name))
    return messages
