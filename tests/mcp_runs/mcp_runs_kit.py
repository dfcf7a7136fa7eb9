"""The caller's side of an MCP connection for run tests: its mint, its server, the connection."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from starlette.requests import Request
from starlette.responses import JSONResponse

from heddle.workspaces import service as ws_service
from support.toolhosts import LoopbackToolHost

sys.path.insert(0, str(Path(__file__).parents[1] / "outbound"))  # mcp_testkit, outbound_testkit

from mcp_testkit import McpTestServer  # noqa: E402


class Mint(LoopbackToolHost):
    """The caller's mint endpoint: a session token for the subject Heddle names."""

    def __init__(self, request_secret: str, key_id: str):
        super().__init__(request_secret, key_id)
        self.mints = 0

    async def _handle(self, request: Request) -> JSONResponse:
        self.mints += 1
        subject = (await request.json())["subject"]
        return JSONResponse({"status": "success", "data": {"token": self.mint_token(subject), "expires_in": 120}})


@dataclass
class Billing:
    """A tenant's MCP server, registered as the connection `billing` (kind mcp)."""

    server: McpTestServer
    mint: Mint
    connection_id: str

    @property
    def seen(self):
        return self.server.seen


def connect(tenant, name: str, base_url: str, kind: str = "mcp") -> str:
    async def work(s):
        return str((await ws_service.create_connection(s, tenant.workspace_id, name, base_url, kind=kind)).id)

    return tenant.run(work)
