"""Hosted tool calls made by a run: pick the connection, get a subject token, sign and call.

The tool's declared `interaction` and `reliability` decide what the engine does next:
`auto` continues with the result, `confirm` waits in `awaiting_outcome` with the host's
`patch_ref`, and a call of unknown fate (`at_most_once` only) waits there for reconciliation.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import httpx
from sqlalchemy import select

from heddle.db.base import Database, utcnow
from heddle.loom.lease import Fence
from heddle.loom.models import Run, ToolCall
from heddle.loom.states import CALL_PENDING
from heddle.loom.tools import ToolExecution
from heddle.outbound.hosted_tools import call_hosted_tool
from heddle.outbound.mint import MintError, mint_subject_token
from heddle.outbound.token_cache import SubjectTokenCache
from heddle.timeutil import iso
from heddle.workspaces.models import Connection, Workspace
from heddle.workspaces.service import resolve_connection

SESSION_TOKEN_MARGIN = dt.timedelta(seconds=10)


@dataclass(frozen=True, slots=True)
class HostedTools:
    """What a hosted tool call needs: the database, the SSRF-guarded client, minted subject
    tokens and the price of one call."""

    db: Database
    outbound: httpx.AsyncClient
    subject_tokens: SubjectTokenCache
    price_micro: int


def _failed(code: str, message: str, connection_id=None) -> ToolExecution:
    return ToolExecution(status="failed", result={"error": {"code": code, "message": message}},
                         connection_id=connection_id)


async def _subject_token(svc: HostedTools, run: Run, workspace: Workspace) -> str:
    """Direct runs use the token that posted the message while it is valid; then (and in relay) mint."""
    if (run.auth_mode == "direct" and run.session_token and run.session_token_expires_at
            and run.session_token_expires_at - utcnow() > SESSION_TOKEN_MARGIN):
        return run.session_token

    async def mint():
        return await mint_subject_token(svc.outbound, mint_url=workspace.mint_url,
                                        request_secret=workspace.request_secret, subject=run.subject)

    return await svc.subject_tokens.get_token(workspace.id, run.subject, mint)


async def _mark_in_flight(svc: HostedTools, call_id, fence: Fence) -> None:
    """Persist that the call is about to be sent, so a crash leaves its fate known to be unknown.

    Fenced, and conditional on the call still being pending: this is the last write before the
    host is called, so a stale executor, or a call resolved meanwhile, stops here.
    """
    async with svc.db.transaction() as session:
        await fence.hold(session)
        call = await session.get(ToolCall, call_id)
        if call.status != CALL_PENDING:
            raise fence.stale(f"tool call {call_id} is already {call.status}")
        call.attempts = [*(call.attempts or []), {"n": len(call.attempts or []) + 1, "started_at": iso(utcnow()),
                                                  "in_flight": True}]


async def hosted_tool_call(svc: HostedTools, run: Run, call: ToolCall, definition: dict[str, Any],
                           fence: Fence) -> ToolExecution:
    async with svc.db.session() as session:
        workspace = await session.get(Workspace, run.workspace_id)
        pinned = definition.get("connection")
        if pinned:
            connection = await resolve_connection(session, run.workspace_id, pinned)
        elif run.connection_id:
            connection = await session.scalar(select(Connection).where(Connection.id == run.connection_id))
        else:
            connection = None
    if connection is None:
        what = f"pinned connection {pinned!r} no longer exists" if pinned else "no connection was named for this run"
        return _failed("connection_required", f"Cannot call {call.name}: {what}.")
    try:
        token = await _subject_token(svc, run, workspace)
    except MintError as exc:
        return _failed(exc.code, f"Could not get a subject token from the workspace mint_url: {exc.message}",
                       connection.id)
    payload = {"tool": call.name, "tool_call_id": str(call.id), "run_id": str(run.id),
               "thread_id": str(run.thread_id), "subject": run.subject, "args": call.args or {}}
    await _mark_in_flight(svc, call.id, fence)
    outcome = await call_hosted_tool(
        svc.outbound, base_url=connection.base_url, path=definition["path"],
        request_secret=workspace.request_secret, bearer_token=token, payload=payload,
        reliability=call.reliability, idempotency_key=str(call.id),
        before_retry=lambda: fence.check(svc.db))
    cost = svc.price_micro
    common = {"attempts": outcome.attempts, "connection_id": connection.id, "cost_micro": cost}
    if outcome.status == "succeeded":
        status = "awaiting_outcome" if call.interaction == "confirm" else "succeeded"
        return ToolExecution(status=status, result=outcome.result, patch_ref=outcome.patch_ref, **common)
    if outcome.status == "unknown":
        return ToolExecution(status="awaiting_outcome", result={"error": outcome.error or {
            "code": "unknown_fate", "message": "The call may or may not have happened; confirm its outcome."}},
            **common)
    error = outcome.error or {"code": "tool_failed", "message": "The tool host refused the call."}
    result = {"error": error, **({"response": outcome.result} if outcome.result else {})}
    return ToolExecution(status="failed", result=result, **common)
