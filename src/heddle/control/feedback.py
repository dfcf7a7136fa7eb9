"""End users' feedback as operators read it: the console's Feedback page (down-rated first,
each with its run's trace) and `heddle feedback export`, which writes the rated conversations
as eval dataset lines (heddle/loom/evals/dataset.py), so yesterday's complaints become
tomorrow's test cases. Eval results as the console's Evals page reads them are here too.
"""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

from sqlalchemy import case, select
from sqlalchemy.ext.asyncio import AsyncSession

from heddle.control.errors import invalid, not_found
from heddle.control.workspaces import workspace
from heddle.loom.eval_models import EvalRun
from heddle.loom.evals import report
from heddle.loom.feedback import feedback_dict
from heddle.loom.feedback_models import MessageFeedback
from heddle.loom.models import Message

FEEDBACK_CAP = 500


def since_of(text: str | None) -> dt.datetime | None:
    """`--since 2026-11-01` or an ISO timestamp (UTC when it names no zone)."""
    if not text:
        return None
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        raise invalid("since", "since: must be an ISO date or timestamp, e.g. 2026-11-01 or "
                      "2026-11-01T09:00:00Z") from None
    return when if when.tzinfo else when.replace(tzinfo=dt.UTC)


async def list_feedback(session: AsyncSession, workspace_id: str, *, rating: str | None = None,
                        agent: str | None = None, version: int | None = None, since: dt.datetime | None = None,
                        limit: int = 100) -> list[dict[str, Any]]:
    """The workspace's feedback, down-rated first, newest first within a rating; each with the
    rated answer and the link to its run's trace."""
    await workspace(session, workspace_id)
    if rating not in (None, "up", "down"):
        raise invalid("rating", "rating: must be up or down")
    f = MessageFeedback
    query = select(f, Message.content).join(Message, Message.id == f.message_id).where(f.workspace_id == workspace_id)
    if rating:
        query = query.where(f.rating == rating)
    if agent:
        query = query.where(f.agent_id == agent)
    if version:
        query = query.where(f.agent_version == version)
    if since:
        query = query.where(f.updated_at >= since)
    query = query.order_by(case((f.rating == "down", 0), else_=1), f.updated_at.desc()).limit(min(limit, FEEDBACK_CAP))
    return [{**feedback_dict(row), "answer": answer, "trace": report.trace_link(workspace_id, str(row.run_id))
             if row.run_id else None} for row, answer in await session.execute(query)]


async def export_cases(session: AsyncSession, workspace_id: str, *, rating: str | None = None,
                       since: dt.datetime | None = None, limit: int = FEEDBACK_CAP) -> list[dict[str, Any]]:
    """Each rated conversation as a dataset line: the user messages up to the rated answer, the
    answer given (`answer`, for the operator to turn into expectations) and the feedback; the
    `expect` is left for the operator to write."""
    rated = await list_feedback(session, workspace_id, rating=rating, since=since, limit=limit)
    lines = []
    for item in rated:
        message = await session.get(Message, uuid.UUID(item["message_id"]))
        users = list(await session.scalars(select(Message.content).where(
            Message.thread_id == message.thread_id, Message.role == "user", Message.seq < message.seq)
            .order_by(Message.seq)))
        lines.append({"name": f"{item['rating']} {item['message_id'][:8]}", "messages": users, "expect": {},
                      "answer": item["answer"],
                      "feedback": {k: item[k] for k in ("rating", "comment", "agent", "agent_version", "run_id",
                                                       "message_id", "updated_at")}})
    return [line for line in lines if line["messages"]]


async def eval_runs(session: AsyncSession, workspace_id: str, agent: str | None = None) -> list[dict[str, Any]]:
    await workspace(session, workspace_id)
    return await report.list_runs(session, workspace_id, agent)


async def eval_run(session: AsyncSession, workspace_id: str, eval_id: str) -> dict[str, Any]:
    try:
        row = await session.get(EvalRun, uuid.UUID(eval_id))
    except ValueError:
        row = None
    if row is None or row.workspace_id != workspace_id:
        raise not_found("eval", eval_id)
    return report.eval_run_dict(row)
