"""heddle.outbound.mcp against a real MCP server (the official SDK's) on a loopback address.

The server verifies Heddle's `Service-Signature` and the subject's token on every request
(heddle.toolhost), pages its tool list, and can drop a connection after a call was sent.
"""

from __future__ import annotations

import pytest
from mcp_testkit import PAGE_SIZE, McpTestServer
from outbound_testkit import REQUEST_SECRET, only_127_0_0_2

from heddle.outbound import build_outbound_client
from heddle.outbound.mcp import McpClient, arguments_problem, settings_from_annotations


@pytest.fixture(scope="module")
def mcp_server(signer):
    with McpTestServer(signer.jwks) as server:
        yield server


@pytest.fixture
async def http():
    client = build_outbound_client(
        allow_private=True, address_policy=only_127_0_0_2, connect_timeout=2, timeout=5, max_response_bytes=1 << 20
    )
    yield client
    await client.aclose()


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def test_tools_are_listed_across_pages_with_schemas_and_annotations(mcp_server, http, signer):
    before = len(mcp_server.seen.rpc("tools/list"))
    tools = await McpClient(http).list_tools(
        mcp_server.url, request_secret=REQUEST_SECRET, bearer=signer.token(sub="user-1")
    )
    by_name = {t.name: t for t in tools}
    assert {"get_balance", "send_transfer", "close_account", "drop_line", "open_savings"} <= set(by_name)
    # Five or more tools in pages of two: at least three tools/list requests, one session.
    assert len(mcp_server.seen.rpc("tools/list")) - before >= 3
    balance = by_name["get_balance"]
    assert balance.input_schema["properties"]["account"]["type"] == "string"
    assert balance.input_schema["required"] == ["account"]
    assert balance.annotations == {"readOnlyHint": True, "idempotentHint": True}
    assert by_name["send_transfer"].annotations == {"destructiveHint": True}


async def test_a_call_carries_the_subject_and_a_verified_signature(mcp_server, http, signer):
    client = McpClient(http)
    result = await client.call_tool(
        mcp_server.url,
        "get_balance",
        {"account": "ACC-9"},
        request_secret=REQUEST_SECRET,
        bearer=signer.token(sub="user-7"),
    )
    assert result.status == "succeeded" and result.result == {"account": "ACC-9", "balance": 4200}
    # Every request reached the tools only through the verifier: signature and token checked.
    assert mcp_server.seen.rpc("tools/call")[-1] == ("POST", "tools/call", "user-7")
    assert mcp_server.seen.calls[-1] == ("get_balance", {"account": "ACC-9"})
    # One session: initialize, initialized, the call, and no listing (the list is cached).
    methods = [r[1] for r in mcp_server.seen.requests]
    last_session = methods[len(methods) - 1 - methods[::-1].index("initialize") :]
    assert "tools/call" in last_session and "tools/list" not in last_session


async def test_a_wrong_secret_or_a_missing_token_is_refused_by_the_server(mcp_server, http, signer):
    calls = len(mcp_server.seen.calls)
    wrong = await McpClient(http).call_tool(
        mcp_server.url, "get_balance", {"account": "A"}, request_secret="whsec_not_the_one", bearer=signer.token()
    )
    assert wrong.status == "failed" and len(mcp_server.seen.calls) == calls
    assert wrong.error == {"code": "host_refused", "message": "the server answered HTTP 401"}
    assert not wrong.retryable
    anonymous = await McpClient(http).call_tool(
        mcp_server.url, "get_balance", {"account": "A"}, request_secret=REQUEST_SECRET
    )
    assert anonymous.status == "failed" and len(mcp_server.seen.calls) == calls


async def test_is_error_comes_back_as_a_tool_error(mcp_server, http, signer):
    result = await McpClient(http).call_tool(
        mcp_server.url, "close_account", {"account": "ACC-1"}, request_secret=REQUEST_SECRET, bearer=signer.token()
    )
    assert result.status == "tool_error"
    assert "has a balance and cannot be closed" in result.result


async def test_arguments_are_checked_against_the_schema_before_any_call(mcp_server, http, signer):
    calls = len(mcp_server.seen.rpc("tools/call"))
    result = await McpClient(http).call_tool(
        mcp_server.url,
        "send_transfer",
        {"amount": "lots", "to": "B"},
        request_secret=REQUEST_SECRET,
        bearer=signer.token(),
    )
    assert result.status == "failed" and result.error["code"] == "invalid_arguments"
    assert "amount" in result.error["message"] and not result.retryable
    unknown = await McpClient(http).call_tool(
        mcp_server.url, "no_such_tool", {}, request_secret=REQUEST_SECRET, bearer=signer.token()
    )
    assert unknown.status == "failed" and unknown.error["code"] == "unknown_tool"
    assert len(mcp_server.seen.rpc("tools/call")) == calls  # neither reached the server


async def test_a_connection_dropped_after_the_call_was_sent_is_unknown_fate(mcp_server, http, signer):
    result = await McpClient(http).call_tool(
        mcp_server.url, "drop_line", {"note": "n1"}, request_secret=REQUEST_SECRET, bearer=signer.token()
    )
    assert result.status == "unknown", result
    assert ("drop_line", {"note": "n1"}) in mcp_server.seen.calls  # it did run


async def test_the_outbound_deadline_applies_and_a_late_answer_is_unknown_fate(mcp_server, signer):
    quick = build_outbound_client(
        allow_private=True, address_policy=only_127_0_0_2, connect_timeout=1, timeout=1, max_response_bytes=1 << 20
    )
    try:
        client = McpClient(quick)
        result = await client.call_tool(
            mcp_server.url, "slow_report", {"seconds": 3}, request_secret=REQUEST_SECRET, bearer=signer.token()
        )
    finally:
        await quick.aclose()
    assert result.status == "unknown" and result.error["code"] == "timeout", result
    assert ("slow_report", {"seconds": 3}) in mcp_server.seen.calls


async def test_a_refused_destination_is_failed_and_not_sent():
    # Production mode: no plain http, no private address; nothing leaves the machine.
    strict = build_outbound_client(allow_private=False, connect_timeout=2, timeout=5, max_response_bytes=1 << 20)
    try:
        client = McpClient(strict)
        for url in ("http://127.0.0.2:9/mcp", "https://127.0.0.1:9/mcp", "https://10.1.2.3/mcp"):
            result = await client.call_tool(url, "get_balance", {"account": "A"}, request_secret=REQUEST_SECRET)
            assert result.status == "failed", url
            assert result.error["code"] == "destination_refused" and not result.retryable
    finally:
        await strict.aclose()


async def test_the_tool_list_is_cached_then_refreshed_on_list_changed_or_ttl(mcp_server, http, signer):
    clock = Clock()
    client = McpClient(http, ttl=60, clock=clock)
    listed = len(mcp_server.seen.rpc("tools/list"))
    first = await client.list_tools(mcp_server.url, request_secret=REQUEST_SECRET, bearer=signer.token())
    again = await client.list_tools(mcp_server.url, request_secret=REQUEST_SECRET, bearer=signer.token())
    assert again is first  # cached: no second listing
    assert len(mcp_server.seen.rpc("tools/list")) - listed == -(-len(first) // PAGE_SIZE)
    # The server adds a tool during this call and sends notifications/tools/list_changed.
    opened = await client.call_tool(
        mcp_server.url, "open_savings", {}, request_secret=REQUEST_SECRET, bearer=signer.token()
    )
    assert opened.status == "succeeded" and opened.result == {"result": "opened"}  # MCPServer wraps a str
    fresh = await client.list_tools(mcp_server.url, request_secret=REQUEST_SECRET, bearer=signer.token())
    assert "savings_rate" in {t.name for t in fresh}
    rate = await client.call_tool(
        mcp_server.url, "savings_rate", {}, request_secret=REQUEST_SECRET, bearer=signer.token()
    )
    # No output schema (a lambda), so no structuredContent: the text content is the result.
    assert rate.status == "succeeded" and '"rate": 0.031' in rate.result
    # And without a notification, the TTL ends the cache.
    listed = len(mcp_server.seen.rpc("tools/list"))
    await client.list_tools(mcp_server.url, request_secret=REQUEST_SECRET, bearer=signer.token())
    assert len(mcp_server.seen.rpc("tools/list")) == listed
    clock.now += 61
    await client.list_tools(mcp_server.url, request_secret=REQUEST_SECRET, bearer=signer.token())
    assert len(mcp_server.seen.rpc("tools/list")) - listed == -(-len(fresh) // PAGE_SIZE)  # listed anew


def test_annotations_decide_where_the_agent_file_is_silent():
    assert settings_from_annotations({"destructiveHint": True}) == {
        "interaction": "approve",
        "reliability": "at_most_once",
        "risk": "high",
    }
    assert settings_from_annotations({"readOnlyHint": True, "idempotentHint": True}) == {
        "interaction": "auto",
        "reliability": "idempotent",
        "risk": "low",
    }
    assert settings_from_annotations(None) == {"interaction": "auto", "reliability": "at_most_once", "risk": "medium"}
    # Only a literal true counts; unknown hints are ignored.
    assert settings_from_annotations(
        {"destructiveHint": "yes", "idempotentHint": 1, "trustMe": True}
    ) == settings_from_annotations({})
    # Explicit settings win, both ways.
    assert settings_from_annotations({"destructiveHint": True}, {"interaction": "auto", "risk": None}) == {
        "interaction": "auto",
        "reliability": "at_most_once",
        "risk": "high",
    }
    assert settings_from_annotations({"readOnlyHint": True}, {"interaction": "approve", "color": "red"}) == {
        "interaction": "approve",
        "reliability": "at_most_once",
        "risk": "low",
    }


def test_arguments_problem_names_the_field():
    schema = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}, "required": ["n"]}
    assert arguments_problem(schema, {"n": 2}) is None
    assert arguments_problem(schema, {"n": 0}).startswith("n:")
    assert "required" in arguments_problem(schema, {})
    assert "input schema is invalid" in arguments_problem({"type": 7}, {})
