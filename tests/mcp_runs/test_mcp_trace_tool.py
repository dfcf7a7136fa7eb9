"""`get_run_trace` on Heddle's own /mcp, driven by the official SDK's client: an MCP tool call of a
run shows in its trace (kind, arguments, result, credits); another workspace's run is not found."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import httpx2
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from support.loom import open_thread, post, wait_run
from support.tenants import make_tenant

SERVER_SETTINGS = {"tool_call_price_credits": 0.5}


async def _calls(url: str, secret: str, *calls: tuple[str, dict[str, Any]]) -> tuple[list[str], list]:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {secret}"}) as http,
        streamable_http_client(f"{url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        names = [tool.name for tool in (await session.list_tools()).tools]
        return names, [await session.call_tool(name, args) for name, args in calls]


def test_get_run_trace_shows_the_mcp_call_and_stays_in_its_workspace(http, server, tenant, billing):
    agent_id = tenant.add_agent({"name": "banker", "model_class": "scripted", "tools": [{"mcp": "billing"}]})
    h = tenant.headers("web:alice")
    thread = open_thread(http, h, agent_id)
    run_id = post(http, h, thread, 'call: get_balance {"account": "A-9"}')["run_id"]
    assert wait_run(http, h, run_id, states=("closed", "failed"))["state"] == "closed"

    names, (trace, bad) = asyncio.run(
        _calls(server.base_url, tenant.secret, ("get_run_trace", {"run_id": run_id}), ("get_run_trace", {}))
    )
    assert {"identify", "get_run_trace"} <= set(names)
    assert not trace.is_error, trace
    data = trace.structured_content
    assert data["id"] == run_id and data["state"] == "closed"
    [call] = data["turns"][0]["tool_calls"]
    assert call["kind"] == "mcp" and call["name"] == "get_balance" and call["args"] == {"account": "A-9"}
    assert call["result"] == {"account": "A-9", "balance": 4200} and call["cost_credits"] == 0.5
    # The same trace as the HTTP API's.
    assert data == http.get(f"/v1/loom/runs/{run_id}/trace", headers=tenant.headers(None)).json()["data"]
    assert bad.is_error and bad.structured_content["error"]["code"] == "invalid_request"

    stranger = make_tenant(server)
    _, (theirs, nobody) = asyncio.run(
        _calls(
            server.base_url,
            stranger.secret,
            ("get_run_trace", {"run_id": run_id}),
            ("get_run_trace", {"run_id": str(uuid.uuid4())}),
        )
    )
    for result in (theirs, nobody):
        assert result.is_error and result.structured_content["error"]["code"] == "not_found"
    assert theirs.structured_content["error"]["message"] == nobody.structured_content["error"]["message"]
