"""Runs whose agent names an MCP connection, against a real MCP server (the official SDK's) on loopback.

The server is tests/outbound/mcp_testkit.py's, behind `heddle.toolhost.ToolHostVerifier` with the
workspace's request secret and the caller's JWKS: every request it serves carried a valid
`Service-Signature` and a session token minted for the run's subject by the caller's mint.
"""

from __future__ import annotations

import pytest

from heddle.workspaces import service as ws_service
from mcp_runs.mcp_runs_kit import Billing, McpTestServer, Mint, connect
from support.toolhosts import AUDIENCE


@pytest.fixture
def billing(tenant):
    ws = tenant.run(lambda s: ws_service.get_workspace(s, tenant.workspace_id))
    mint = Mint(ws.request_secret, tenant.key_id).start()
    tenant.update(mint_url=f"{mint.base_url}/mint", jwks_json=mint.jwks)
    with McpTestServer(mint.jwks, request_secret=ws.request_secret, audience=AUDIENCE) as server:
        yield Billing(server, mint, connect(tenant, "billing", server.url))
    mint.stop()
