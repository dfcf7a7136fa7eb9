"""Erasing threads: one thread (DELETE /threads/{id}), a person (DELETE /subjects/{subject}) and
retention (threads idle longer than the workspace's `retention_days`, loom/retention.py).

Erasure removes every row of the thread: its messages, queued messages, runs, turns, tool calls
and attachments (metadata and bytes). Money is kept: ledger rows stay with their amounts (the
balance still equals the ledger sum), but their references to the erased run, turn or tool call
are cut. Request-log rows of the workspace keep their status and latency but lose the run
reference and the ids in their path. Webhook deliveries about the thread's runs (their bodies
hold the Run, its reply and question text included) are deleted with their attempts, delivered
or still pending: a pending one is never sent. A table added later that holds thread data must
be added here.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import delete, func, or_, select, update

from heddle.auth.context import AuthContext
from heddle.auth.subjects import canonical_subject
from heddle.billing.models import LedgerEntry
from heddle.db import dialect
from heddle.errors import HeddleError
from heddle.loom import queries as q
from heddle.loom.attachments.store import erase_for_threads as erase_attachments
from heddle.loom.models import Message, QueuedMessage, Run, RunEventRow, Thread, ToolCall, Turn
from heddle.loom.states import TERMINAL
from heddle.loom.unit_of_work import RunWork
from heddle.observability.models import RequestLogEntry
from heddle.timeutil import iso
from heddle.webhooks.models import WebhookAttempt, WebhookDelivery

ERASED = ":erased"  # what replaces an erased id in a request-log path


@dataclass
class Erased:
    threads: int = 0
    messages: int = 0
    runs: int = 0
    turns: int = 0
    tool_calls: int = 0
    ledger_entries_cut: int = 0
    attachments: int = 0
    thread_ids: list[uuid.UUID] = field(default_factory=list)

    def as_dict(self) -> dict[str, int]:
        return {"threads": self.threads, "messages": self.messages, "runs": self.runs, "turns": self.turns,
                "tool_calls": self.tool_calls, "ledger_entries_cut": self.ledger_entries_cut,
                "attachments": self.attachments}


async def erase_threads(work: RunWork, workspace_id: str, thread_ids: list[uuid.UUID], why: str) -> Erased:
    """Delete the threads (of this workspace) and all they hold, in the caller's unit of work."""
    session = work.session
    out = Erased()
    if not thread_ids:
        return out
    # Lock the threads, then their runs, as message posts and engine steps do (PostgreSQL;
    # SQLite's one writer already serialises): an engine step that waits on a run row finds
    # it gone after this commits and stops, so no turn is inserted under a deleted run.
    await dialect.lock(session, select(Thread.id).where(Thread.id.in_(thread_ids)).order_by(Thread.id))
    runs = list(await session.execute(dialect.for_update(session, (
        select(Run.id, Run.state).where(Run.thread_id.in_(thread_ids), Run.workspace_id == workspace_id)
        .order_by(Run.id)))))
    run_ids = [r.id for r in runs]
    if run_ids:
        out.ledger_entries_cut = (await session.execute(
            update(LedgerEntry).where(LedgerEntry.workspace_id == workspace_id, LedgerEntry.run_id.in_(run_ids))
            .values(run_id=None, ref=None).execution_options(synchronize_session=False))).rowcount
        await session.execute(update(RequestLogEntry).where(RequestLogEntry.run_id.in_(run_ids))
                              .values(run_id=None).execution_options(synchronize_session=False))
        out.tool_calls = (await session.execute(delete(ToolCall).where(ToolCall.run_id.in_(run_ids)))).rowcount
        out.turns = (await session.execute(delete(Turn).where(Turn.run_id.in_(run_ids)))).rowcount
        # The stored SSE log holds message text too (SQLite does not enforce its ON DELETE CASCADE).
        await session.execute(delete(RunEventRow).where(RunEventRow.run_id.in_(run_ids)))
    await _redact_paths(session, workspace_id, [*thread_ids, *run_ids])
    await _delete_webhook_deliveries(session, workspace_id, thread_ids)
    await session.execute(delete(QueuedMessage).where(QueuedMessage.thread_id.in_(thread_ids)))
    out.attachments = await erase_attachments(session, thread_ids)
    out.messages = (await session.execute(delete(Message).where(Message.thread_id.in_(thread_ids)))).rowcount
    if run_ids:
        out.runs = (await session.execute(delete(Run).where(Run.id.in_(run_ids)))).rowcount
    out.threads = (await session.execute(delete(Thread).where(
        Thread.id.in_(thread_ids), Thread.workspace_id == workspace_id))).rowcount
    out.thread_ids = list(thread_ids)
    for thread_id in thread_ids:
        work.thread_deleted(thread_id, why)
    for run in runs:
        if run.state not in TERMINAL:
            work.start(run.id)  # nudges an executor still on it: its model call is abandoned
    return out


async def _delete_webhook_deliveries(session, workspace_id: str, thread_ids: list[uuid.UUID]) -> None:
    """Deliveries whose body is a Run of these threads (`data.thread_id`), and their attempts."""
    about = WebhookDelivery.body["data"]["thread_id"].as_string()
    deliveries = select(WebhookDelivery.id).where(WebhookDelivery.workspace_id == workspace_id,
                                                  about.in_([str(t) for t in thread_ids]))
    await session.execute(delete(WebhookAttempt).where(WebhookAttempt.delivery_id.in_(deliveries))
                          .execution_options(synchronize_session=False))
    await session.execute(delete(WebhookDelivery).where(WebhookDelivery.id.in_(deliveries))
                          .execution_options(synchronize_session=False))


async def _redact_paths(session, workspace_id: str, ids: list[uuid.UUID]) -> None:
    """Request-log paths name threads and runs: replace the erased ids (in batches)."""
    for start in range(0, len(ids), 50):
        chunk = [str(i) for i in ids[start:start + 50]]
        rows = list(await session.execute(select(RequestLogEntry.id, RequestLogEntry.path).where(
            RequestLogEntry.workspace_id == workspace_id,
            or_(*(RequestLogEntry.path.contains(i) for i in chunk)))))
        for row in rows:
            path = row.path
            for i in chunk:
                path = path.replace(i, ERASED)
            await session.execute(update(RequestLogEntry).where(RequestLogEntry.id == row.id).values(path=path))


async def get_thread(session, auth: AuthContext, thread_id: str) -> dict[str, Any]:
    """GET /threads/{id}: the Thread, plus its current run and queue length."""
    from heddle.loom.serializers import thread_dict

    auth.require_subject()
    thread = await q.visible_thread(session, auth, thread_id)
    latest = await session.scalar(select(Run).where(Run.thread_id == thread.id, Run.state != "queued")
                                  .order_by(Run.created_at.desc(), Run.id).limit(1))
    queued = await session.scalar(select(func.count()).select_from(QueuedMessage)
                                  .where(QueuedMessage.thread_id == thread.id))
    last = await session.scalar(select(func.max(Message.created_at)).where(Message.thread_id == thread.id))
    return {**thread_dict(thread), "latest_run": {"id": str(latest.id), "state": latest.state} if latest else None,
            "queued_messages": int(queued or 0), "last_message_at": iso(last)}


async def delete_thread(work: RunWork, auth: AuthContext, thread_id: str) -> dict[str, Any]:
    auth.require_subject()
    thread = await q.visible_thread(work.session, auth, thread_id)
    erased = await erase_threads(work, auth.workspace_id, [thread.id], "deleted")
    return {"id": str(thread.id), "deleted": True, "erased": erased.as_dict()}


async def delete_subject(work: RunWork, auth: AuthContext, subject: str) -> dict[str, Any]:
    """Erasure of a person: every thread of `subject` in the workspace. Relay key only."""
    if auth.mode != "relay":
        raise HeddleError("forbidden", "Erasing a subject needs the workspace key (relay), not a session token.")
    subject = canonical_subject(subject)
    if auth.subject is not None and auth.subject != subject:
        raise HeddleError("forbidden", "Service-Subject names another subject than the one to erase.")
    thread_ids = list(await work.session.scalars(select(Thread.id).where(
        Thread.workspace_id == auth.workspace_id, Thread.subject == subject)))
    erased = await erase_threads(work, auth.workspace_id, thread_ids, "subject_erased")
    return {"subject": subject, "deleted": True, "erased": erased.as_dict()}
