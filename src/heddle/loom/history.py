"""Rebuild the model conversation of a run from the database (so any process can resume it).

Earlier runs of the thread contribute their user/assistant messages, newest first until the
model class's `history_tokens` budget is spent (the cut is reported in the turn's request as
`history`, so the trace shows what the model did not see; what falls out is summarized,
loom/summaries.py, and the summary given in its place); the current run
contributes its opening message, then each turn as an assistant message with tool calls
followed by one tool message per call that has a result. A question asked through `ask_user`
and its answer appear as that tool call and its result, not as separate messages.
"""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import bindparam, func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from heddle.loom.attachments.to_model import answer_files, attachment_tokens, load_parts, ref, with_parts
from heddle.loom.models import Agent, Message, Run, ToolCall, Turn
from heddle.loom.providers.base import DEFAULT_HISTORY_TOKENS, ChatMessage, ModelToolCall
from heddle.loom.providers.tokens import count_words

HISTORY_PAGE = 100  # earlier messages read per query while filling the budget
HISTORY_MAX_MESSAGES = 2000  # never more than this many earlier messages, whatever the budget


def estimate_tokens(text: str | None, provider: str) -> int:
    """Tokens of one message, as the budget counts them: the scripted model's own words, or
    about four characters a token (plus a few for the message's framing) for real models."""
    if provider == "scripted":
        return count_words(text)
    return (len(text or "") + 3) // 4 + 4


# Built once (every model turn reads its history), of plain columns: the messages are only read.
_m = Message.__table__
_COLUMNS = (_m.c.id, _m.c.run_id, _m.c.role, _m.c.content, _m.c.seq, _m.c.attachments)
_RUN = bindparam("run_id", type_=_m.c.run_id.type)
_THREAD = bindparam("thread_id", type_=_m.c.thread_id.type)
_OPENING_ID = (select(_m.c.id).where(_m.c.run_id == _RUN, _m.c.role == "user")
               .order_by(_m.c.seq).limit(1).scalar_subquery())
_FIRST_PAGE = (select(*_COLUMNS).where(_m.c.thread_id == _THREAD, or_(_m.c.run_id != _RUN, _m.c.id == _OPENING_ID))
               .order_by(_m.c.seq.desc()).limit(HISTORY_PAGE + 1))
_NEXT_PAGE = (select(*_COLUMNS).where(_m.c.thread_id == _THREAD, _m.c.run_id != _RUN,
                                      _m.c.seq < bindparam("last_seq"))
              .order_by(_m.c.seq.desc()).limit(HISTORY_PAGE + 1))
_OPENING = select(*_COLUMNS).where(_m.c.id == _OPENING_ID)
# With a thread summary (loom/summaries.py): only the messages after the span it covers.
_AFTER = _m.c.seq > bindparam("after_seq")
_FIRST_PAGE_AFTER = _FIRST_PAGE.where(_AFTER)
_NEXT_PAGE_AFTER = _NEXT_PAGE.where(_AFTER)


def summary_message(through_seq: int, content: str) -> ChatMessage:
    """How a thread summary is given to the model, after the instructions."""
    return ChatMessage(role="system", content=f"Summary of the conversation so far (its first {through_seq} "
                                              f"messages, which are not repeated below):\n{content}")


async def _earlier_messages(session: AsyncSession, run: Run, budget: int, provider: str,
                            report: dict[str, Any], after_seq: int | None = None) -> tuple[list[Any], Any | None]:
    """The thread's messages of other runs, newest first, while they fit in `budget` tokens, and
    this run's opening message (read by the first page's statement too: one round trip); rows
    with a Message's id, run_id, role, content and seq. With `after_seq`, only those after it
    (a summary covers the rest)."""
    params: dict[str, Any] = {"run_id": run.id, "thread_id": run.thread_id}
    first_page, next_page = _FIRST_PAGE, _NEXT_PAGE
    if after_seq is not None:
        params["after_seq"] = after_seq
        first_page, next_page = _FIRST_PAGE_AFTER, _NEXT_PAGE_AFTER
    kept: list[Any] = []
    opening: Any | None = None
    used, cut, last_seq = 0, False, None
    while not cut and len(kept) < HISTORY_MAX_MESSAGES:
        if last_seq is None:
            page = (await session.execute(first_page, params)).all()
        else:
            page = (await session.execute(next_page, {**params, "last_seq": last_seq})).all()
        full = len(page) > HISTORY_PAGE
        for message in page:
            if message.run_id == run.id:
                opening = message
                continue
            cost = estimate_tokens(message.content, provider) + sum(
                attachment_tokens(a, provider) for a in message.attachments or ())
            if used + cost > budget or len(kept) >= HISTORY_MAX_MESSAGES:
                cut = True
                report["first_dropped_message_id"] = str(message.id)
                report["dropped_through_seq"] = message.seq  # the newest message left out
                if message.attachments:  # the trace says which files the model did not see
                    report["dropped_attachments"] = [ref(a, reason="history_budget") for a in message.attachments]
                break
            kept.append(message)
            used += cost
        if not full:
            break
        last_seq = page[-1].seq
    dropped = 0
    if cut:
        dropped = await session.scalar(select(func.count()).select_from(Message).where(
            Message.thread_id == run.thread_id, Message.run_id != run.id,
            *((Message.seq > after_seq,) if after_seq is not None else ()))) - len(kept)
    report.update({"budget_tokens": budget, "kept_messages": len(kept), "kept_tokens": used,
                   "dropped_messages": dropped})
    if opening is None:  # cut before the page reached it, or crowded out: read it on its own
        opening = (await session.execute(_OPENING, params)).first()
    return kept, opening


def tool_result_content(tc: ToolCall) -> str | None:
    """What the model sees for a tool call, or None while it has no result yet."""
    if tc.kind == "ask":
        return json.dumps(tc.result) if tc.status == "succeeded" and tc.result else None
    if tc.status in ("pending", "awaiting_outcome", "awaiting_approval"):
        return None
    body: dict[str, Any] = {"status": tc.status}
    if tc.result is not None:
        body["result"] = tc.result
    if tc.patch_ref:
        body["patch_ref"] = tc.patch_ref
    if tc.outcome_state:
        body["outcome"] = {"state": tc.outcome_state, "detail": tc.outcome_detail or {}}
    return json.dumps(body, default=str)


async def build_conversation(session: AsyncSession, run: Run, agent: Agent, calls: list[ToolCall] | None = None,
                             *, history_tokens: int = DEFAULT_HISTORY_TOKENS, provider: str = "scripted",
                             report: dict[str, Any] | None = None, vision: bool = False,
                             preamble: list[ChatMessage] | None = None,
                             summary: tuple[int, str] | None = None) -> list[ChatMessage]:
    """The conversation for the run's next model turn; `calls` are the run's tool calls when the
    caller has them; `report` receives the history cut (and which attachments were sent or left
    out); `vision`: the model class takes images. `preamble` follows the instructions (the facts
    remembered about the subject, loom/memory.py); `summary` is `(through_seq, text)` of the
    thread summary to give instead of the messages it covers, its tokens taken from the budget."""
    messages: list[ChatMessage] = []
    if agent.instructions:
        messages.append(ChatMessage(role="system", content=agent.instructions))
    messages += preamble or []
    after_seq = None
    if summary is not None:
        after_seq = summary[0]
        messages.append(summary_message(*summary))
        history_tokens = max(0, history_tokens - estimate_tokens(messages[-1].content, provider))
    report = {} if report is None else report
    earlier, opening = await _earlier_messages(session, run, history_tokens, provider, report, after_seq)
    rows = [*reversed(earlier), *([opening] if opening is not None else [])]
    parts: dict[str, Any] = {}
    metas = [a for m in rows for a in m.attachments or ()]
    if metas or "dropped_attachments" in report:  # read only for a conversation with files
        files = report.setdefault("attachments", {})
        files.setdefault("left_out", []).extend(report.pop("dropped_attachments", []))
        parts = await load_parts(session, metas, vision=vision, report=files)
    messages += [with_parts(ChatMessage(role=m.role, content=m.content), m.attachments, parts) for m in rows]
    if calls is None:
        calls = list(await session.scalars(select(ToolCall).where(ToolCall.run_id == run.id).order_by(ToolCall.seq)))
    if not calls:  # turns without tool calls add nothing (see below): no need to read them
        return messages
    turns = list(await session.scalars(select(Turn).where(Turn.run_id == run.id).order_by(Turn.seq)))
    inputs: dict[str, str] = {}
    if any(tc.status == "declined" and (tc.result or {}).get("message_id") for tc in calls):
        inputs = {str(m.id): m.content for m in await session.scalars(
            select(Message).where(Message.run_id == run.id, Message.role == "user"))}
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
        # An answer to ask_user that came with files: they follow its result as the user's own.
        for tc in turn_calls:
            if tc.kind == "ask" and (tc.result or {}).get("attachments"):
                messages.append(await answer_files(session, tc.result["attachments"], vision=vision, report=report))
        # A message posted instead of an approval declined these calls and is the next input.
        for message_id in dict.fromkeys(str((tc.result or {}).get("message_id") or "") for tc in turn_calls):
            if message_id and message_id in inputs:
                messages.append(ChatMessage(role="user", content=inputs[message_id]))
    return messages
