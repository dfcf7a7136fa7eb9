"""The example MCP server (examples/mcp_server) end to end with Heddle's MCP client: the user
the tool sees is the verified token's subject, annotations map to Heddle's settings, and an
unsigned request never reaches a tool."""

from __future__ import annotations

import json

import httpx
import pytest
from examples.mcp_server import app as example
from examples.mcp_server.__main__ import main as example_main
from examples.toolhost.config import ToolHostConfig
from outbound_testkit import ServerThread, only_127_0_0_2

from heddle.outbound import build_outbound_client
from heddle.outbound.mcp import McpClient, settings_from_annotations

SECRET = "whsec_example_mcp_secret"
AUDIENCE = "payments-api"


@pytest.fixture(scope="module")
def server(signer):
    config = ToolHostConfig(request_secret=SECRET, audience=AUDIENCE, jwks=signer.jwks)
    # lifespan on: the SDK's session manager runs in the app's lifespan
    with ServerThread(example.create_app(config), host="127.0.0.2", lifespan="on") as thread:
        yield f"{thread.url}/mcp"


@pytest.fixture
async def client():
    http = build_outbound_client(
        allow_private=True, address_policy=only_127_0_0_2, connect_timeout=2, timeout=5, max_response_bytes=1 << 20
    )
    yield McpClient(http)
    await http.aclose()


async def test_the_tool_sees_the_verified_user(server, client, signer):
    token = signer.token(sub="whatsapp:+15550042")
    result = await client.call_tool(server, "get_balance", {"account": "ACC-1"}, request_secret=SECRET, bearer=token)
    assert result.status == "succeeded"
    assert result.result == {"account": "ACC-1", "balance": 1250.0, "user": "whatsapp:+15550042"}
    unknown = await client.call_tool(server, "get_balance", {"account": "ACC-9"}, request_secret=SECRET, bearer=token)
    assert unknown.status == "tool_error" and "unknown account ACC-9" in unknown.result


async def test_annotations_ask_for_approval_of_the_transfer(server, client, signer):
    tools = {t.name: t for t in await client.list_tools(server, request_secret=SECRET, bearer=signer.token())}
    assert settings_from_annotations(tools["send_transfer"].annotations) == {
        "interaction": "approve",
        "reliability": "at_most_once",
        "risk": "high",
    }
    assert settings_from_annotations(tools["get_balance"].annotations)["reliability"] == "idempotent"


def test_an_unsigned_request_is_refused(server):
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    response = httpx.post(server, json=body, headers={"Accept": "application/json, text/event-stream"})
    assert response.status_code == 401
    assert "signature" in json.dumps(response.json()).lower()


def test_main_refuses_a_missing_configuration(monkeypatch, capsys):
    monkeypatch.delenv("TOOLHOST_REQUEST_SECRET", raising=False)
    assert example_main([]) == 2
    assert "TOOLHOST_REQUEST_SECRET" in capsys.readouterr().err
