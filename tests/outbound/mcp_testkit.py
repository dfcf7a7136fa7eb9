"""A real MCP server (the official SDK's MCPServer, formerly FastMCP) on a loopback address.

It sits behind `heddle.toolhost.ToolHostVerifier`, as a caller's server would: every HTTP
request must carry a valid `Service-Signature` and the subject's session token, and what the
tools see of the caller is recorded. Its tools/list is paged two tools at a time, one tool
adds another and says so (`notifications/tools/list_changed`), and calling `drop_line`
drops the connection after the request was read and the response begun.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field
from typing import Any

import anyio
from mcp import types
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from outbound_testkit import AUDIENCE, REQUEST_SECRET, ServerThread

from heddle.toolhost import ReplayCache, ToolHostVerifier

PAGE_SIZE = 2


@dataclass
class Seen:
    """What the server saw: every verified HTTP request (method, JSON-RPC method, subject)."""

    requests: list[tuple[str, str | None, str | None]] = field(default_factory=list)
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def rpc(self, method: str) -> list[tuple[str, str | None, str | None]]:
        return [r for r in self.requests if r[1] == method]


class PagedServer(MCPServer):
    """tools/list in pages of PAGE_SIZE; the cursor is the next index."""

    async def _handle_list_tools(self, ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        tools = await self.list_tools()
        start = int(params.cursor) if params and params.cursor else 0
        end = start + PAGE_SIZE
        return types.ListToolsResult(tools=tools[start:end], next_cursor=str(end) if end < len(tools) else None)


def build_server(seen: Seen) -> MCPServer:
    server = PagedServer("billing")

    @server.tool(annotations=types.ToolAnnotations(read_only_hint=True, idempotent_hint=True))
    def get_balance(account: str) -> dict[str, Any]:
        """The balance of an account."""
        seen.calls.append(("get_balance", {"account": account}))
        return {"account": account, "balance": 4200}

    @server.tool(annotations=types.ToolAnnotations(destructive_hint=True))
    def send_transfer(amount: int, to: str) -> dict[str, Any]:
        """Send money to a beneficiary."""
        seen.calls.append(("send_transfer", {"amount": amount, "to": to}))
        return {"transfer_id": "tr_1", "amount": amount}

    @server.tool()
    def close_account(account: str) -> str:
        """Always refuses: the tool's own error, for the model to read."""
        seen.calls.append(("close_account", {"account": account}))
        raise ToolError(f"account {account} has a balance and cannot be closed")

    @server.tool()
    def drop_line(note: str) -> str:
        """Never answers: the server drops the connection (see _DroppingSse)."""
        seen.calls.append(("drop_line", {"note": note}))
        return "unreachable"

    @server.tool()
    async def slow_report(seconds: float) -> str:
        """Answers after ``seconds``: longer than the client's deadline, it is never heard."""
        seen.calls.append(("slow_report", {"seconds": seconds}))
        await anyio.sleep(seconds)
        return "late"

    @server.tool()
    async def open_savings(ctx: Context) -> str:
        """Adds the tool `savings_rate` and tells the client its tool list changed."""
        seen.calls.append(("open_savings", {}))
        if "savings_rate" not in {t.name for t in await server.list_tools()}:
            server.add_tool(lambda: {"rate": 0.031}, name="savings_rate", description="Today's savings rate.")
        await ctx.session.send_notification(types.ToolListChangedNotification(), related_request_id=ctx.request_id)
        return "opened"

    return server


def _replay(body: bytes, receive: Any) -> Any:
    """The body already read, then the client's own messages (its disconnect, when it goes)."""
    sent = False

    async def replay() -> dict:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay


class McpTestServer(ServerThread):
    """The server in a uvicorn thread, with its lifespan (the SDK's session manager runs there)."""

    def __init__(
        self,
        jwks: dict[str, Any],
        host: str = "127.0.0.2",
        *,
        request_secret: str = REQUEST_SECRET,
        audience: str = AUDIENCE,
    ):
        self.seen = Seen()
        self.mcp = build_server(self.seen)
        security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
        inner = self.mcp.streamable_http_app(transport_security=security)
        app = ToolHostVerifier(
            _Recording(_DroppingSse(inner), self.seen),
            request_secret=request_secret,
            audience=audience,
            jwks=jwks,
            replay_cache=ReplayCache(),
        )
        super().__init__(app, host=host, lifespan="on", log_level="critical")
        self.url = f"{self.url}/mcp"


class _Recording:
    """Notes each verified request (its JSON-RPC method and the token's subject)."""

    def __init__(self, app: Any, seen: Seen):
        self.app, self.seen = app, seen

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        method = None
        with contextlib.suppress(ValueError, AttributeError):
            method = json.loads(body).get("method")
        claims = scope.get("state", {}).get("toolhost_claims") or {}
        self.seen.requests.append((scope["method"], method, claims.get("sub")))
        await self.app(scope, _replay(body, receive), send)


class _DroppingSse:
    """For a `tools/call` of drop_line: pass the response head on, then cut the connection
    before any event, as a crashed server or a broken proxy would."""

    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            return await self.app(scope, receive, send)
        first = await receive()
        body = first.get("body", b"")
        doc: Any = {}
        with contextlib.suppress(ValueError):
            doc = json.loads(body)
        dropping = (
            isinstance(doc, dict)
            and doc.get("method") == "tools/call"
            and (doc.get("params") or {}).get("name") == "drop_line"
        )

        async def cut(message: dict) -> None:
            if message["type"] == "http.response.body" and message.get("body"):
                raise ConnectionAbortedError("the line drops before the answer")
            await send(message)

        await self.app(scope, _replay(body, receive), cut if dropping else send)
