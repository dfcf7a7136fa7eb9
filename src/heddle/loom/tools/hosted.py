"""Hosted tools (a tool on the caller's backend): pick the connection, get a subject token, sign and call.

The signed HTTP call itself is outbound's (heddle/outbound/hosted_tools.py, mint.py); this
adapter decides what it means for the run. The tool's declared `interaction` and `reliability`
decide what the engine does next: `auto` continues with the result, `confirm` waits in
`awaiting_outcome` with the host's `patch_ref`, and a call of unknown fate (`at_most_once`
only) waits there for reconciliation.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import httpx
from sqlalchemy import select

from heddle.db.base import Database, utcnow
from heddle.loom.attachments.for_tools import AttachmentNotFound, with_signed_urls
from heddle.loom.lease import Fence
from heddle.loom.models import Run, ToolCall
from heddle.loom.providers.base import ToolSpec
from heddle.loom.states import CALL_AWAITING_OUTCOME, CALL_FAILED, CALL_SUCCEEDED
from heddle.loom.tools.base import ToolExecution, failed
from heddle.loom.unit_of_work import RunUnitOfWork
from heddle.outbound.hosted_tools import call_hosted_tool
from heddle.outbound.mint import MintError, mint_subject_token
from heddle.outbound.token_cache import SubjectTokenCache
from heddle.workspaces.models import Connection, Workspace
from heddle.workspaces.service import resolve_connection

SESSION_TOKEN_MARGIN = dt.timedelta(seconds=10)


@dataclass(frozen=True, slots=True)
class ToolHostAccess:
    """What reaching the caller's tool hosts needs (hosted tools and MCP servers alike): the
    database, the SSRF-guarded client, minted subject tokens and the price of one call. (Named
    apart from `HostedTool`, the tool kind, which it serves.)"""

    db: Database
    outbound: httpx.AsyncClient
    subject_tokens: SubjectTokenCache
    price_micro: int
    # Attachment parameters (loom/attachments/for_tools.py): where hosts fetch the signed URLs
    # from (this server's public URL), and how long a URL lives.
    public_url: str = "http://127.0.0.1:8080"
    attachment_url_seconds: float = 300.0


async def subject_token(svc: ToolHostAccess, run: Run, workspace: Workspace) -> str:
    """The subject's session token for the caller's servers (hosted tools, MCP servers): direct
    runs use the token that posted the message while it is valid; then (and in relay) mint."""
    if (run.auth_mode == "direct" and run.session_token and run.session_token_expires_at
            and run.session_token_expires_at - utcnow() > SESSION_TOKEN_MARGIN):
        return run.session_token

    async def mint():
        return await mint_subject_token(svc.outbound, mint_url=workspace.mint_url,
                                        request_secret=workspace.request_secret, subject=run.subject)

    return await svc.subject_tokens.get_token(workspace.id, run.subject, mint)


class HostedTool:
    """A tool entry with `name`, `description`, `parameters` and `path`, called on a connection."""

    kind = "hosted"

    def __init__(self, svc: ToolHostAccess, uow: RunUnitOfWork):
        self.svc = svc
        self.uow = uow

    def declares(self, tool: dict[str, Any]) -> str | None:
        return None if "builtin" in tool else tool.get("name")

    def spec(self, tool: dict[str, Any]) -> ToolSpec:
        return ToolSpec(name=tool["name"], description=tool["description"], parameters=tool["parameters"])

    def definition(self, tool: dict[str, Any]) -> dict[str, Any]:
        return {"kind": self.kind, **tool}

    @property
    def price_micro(self) -> int:  # what a started call costs (heddle/loom/charging.py)
        return self.svc.price_micro

    def unknown_fate(self, call: ToolCall) -> bool:
        # An at_most_once call is never sent twice: one that was started may have happened.
        return bool(call.attempts) and call.reliability == "at_most_once"

    def stopped(self, call: ToolCall) -> dict[str, Any] | None:
        return {"error": {"code": "cancelled",
                          "message": "The run was cancelled between attempts; the call was not retried."}}

    async def execute(self, run: Run, call: ToolCall, definition: dict[str, Any], fence: Fence) -> ToolExecution:
        return await _call(self.svc, self.uow, run, call, definition, fence)


async def _call(svc: ToolHostAccess, uow: RunUnitOfWork, run: Run, call: ToolCall, definition: dict[str, Any],
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
        return failed("connection_required", f"Cannot call {call.name}: {what}.")
    try:
        token = await subject_token(svc, run, workspace)
    except MintError as exc:
        return failed(exc.code, f"Could not get a subject token from the workspace mint_url: {exc.message}",
                       connection.id)
    try:  # attachment ids become their metadata and a signed URL (never the bytes)
        async with svc.db.session() as session:
            args = await with_signed_urls(session, run, definition.get("parameters") or {}, call.args or {},
                                          secret=workspace.request_secret, base_url=svc.public_url,
                                          ttl=svc.attachment_url_seconds)
    except AttachmentNotFound as exc:
        return failed("attachment_not_found", f"Cannot call {call.name}: {exc}.", connection.id)
    payload = {"tool": call.name, "tool_call_id": str(call.id), "run_id": str(run.id),
               "thread_id": str(run.thread_id), "subject": run.subject, "args": args}
    # The last write before the host is called (fenced, the call still pending): a crash from
    # here on leaves the call's fate known to be unknown (states.in_flight).
    async with uow.transaction(fence=fence) as work:
        await work.start_attempt(call.id)
    outcome = await call_hosted_tool(
        svc.outbound, base_url=connection.base_url, path=definition["path"],
        request_secret=workspace.request_secret, bearer_token=token, payload=payload,
        reliability=call.reliability, idempotency_key=str(call.id),
        before_retry=lambda: fence.check(svc.db))
    cost = svc.price_micro
    common = {"attempts": outcome.attempts, "connection_id": connection.id, "cost_micro": cost}
    if outcome.status == "succeeded":
        status = CALL_AWAITING_OUTCOME if call.interaction == "confirm" else CALL_SUCCEEDED
        return ToolExecution(status=status, result=outcome.result, patch_ref=outcome.patch_ref, **common)
    if outcome.status == "unknown":
        return ToolExecution(status=CALL_AWAITING_OUTCOME, result={"error": outcome.error or {
            "code": "unknown_fate", "message": "The call may or may not have happened; confirm its outcome."}},
            **common)
    error = outcome.error or {"code": "tool_failed", "message": "The tool host refused the call."}
    result = {"error": error, **({"response": outcome.result} if outcome.result else {})}
    return ToolExecution(status=CALL_FAILED, result=result, **common)
