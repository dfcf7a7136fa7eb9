"""The tools of the caller's MCP servers (an agent file's `mcp:` entries), as a tool kind.

The protocol is outbound's (`heddle/outbound/mcp.py`: the official SDK over the guarded client,
signed, tool lists cached for `HEDDLE_MCP_TOOLS_TTL_SECONDS` and dropped on `list_changed`);
this adapter decides what it means for the run:

* **When the list is read.** At each model turn, for the run's subject (the server may show
  each user other tools), through that cache: a tool the server adds is offered from the next
  turn that misses the cache. Saving an agent reads no list (there is no user to ask for it);
  it checks only the names the file writes down (heddle/loom/agents.py).
* **Settings.** The agent file's `settings:` for a tool win; what they leave out the server's
  annotations decide (`settings_from_annotations`): destructive asks for approval first.
* **Fates.** `isError` goes back to the model as the call's failure; a call sent whose answer
  never came is `unknown`: on an `at_most_once` tool it waits in `awaiting_outcome` for
  POST /outcome, exactly like a hosted tool; a call refused before it left is failed.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from heddle.loom.attachments.for_mcp import with_mcp_content
from heddle.loom.attachments.for_tools import AttachmentNotFound
from heddle.loom.lease import Fence
from heddle.loom.models import Run, ToolCall
from heddle.loom.providers.base import ToolSpec
from heddle.loom.states import CALL_AWAITING_OUTCOME, CALL_FAILED, CALL_SUCCEEDED
from heddle.loom.tools import ToolsUnavailable
from heddle.loom.tools.base import ToolExecution, failed
from heddle.loom.tools.hosted import HostedTool, ToolHostAccess, subject_token
from heddle.loom.unit_of_work import RunUnitOfWork
from heddle.outbound.exchange import AttemptLog
from heddle.outbound.mcp import McpClient, McpUnavailable, settings_from_annotations
from heddle.outbound.mcp_limits import LIMIT_CODES
from heddle.outbound.mint import MintError
from heddle.workspaces.models import Connection, Workspace
from heddle.workspaces.service import resolve_connection


@dataclass(frozen=True, slots=True)
class McpServers:
    """What an MCP tool call needs: the hosted tools' services (database, subject tokens, the
    price of a call) and the process's one MCP client."""

    hosted: ToolHostAccess
    client: McpClient


class McpTool:
    """An `mcp: CONNECTION` entry expands into one entry per tool its server lists and allows:
    ``{"mcp", "connection_id", "name", "description", "parameters", "interaction", "risk",
    "reliability"}``. Those entries live for one model turn and are never stored."""

    kind = "mcp"

    def __init__(self, svc: McpServers, uow: RunUnitOfWork):
        self.svc = svc
        self.uow = uow

    def expands(self, tool: dict[str, Any]) -> bool:
        return "mcp" in tool and "name" not in tool

    def declares(self, tool: dict[str, Any]) -> str | None:
        return tool["name"] if "mcp" in tool and "name" in tool else None

    def spec(self, tool: dict[str, Any]) -> ToolSpec:
        return ToolSpec(name=tool["name"], description=tool["description"], parameters=tool["parameters"])

    def definition(self, tool: dict[str, Any]) -> dict[str, Any]:
        return {"kind": self.kind, **tool}

    @property
    def price_micro(self) -> int:  # what a started call costs (heddle/loom/charging.py)
        return self.svc.hosted.price_micro

    # A call started and not answered may have happened, as for a hosted tool.
    unknown_fate = HostedTool.unknown_fate
    stopped = HostedTool.stopped

    async def expand(self, run: Run, tool: dict[str, Any], index: int) -> list[dict[str, Any]]:
        connection, workspace = await self._connection(run, tool["mcp"])
        if connection is None:
            raise ToolsUnavailable(
                "tools_unavailable",
                f"tools.{index}.mcp: connection {tool['mcp']!r} no longer exists or is not of kind mcp.",
            )
        try:
            bearer = await subject_token(self.svc.hosted, run, workspace)
            listed = await self.svc.client.list_tools(
                connection.base_url,
                request_secret=workspace.request_secret,
                bearer=bearer,
                scope=_scope(connection, run),
            )
        except MintError as exc:
            raise ToolsUnavailable(
                "mint_failed", f"tools.{index}.mcp: no subject token for the MCP server: {exc.message}"
            ) from None
        except McpUnavailable as exc:
            # A bound is its own cause (mcp_too_many_pages, …); anything else is tools_unavailable
            # with the server's own words (its JSON-RPC error) when it gave some.
            code = exc.error["code"] if exc.error["code"] in LIMIT_CODES else "tools_unavailable"
            raise ToolsUnavailable(
                code, f"tools.{index}.mcp: could not list the tools of {connection.name!r}: {exc.error['message']}"
            ) from None
        wanted = tool.get("tools", "*")
        by_name = {t.name: t for t in listed}
        if wanted != "*" and (missing := [name for name in wanted if name not in by_name]):
            raise ToolsUnavailable(
                "tools_unavailable",
                f"tools.{index}.tools: {connection.name!r} lists no tool {', '.join(map(repr, missing))}.",
            )
        settings = tool.get("settings") or {}
        return [
            {
                "mcp": connection.name,
                "connection_id": connection.id,
                "name": t.name,
                "description": t.description or t.name,
                "parameters": t.input_schema,
                **settings_from_annotations(t.annotations, settings.get(t.name)),
            }
            for t in listed
            if wanted == "*" or t.name in wanted
        ]

    async def _connection(self, run: Run, ref: str | uuid.UUID | None) -> tuple[Connection | None, Workspace]:
        """The run's workspace and its MCP connection `ref` (a name, or a call's stored id)."""
        async with self.svc.hosted.db.session() as session:
            workspace = await session.get(Workspace, run.workspace_id)
            if ref is None:
                connection = None
            elif isinstance(ref, uuid.UUID):
                connection = await session.get(Connection, ref)
            else:
                connection = await resolve_connection(session, run.workspace_id, ref)
        if connection is None or connection.kind != "mcp" or connection.workspace_id != run.workspace_id:
            return None, workspace
        return connection, workspace

    async def execute(self, run: Run, call: ToolCall, definition: dict[str, Any], fence: Fence) -> ToolExecution:
        # The call names its connection from the turn that made it (`connection_id`).
        connection, workspace = await self._connection(run, call.connection_id)
        if connection is None:
            return failed("connection_required", f"Cannot call {call.name}: its MCP connection no longer exists.")
        try:
            bearer = await subject_token(self.svc.hosted, run, workspace)
        except MintError as exc:
            return failed(exc.code, f"Could not get a subject token from the workspace mint_url: {exc.message}")
        try:  # attachment ids become their content as MCP image/resource blocks (loom/attachments/for_mcp.py)
            args = await self._with_attachments(run, call, connection, workspace, bearer)
        except AttachmentNotFound as exc:
            return failed("attachment_not_found", f"Cannot call {call.name}: {exc}.")
        # The last write before the server is called (fenced, the call still pending): a crash
        # from here on leaves the call's fate known to be unknown (states.in_flight).
        async with self.uow.transaction(fence=fence) as work:
            await work.start_attempt(call.id)
        log = AttemptLog()
        entry, started = log.start()
        answer = await self.svc.client.call_tool(
            connection.base_url,
            call.name,
            args,
            request_secret=workspace.request_secret,
            bearer=bearer,
            scope=_scope(connection, run),
        )
        AttemptLog.finish(entry, started)
        entry["mcp_status"] = answer.status
        if answer.error:
            entry["error"] = answer.error
        common = {"attempts": log.entries, "cost_micro": self.svc.hosted.price_micro}
        if answer.status == "succeeded":
            status = CALL_AWAITING_OUTCOME if call.interaction == "confirm" else CALL_SUCCEEDED
            return ToolExecution(status=status, result=_result(answer.result), **common)
        if answer.status == "tool_error":  # the tool ran and said no: the model reads why
            return ToolExecution(
                status=CALL_FAILED, result={"error": {"code": "tool_error", "message": _text(answer.result)}}, **common
            )
        if answer.status == "unknown" and call.reliability == "at_most_once":
            return ToolExecution(
                status=CALL_AWAITING_OUTCOME,
                result={
                    "error": {
                        "code": "unknown_fate",
                        "message": "The call may or may not have happened; confirm its outcome.",
                        "cause": answer.error,
                    }
                },
                **common,
            )
        return ToolExecution(
            status=CALL_FAILED,
            result={"error": answer.error or {"code": "tool_failed", "message": "The MCP server refused the call."}},
            **common,
        )

    async def _with_attachments(self, run: Run, call: ToolCall, connection: Connection, workspace: Workspace,
                                bearer: str | None) -> dict[str, Any]:
        """The call's arguments, each attachment id (a parameter the server's input schema marks
        `"format": "heddle-attachment"`) replaced by its MCP content. The schema is the cached
        list's (the one `call_tool` checks the arguments against); no list, no replacement."""
        args = call.args or {}
        if not args:
            return args
        try:
            listed = await self.svc.client.list_tools(connection.base_url, request_secret=workspace.request_secret,
                                                      bearer=bearer, scope=_scope(connection, run))
        except McpUnavailable:
            return args  # call_tool meets the same failure and reports it
        schema = next((t.input_schema for t in listed if t.name == call.name), None)
        if not schema:
            return args
        async with self.svc.hosted.db.session() as session:
            return await with_mcp_content(session, run, schema, args)


def _scope(connection: Connection, run: Run) -> str:
    """Tool lists are cached per connection and subject: a server may list each user's own tools."""
    return f"{connection.id}:{run.subject}"


def _result(value: Any) -> dict[str, Any]:
    """A call's result is a JSON object: `structuredContent` as it is, anything else under `content`."""
    return value if isinstance(value, dict) else {"content": value}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else str(value)
