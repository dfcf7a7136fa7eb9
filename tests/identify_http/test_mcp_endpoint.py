"""/mcp on a real `heddle serve` process, driven by the official MCP SDK's client.

`identify` answers with the same result as POST /v1/identify, is billed exactly once per
identified call (never for bad arguments), each request is in the request log, and a request
without a valid workspace key is refused with the API's 401 envelope.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from sqlalchemy import func, select

from heddle.billing.models import LedgerEntry
from heddle.db.base import Database
from heddle.observability.models import RequestLogEntry
from support.processes import serve_process
from support.server import LiveServer
from support.tenants import make_tenant

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    db_url = f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('mcp') / 'heddle.db'}"
    seed = LiveServer(database_url=db_url).start()  # also runs the migrations
    rich, broke = make_tenant(seed, credits=10), make_tenant(seed, credits=0)
    seed.stop()
    proc, base_url = serve_process(db_url)
    try:
        yield {"db_url": db_url, "url": base_url, "rich": rich, "broke": broke}
    finally:
        proc.terminate()
        proc.wait(10)


def _count(db_url: str, query) -> int:
    async def run():
        db = Database(db_url)
        try:
            async with db.session() as s:
                return await s.scalar(query)
        finally:
            await db.dispose()

    return asyncio.run(run())


def _charges(db_url: str, workspace_id: str) -> int:
    return _count(
        db_url,
        select(func.count())
        .select_from(LedgerEntry)
        .where(LedgerEntry.workspace_id == workspace_id, LedgerEntry.reason == "identify"),
    )


async def _session_call(url: str, secret: str, calls: list[tuple[str, dict[str, Any]]]) -> tuple[list, list]:
    headers = {"Authorization": f"Bearer {secret}"}
    async with (
        httpx2.AsyncClient(headers=headers) as http,
        streamable_http_client(f"{url}/mcp", http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        tools = (await session.list_tools()).tools
        results = [await session.call_tool(name, args) for name, args in calls]
    return tools, results


def test_identify_over_mcp_answers_like_the_api_and_is_billed_once(served):
    url, rich = served["url"], served["rich"]
    tools, (found, bad) = asyncio.run(
        _session_call(
            url,
            rich.secret,
            [
                ("identify", {"identifier": "DEUTDEFF"}),
                ("identify", {"identifier": "", "rail": "no-such-rail"}),
            ],
        )
    )
    assert [t.name for t in tools] == ["identify", "get_run_trace"]
    assert tools[0].input_schema["properties"]["identifier"]["type"] == "string"
    assert tools[0].annotations.read_only_hint is True
    assert not found.is_error and found.structured_content["result"] == "identified"
    assert _charges(served["db_url"], rich.workspace_id) == 1  # the bad call cost nothing
    # Bad arguments: a tool error carrying the API's own envelope, naming the fields.
    assert bad.is_error and bad.structured_content["error"]["code"] == "invalid_request"
    assert {d["field"] for d in bad.structured_content["error"]["details"]} == {"identifier", "rail"}
    # The same lookup over HTTP gives the same result (and is billed once more).
    via_http = httpx.post(
        f"{url}/v1/identify",
        json={"identifier": "DEUTDEFF"},
        headers={"Authorization": f"Bearer {rich.secret}"},
        timeout=10,
    ).json()["data"]
    over_mcp = dict(found.structured_content)
    assert over_mcp.pop("identified_at") and via_http.pop("identified_at")  # when each was looked up
    assert over_mcp == via_http
    assert _charges(served["db_url"], rich.workspace_id) == 2
    # Each MCP request (initialize, initialized, tools/list, two calls) is in the request log.
    query = (
        select(func.count())
        .select_from(RequestLogEntry)
        .where(RequestLogEntry.workspace_id == rich.workspace_id, RequestLogEntry.path == "/mcp")
    )
    deadline = time.monotonic() + 10
    while _count(served["db_url"], query) < 5 and time.monotonic() < deadline:
        time.sleep(0.2)  # the log is written in batches
    assert _count(served["db_url"], query) >= 5


def test_no_credits_is_a_tool_error_with_the_api_code(served):
    _, (result,) = asyncio.run(
        _session_call(served["url"], served["broke"].secret, [("identify", {"identifier": "DEUTDEFF"})])
    )
    assert result.is_error and result.structured_content["error"]["code"] == "insufficient_credits"
    assert _charges(served["db_url"], served["broke"].workspace_id) == 0


@pytest.mark.parametrize("authorization", [None, "Bearer sk_live_not_a_real_key_000000000000", "Basic abc"])
def test_without_a_valid_workspace_key_mcp_is_refused(served, authorization):
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if authorization:
        headers["Authorization"] = authorization
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    response = httpx.post(f"{served['url']}/mcp", json=body, headers=headers, timeout=10)
    assert response.status_code == 401
    assert response.json()["status"] == "error" and response.json()["error"]["code"] == "unauthorized"


def test_the_sdk_client_with_a_bad_key_gets_no_tools(served):
    with pytest.raises(Exception):  # noqa: B017 - the SDK surfaces the 401 as its own error type
        asyncio.run(_session_call(served["url"], "sk_live_not_a_real_key_000000000000", []))


def test_malformed_and_oversized_bodies_are_refused(served):
    headers = {
        "Authorization": f"Bearer {served['rich'].secret}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    malformed = httpx.post(f"{served['url']}/mcp", content=b'{"jsonrpc": "2.0", "id": 1,', headers=headers, timeout=10)
    assert malformed.status_code == 400
    assert malformed.json()["error"]["code"] == -32700  # JSON-RPC parse error, from the SDK
    oversized = httpx.post(
        f"{served['url']}/mcp", content=b'{"x": "' + b"a" * (8 << 20) + b'"}', headers=headers, timeout=30
    )
    assert oversized.status_code == 413
    assert oversized.json()["error"]["code"] == "payload_too_large"  # the API's own limit, before the SDK
