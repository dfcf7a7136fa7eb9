"""An MCP tool call in the console (real Chromium, a real server, a real MCP server on loopback):
shown like any other call, with its kind, arguments, result, approval and credits."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from urllib.parse import urlparse

from typer.testing import CliRunner

from heddle.cli.main import app
from heddle.workspaces import service as ws_service
from support.loom import open_thread, post, wait_run
from support.server import LiveServer
from support.tenants import make_tenant
from support.toolhosts import AUDIENCE

sys.path.insert(0, str(Path(__file__).parents[2]))  # mcp_runs, beside this package
from mcp_runs.mcp_runs_kit import McpTestServer, Mint, connect  # noqa: E402


def test_an_mcp_call_shows_in_the_trace_and_the_agent_page(tmp_path, built_web, run_browser):
    db = f"sqlite+aiosqlite:///{tmp_path}/console.db"
    server = LiveServer(database_url=db, tool_call_price_credits=0.5).start()
    mint = None
    try:
        tenant = make_tenant(server)
        ws = tenant.run(lambda s: ws_service.get_workspace(s, tenant.workspace_id))
        mint = Mint(ws.request_secret, tenant.key_id).start()
        tenant.update(mint_url=f"{mint.base_url}/mint", jwks_json=mint.jwks)
        with McpTestServer(mint.jwks, request_secret=ws.request_secret, audience=AUDIENCE) as mcp:
            connect(tenant, "billing", mcp.url)
            agent = tenant.add_agent(
                {
                    "name": "Treasurer",
                    "model_class": "scripted",
                    "tools": [{"mcp": "billing", "settings": {"get_balance": {"risk": "medium"}}}],
                }
            )
            with server.client() as http:
                h = tenant.headers("web:alice")
                run_id = post(http, h, open_thread(http, h, agent), 'call: send_transfer {"amount": 7, "to": "B-2"}')[
                    "run_id"
                ]
                [pending] = wait_run(http, h, run_id)["pending"]["tool_calls"]
                http.post(
                    f"/v1/loom/runs/{run_id}/approval",
                    headers=h,
                    json={"tool_call_id": pending["id"], "approved": True, "reason": "as asked"},
                )
                assert wait_run(http, h, run_id, states=("closed", "failed"))["state"] == "closed"
        result = CliRunner().invoke(
            app, ["operator", "create", "--email", "ops@example.com", "--database-url", db, "--json"]
        )
        operator = json.loads(result.stdout.strip().splitlines()[-1])
        report = run_browser(
            "console/mcp_call.mjs",
            env={
                "HEDDLE_URL": server.base_url,
                "LOGIN_PATH": urlparse(operator["login_url"]).path,
                "WS": tenant.workspace_id,
                "RUN_ID": run_id,
                "AGENT_ID": agent,
            },
        )
    finally:
        server.stop()
        if mint:
            mint.stop()
    assert not [e for e in report["console_errors"] if not e.startswith("console: Failed to load resource")]
    call = report["call"]
    assert call["kind"] == "MCP" and "send_transfer" in call["head"] and "succeeded" in call["head"]
    assert "approve" in call["head"] and "high risk" in call["head"] and "0.5" in call["head"]
    assert "B-2" in call["text"] and "tr_1" in call["text"] and "approved by web:alice" in call["text"]
    tools = report["agent_tools"]
    assert "billing" in tools and "MCP server" in tools and "every tool the server lists" in tools
    assert "get_balance" in tools and "risk: medium" in tools
