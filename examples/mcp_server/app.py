"""The example MCP server: two payment tools behind Heddle's request verification.

Every HTTP request Heddle makes to an MCP server (the JSON-RPC POSTs, the event-stream GET,
the closing DELETE) carries `Service-Signature` (Heddle, with your workspace's request secret)
and `Authorization: Bearer <session token>` (the user, minted by your backend or posted by the
browser). `ToolHostVerifier` checks both before the MCP server sees the request, and hands the
token's claims on; a tool reads the user from them.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from examples.toolhost.config import ToolHostConfig
from mcp import types
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.routing import Mount

from heddle.toolhost import ReplayCache, ToolHostVerifier

BALANCES = {"ACC-1": 1250.0, "ACC-2": 80.5}


def _user(ctx: Context) -> str:
    """The verified subject (`sub` of the session token) of the request being served."""
    request = ctx.request_context.request
    claims = getattr(getattr(request, "state", None), "toolhost_claims", None) or {}
    if not claims.get("sub"):
        raise ToolError("no verified user on this request")
    return claims["sub"]


def build_server() -> MCPServer:
    server = MCPServer("acme-payments", instructions="Balances and transfers of the signed-in user.")

    # Read-only and idempotent: Heddle calls it without asking and may retry it.
    @server.tool(annotations=types.ToolAnnotations(read_only_hint=True, idempotent_hint=True))
    def get_balance(account: str, ctx: Context) -> dict[str, Any]:
        """The balance of one of the user's accounts."""
        if account not in BALANCES:
            raise ToolError(f"unknown account {account}")  # isError: the model reads it
        return {"account": account, "balance": BALANCES[account], "user": _user(ctx)}

    # Destructive: Heddle asks a person to approve each call (unless the agent file says
    # otherwise), and, not idempotent, it is called at most once.
    @server.tool(annotations=types.ToolAnnotations(destructive_hint=True, idempotent_hint=False))
    def send_transfer(account: str, amount: float, beneficiary: str, ctx: Context) -> dict[str, Any]:
        """Send money from one of the user's accounts to a beneficiary."""
        if amount <= 0 or account not in BALANCES or BALANCES[account] < amount:
            raise ToolError("the transfer was refused: unknown account or insufficient funds")
        BALANCES[account] -= amount
        return {
            "account": account,
            "amount": amount,
            "beneficiary": beneficiary,
            "user": _user(ctx),
            "balance": BALANCES[account],
        }

    return server


def create_app(config: ToolHostConfig) -> Any:
    """The ASGI app: the MCP endpoint at /mcp, every request verified first."""
    server = build_server()
    # Behind a proxy on your own domain: Heddle is not a browser, so no Host/Origin allow-list.
    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    mcp_app = server.streamable_http_app(transport_security=security)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with server.session_manager.run():  # the SDK's sessions live for the app's lifetime
            yield

    app = Starlette(routes=[Mount("/", app=mcp_app)], lifespan=lifespan)
    return ToolHostVerifier(
        app,
        request_secret=config.request_secret,
        audience=config.audience,
        jwks=config.jwks,
        issuer=config.issuer,
        replay_cache=ReplayCache(),
    )
