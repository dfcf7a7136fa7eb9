"""End users' feedback on assistant messages: give (or replace) a rating, withdraw it, read it.

Only the subject who owns the thread rates its answers, in either mode: another subject's or
workspace's message, a user's own message and an unknown id are all 404 `not_found` (no hint
that the row exists). One rating per subject and message: giving it again replaces it. Each
change records a `message.feedback` event in the run's log (SSE, realtime) and owes the
`message.feedback` webhook (heddle/loom/event_outbox.py), in the request's transaction.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from heddle.auth.context import AuthContext
from heddle.db import dialect
from heddle.db.base import utcnow
from heddle.loom import queries as q
from heddle.loom.feedback_models import MessageFeedback
from heddle.loom.models import Message, Run, Thread
from heddle.loom.unit_of_work import RunWork
from heddle.timeutil import iso

ASSISTANT = "assistant"


def feedback_dict(row: MessageFeedback, *, withdrawn: bool = False) -> dict[str, Any]:
    """The Feedback read model (heddle/loom/feedback_schemas.py); `rating: null` once withdrawn."""
    return {"message_id": str(row.message_id), "thread_id": str(row.thread_id),
            "run_id": str(row.run_id) if row.run_id else None, "agent": row.agent_id,
            "agent_version": row.agent_version, "subject": row.subject,
            "rating": None if withdrawn else row.rating, "comment": None if withdrawn else row.comment,
            "created_at": iso(row.created_at), "updated_at": iso(row.updated_at)}


async def _rated_message(session: AsyncSession, auth: AuthContext, message_id: str) -> tuple[Message, Thread, int]:
    """The caller's own assistant message, its thread and the agent version that wrote it; 404
    for anything else."""
    subject = auth.require_subject()
    mid = q.parse_id(message_id, "message")
    row = (await session.execute(
        select(Message, Thread, Run.agent_version).join(Thread, Thread.id == Message.thread_id)
        .outerjoin(Run, Run.id == Message.run_id).where(Message.id == mid))).first()
    if (row is None or row[1].workspace_id != auth.workspace_id or row[1].subject != subject
            or row[0].role != ASSISTANT):
        raise q.not_found("assistant message")
    message, thread, version = row
    return message, thread, version or 1


async def _existing(session: AsyncSession, message_id: uuid.UUID, subject: str) -> MessageFeedback | None:
    return await session.scalar(dialect.for_update(session, select(MessageFeedback).where(
        MessageFeedback.message_id == message_id, MessageFeedback.subject == subject)))


async def give(work: RunWork, auth: AuthContext, message_id: str, rating: str,
               comment: str | None) -> dict[str, Any]:
    """Rate the caller's assistant message (replacing an earlier rating); the Feedback."""
    session = work.session
    message, thread, version = await _rated_message(session, auth, message_id)
    now = utcnow()
    row = await _existing(session, message.id, thread.subject)
    if row is None:
        row = MessageFeedback(id=uuid.uuid4(), workspace_id=thread.workspace_id, message_id=message.id,
                              thread_id=thread.id, run_id=message.run_id, agent_id=thread.agent_id,
                              agent_version=version, subject=thread.subject, rating=rating, comment=comment,
                              created_at=now, updated_at=now)
        try:
            async with session.begin_nested():
                session.add(row)
        except IntegrityError:  # a concurrent request rated it first: this one replaces it
            row = await _existing(session, message.id, thread.subject)
    row.rating, row.comment, row.updated_at = rating, comment, now
    await session.flush()
    data = feedback_dict(row)
    work.message_feedback(thread.id, data)
    return data


async def withdraw(work: RunWork, auth: AuthContext, message_id: str) -> dict[str, Any]:
    """Withdraw the caller's rating of the message; 404 when it has none."""
    session = work.session
    message, thread, _version = await _rated_message(session, auth, message_id)
    row = await _existing(session, message.id, thread.subject)
    if row is None:
        raise q.not_found("feedback")
    await session.execute(delete(MessageFeedback).where(MessageFeedback.id == row.id))
    row.updated_at = utcnow()
    data = feedback_dict(row, withdrawn=True)
    work.message_feedback(thread.id, data)
    return data


async def of_messages(session: AsyncSession, subject: str, message_ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, dict]:
    """The subject's ratings of these messages, as a message shows them (`feedback`)."""
    ids = list(message_ids)
    if not ids:
        return {}
    rows = await session.scalars(select(MessageFeedback).where(
        MessageFeedback.message_id.in_(ids), MessageFeedback.subject == subject))
    return {r.message_id: {"rating": r.rating, "comment": r.comment, "updated_at": iso(r.updated_at)} for r in rows}


async def of_run(session: AsyncSession, run_id: uuid.UUID) -> list[dict[str, Any]]:
    """Every rating of the run's answers, for its trace."""
    rows = await session.scalars(select(MessageFeedback).where(MessageFeedback.run_id == run_id)
                                 .order_by(MessageFeedback.updated_at))
    return [feedback_dict(r) for r in rows]
