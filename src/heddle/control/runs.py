"""Runs, threads and the request log as operators read them (every subject of a workspace).

Traces come from the same code as `GET /v1/loom/runs/{id}/trace` (heddle.loom.views), read
as a workspace-wide relay caller without a subject, which sees every run of the workspace.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from heddle.auth.context import AuthContext, WorkspaceInfo
from heddle.control.errors import invalid, not_found
from heddle.control.workspaces import workspace
from heddle.loom import views as loom_views
from heddle.loom.memory import memory_dict
from heddle.loom.memory_models import Memory, ThreadSummary
from heddle.loom.models import Agent, Message, Run, RunEventRow, Thread, ToolCall
from heddle.loom.serializers import message_dict, thread_dict
from heddle.money import to_credits
from heddle.observability.models import RequestLogEntry
from heddle.timeutil import iso
from heddle.workspaces.models import Workspace

RUN_REQUESTS_CAP = 200
RUN_EVENTS_CAP = 1000
RUN_MESSAGES_CAP = 200
THREAD_MESSAGES_CAP = 1000


def run_item(run: Run) -> dict[str, Any]:
    return {"id": str(run.id), "thread_id": str(run.thread_id), "agent_id": run.agent_id,
            "agent_version": run.agent_version, "subject": run.subject, "state": run.state, "origin": run.origin,
            "cost_credits": to_credits(run.cost_micro), "turn_count": run.turn_count,
            "error_code": run.error_code, "opened_at": iso(run.opened_at), "closed_at": iso(run.closed_at),
            "created_at": iso(run.created_at), "updated_at": iso(run.updated_at)}


def request_item(e: RequestLogEntry) -> dict[str, Any]:
    return {"id": e.id, "request_id": e.request_id, "method": e.method, "path": e.path, "status": e.status,
            "latency_ms": e.latency_ms, "key_id": e.key_id, "auth_mode": e.auth_mode,
            "run_id": str(e.run_id) if e.run_id else None, "created_at": iso(e.created_at)}


def _encode(*parts: object) -> str:
    raw = json.dumps([p.isoformat() if isinstance(p, dt.datetime) else str(p) for p in parts])
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _decode(cursor: str, n: int) -> list[str]:
    try:
        parts = json.loads(base64.urlsafe_b64decode((cursor + "=" * (-len(cursor) % 4)).encode()))
    except (ValueError, UnicodeDecodeError):
        parts = None
    if not isinstance(parts, list) or len(parts) != n or not all(isinstance(p, str) for p in parts):
        raise _bad_cursor()
    return parts


def _time_and_id(cursor: str) -> tuple[dt.datetime, uuid.UUID]:
    """A (created_at, id) cursor of a newest-first list (runs, threads)."""
    created, row_id = _decode(cursor, 2)
    try:
        return dt.datetime.fromisoformat(created), uuid.UUID(row_id)
    except ValueError:
        raise _bad_cursor() from None


def _bad_cursor():
    return invalid("cursor", "cursor: not a cursor returned by this API")


@dataclass
class RunFilter:
    state: str | None = None
    agent: str | None = None
    subject: str | None = None
    since: dt.datetime | None = None  # created at or after
    until: dt.datetime | None = None  # created before
    updated_after: dt.datetime | None = None  # changed since (the runs page polls with it)
    error_code: str | None = None  # failed runs with this code (the overview's links)
    origin: str | None = None  # what started them (runs.origin): api, playground, eval …
    limit: int = 50
    cursor: str | None = None


async def list_runs(session: AsyncSession, workspace_id: str, f: RunFilter) -> dict[str, Any]:
    """Newest first (created_at, then id); `next_cursor` continues the list."""
    ws = await workspace(session, workspace_id)
    query = select(Run).where(Run.workspace_id == ws.id)
    if f.state:
        query = query.where(Run.state == f.state)
    if f.agent:
        query = query.where(Run.agent_id == f.agent)
    if f.subject:
        query = query.where(Run.subject == f.subject)
    if f.error_code:
        query = query.where(Run.error_code == f.error_code)
    if f.origin:
        query = query.where(Run.origin == f.origin)
    if f.since:
        query = query.where(Run.created_at >= f.since)
    if f.until:
        query = query.where(Run.created_at < f.until)
    if f.updated_after:
        query = query.where(Run.updated_at > f.updated_after)
    if f.cursor:
        created_at, last_id = _time_and_id(f.cursor)
        query = query.where(or_(Run.created_at < created_at, and_(Run.created_at == created_at, Run.id < last_id)))
    rows = list(await session.scalars(query.order_by(Run.created_at.desc(), Run.id.desc()).limit(f.limit + 1)))
    cursor = None
    if len(rows) > f.limit:
        rows = rows[:f.limit]
        cursor = _encode(rows[-1].created_at, rows[-1].id)
    return {"items": [run_item(r) for r in rows], "next_cursor": cursor}


def _reader(ws: Workspace) -> AuthContext:
    """A workspace-wide reader: relay mode with no subject sees every run (heddle.loom.queries)."""
    info = WorkspaceInfo(id=ws.id, name=ws.name, allowed_origins=tuple(ws.allowed_origins or ()),
                         realtime_enabled=ws.realtime_enabled, request_secret="", mint_url=ws.mint_url)
    return AuthContext(mode="relay", workspace=info, key_id="console")


def _uuid(value: str, what: str) -> uuid.UUID:
    try:
        return uuid.UUID(value)
    except ValueError:
        raise not_found(what, value) from None


async def run_detail(session: AsyncSession, workspace_id: str, run_id: str) -> dict[str, Any]:
    """The run, its trace exactly as /v1 gives it, the request-log entries attributed to it, its
    state changes, tool attempts and messages."""
    ws = await workspace(session, workspace_id)
    run = await session.get(Run, _uuid(run_id, "run"))
    if run is None or run.workspace_id != ws.id:
        raise not_found("run", run_id)
    trace = await loom_views.get_trace(session, _reader(ws), str(run.id))
    requests = await session.scalars(select(RequestLogEntry).where(RequestLogEntry.run_id == run.id)
                                     .order_by(RequestLogEntry.id.desc()).limit(RUN_REQUESTS_CAP))
    agent = await session.get(Agent, run.agent_id)
    return {"run": run_item(run), "trace": trace, "requests": [request_item(e) for e in requests],
            # The agent by name: an operator knows "Payments helper", not agent_3kq9….
            "agent": {"id": run.agent_id, "name": agent.name if agent else None, "version": run.agent_version},
            "state_changes": await _state_changes(session, run.id),
            "tool_attempts": await _tool_attempts(session, run.id),
            # The run's own messages, oldest first: what the user wrote heads its timeline.
            "messages": [message_dict(m) for m in await session.scalars(
                select(Message).where(Message.run_id == run.id).order_by(Message.seq).limit(RUN_MESSAGES_CAP))]}


async def _tool_attempts(session: AsyncSession, run_id: uuid.UUID) -> dict[str, list[dict[str, Any]]]:
    """Each hosted tool call's HTTP attempts (n, started_at, duration_ms, http_status or error),
    by tool call id: the /v1 ToolCall does not carry them, an operator debugging a tool host needs them."""
    rows = await session.execute(select(ToolCall.id, ToolCall.attempts).where(ToolCall.run_id == run_id))
    return {str(call_id): list(attempts) for call_id, attempts in rows if attempts}


async def _state_changes(session: AsyncSession, run_id: uuid.UUID) -> list[dict[str, Any]]:
    """Each state the run entered, when (its stored `run.updated` events, repeats folded)."""
    rows = await session.execute(select(RunEventRow.seq, RunEventRow.data, RunEventRow.created_at)
                                 .where(RunEventRow.run_id == run_id, RunEventRow.event == "run.updated")
                                 .order_by(RunEventRow.seq).limit(RUN_EVENTS_CAP))
    changes: list[dict[str, Any]] = []
    for seq, data, at in rows:
        state = (data or {}).get("state")
        if state and (not changes or changes[-1]["state"] != state):
            changes.append({"state": state, "at": iso(at), "seq": seq})
    return changes


async def thread_detail(session: AsyncSession, workspace_id: str, thread_id: str) -> dict[str, Any]:
    ws = await workspace(session, workspace_id)
    thread = await session.get(Thread, _uuid(thread_id, "thread"))
    if thread is None or thread.workspace_id != ws.id:
        raise not_found("thread", thread_id)
    messages = await session.scalars(select(Message).where(Message.thread_id == thread.id)
                                     .order_by(Message.seq).limit(THREAD_MESSAGES_CAP))
    runs = await session.scalars(select(Run).where(Run.thread_id == thread.id)
                                 .order_by(Run.created_at.desc(), Run.id.desc()))
    agent = await session.get(Agent, thread.agent_id)
    return {"thread": thread_dict(thread), "messages": [message_dict(m) for m in messages],
            "runs": [run_item(r) for r in runs],
            "agent": {"id": thread.agent_id, "name": agent.name if agent else None},
            **await memory_of(session, ws.id, thread)}


async def memory_of(session: AsyncSession, workspace_id: str, thread: Thread) -> dict[str, Any]:
    """The thread's summaries (newest first) and the facts agents remember about its subject."""
    summaries = await session.scalars(select(ThreadSummary).where(ThreadSummary.thread_id == thread.id)
                                      .order_by(ThreadSummary.through_seq.desc()).limit(20))
    facts = await session.scalars(select(Memory).where(Memory.workspace_id == workspace_id,
                                                       Memory.subject == thread.subject)
                                  .order_by(Memory.created_at.desc(), Memory.id).limit(200))
    return {"summaries": [{"id": str(x.id), "through_seq": x.through_seq, "messages": x.messages,
                           "content": x.content, "model_class": x.model_class,
                           "run_id": str(x.run_id) if x.run_id else None, "created_at": iso(x.created_at)}
                          for x in summaries],
            "memories": [memory_dict(m) for m in facts]}


@dataclass
class ThreadFilter:
    agent: str | None = None
    subject: str | None = None
    limit: int = 50
    cursor: str | None = None


async def list_threads(session: AsyncSession, workspace_id: str, f: ThreadFilter) -> dict[str, Any]:
    """The workspace's threads, newest first, each with its agent's name and its latest run."""
    ws = await workspace(session, workspace_id)
    query = select(Thread, Agent.name).join(Agent, Agent.id == Thread.agent_id).where(Thread.workspace_id == ws.id)
    if f.agent:
        query = query.where(Thread.agent_id == f.agent)
    if f.subject:
        query = query.where(Thread.subject == f.subject)
    if f.cursor:
        created_at, last_id = _time_and_id(f.cursor)
        query = query.where(or_(Thread.created_at < created_at,
                                and_(Thread.created_at == created_at, Thread.id < last_id)))
    rows = list(await session.execute(query.order_by(Thread.created_at.desc(), Thread.id.desc()).limit(f.limit + 1)))
    cursor = None
    if len(rows) > f.limit:
        rows = rows[:f.limit]
        cursor = _encode(rows[-1][0].created_at, rows[-1][0].id)
    latest: dict[uuid.UUID, Run] = {}
    if rows:  # one query for the page's latest runs, not one per thread
        runs = await session.scalars(select(Run).where(Run.thread_id.in_([t.id for t, _ in rows]))
                                     .order_by(Run.created_at.desc(), Run.id.desc()))
        for run in runs:
            latest.setdefault(run.thread_id, run)
    items = [{**thread_dict(t), "agent_name": name,
              "latest_run": run_item(latest[t.id]) if t.id in latest else None} for t, name in rows]
    return {"items": items, "next_cursor": cursor}


@dataclass
class RequestFilter:
    status: int | None = None
    path: str | None = None  # a prefix of the path
    since: dt.datetime | None = None
    limit: int = 50
    cursor: str | None = None


async def list_requests(session: AsyncSession, workspace_id: str, f: RequestFilter) -> dict[str, Any]:
    """The workspace's request log, newest first; the cursor is the last entry's id."""
    ws = await workspace(session, workspace_id)
    query = select(RequestLogEntry).where(RequestLogEntry.workspace_id == ws.id)
    if f.status is not None:
        query = query.where(RequestLogEntry.status == f.status)
    if f.path:
        escaped = f.path.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        query = query.where(RequestLogEntry.path.like(f"{escaped}%", escape="\\"))
    if f.since:
        query = query.where(RequestLogEntry.created_at >= f.since)
    if f.cursor:
        (last,) = _decode(f.cursor, 1)
        if not last.isdigit():
            raise _bad_cursor()
        query = query.where(RequestLogEntry.id < int(last))
    rows = list(await session.scalars(query.order_by(RequestLogEntry.id.desc()).limit(f.limit + 1)))
    cursor = None
    if len(rows) > f.limit:
        rows = rows[:f.limit]
        cursor = _encode(rows[-1].id)
    return {"items": [request_item(e) for e in rows], "next_cursor": cursor}
