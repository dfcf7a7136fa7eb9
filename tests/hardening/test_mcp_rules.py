"""The pure rules of issue 40: tool names (loom/tools/names.py), a call's charge (loom/charging.py),
resumption backoff (outbound/mcp_limits.py), and the tool-list cache bounded in bytes."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from heddle.loom.charging import tool_call_charge
from heddle.loom.tools.names import RESERVED_NAMES, name_problem, over_turn_limits, screen
from heddle.outbound import build_outbound_client
from heddle.outbound.mcp import McpClient
from heddle.outbound.mcp_limits import McpLimits

sys.path.insert(0, str(Path(__file__).parents[1]))
from mcp_runs.hostile_mcp import HostileMcpServer  # noqa: E402


@pytest.mark.parametrize("name", ["echo", "get_balance", "a-b_C9", "x" * 64])
def test_names_the_providers_accept(name):
    assert name_problem(name) is None


@pytest.mark.parametrize("name", ["", "x" * 65, "has space", "<script>", "nul\x00", "é", "a.b", None, 7])
def test_names_the_providers_refuse(name):
    assert name_problem(name) == "invalid_name"


def test_screen_keeps_the_files_tools_and_refuses_reserved_and_clashing_listed_ones():
    candidates = [
        ("identify", "tools.0", "builtin", "identify"),
        ("lookup", "tools.1", "file", "file-lookup"),
        ("lookup", "tools.2 (mcp: a)", "listed", "a-lookup"),  # the file's name: a clash, the file keeps it
        ("ask_user", "tools.2 (mcp: a)", "listed", "a-ask"),  # reserved
        ("remember", "tools.2 (mcp: a)", "listed", "a-remember"),  # reserved, even if not offered yet
        ("echo", "tools.2 (mcp: a)", "listed", "a-echo"),
        ("echo", "tools.3 (mcp: b)", "listed", "b-echo"),  # two servers: neither
        ("ping", "tools.3 (mcp: b)", "listed", "b-ping"),
        ("bad name", "tools.3 (mcp: b)", "listed", "b-bad"),
    ]
    kept, refused = screen(candidates)
    assert kept == ["identify", "file-lookup", "b-ping"]
    assert [(r.name, r.source, r.reason) for r in refused] == [
        ("lookup", "tools.2 (mcp: a)", "tool_name_clash"),
        ("ask_user", "tools.2 (mcp: a)", "reserved_name"),
        ("remember", "tools.2 (mcp: a)", "reserved_name"),
        ("echo", "tools.2 (mcp: a)", "tool_name_clash"),
        ("echo", "tools.3 (mcp: b)", "tool_name_clash"),
        ("bad name", "tools.3 (mcp: b)", "invalid_name"),
    ]
    assert {"ask_user", "identify", "remember", "forget", "schedule_followup"} <= RESERVED_NAMES


def test_turn_limits_count_tools_and_schema_bytes():
    schemas = [{"type": "object", "description": "d" * 100}] * 3
    assert over_turn_limits(schemas, max_tools=3, max_schema_bytes=1000) is None
    assert "4 tools" in over_turn_limits([*schemas, {}], max_tools=3, max_schema_bytes=0)
    assert "bytes" in over_turn_limits(schemas, max_tools=0, max_schema_bytes=300)


@pytest.mark.parametrize(("kind", "attempts", "new", "by_kind", "charge"), [
    ("hosted", [], [{"status": 200}], False, 5),  # answered in its own process
    ("mcp", [{"in_flight": True}], [], False, 5),  # settled by the next executor after a crash
    ("hosted", [{"in_flight": True}], [{"status": 200}], False, 5),  # retried after a takeover: still once
    ("hosted", [], [], False, 0),  # never started (no connection, bad arguments)
    ("builtin", [], [{"x": 1}], False, 0),  # identify bills itself
    ("mcp", [], [{"x": 1}], True, 0),
])
def test_a_calls_charge_depends_on_the_call_only(kind, attempts, new, by_kind, charge):
    assert tool_call_charge(kind, price_micro=5, attempts=attempts, new_attempts=new, charged_by_kind=by_kind) == charge


def test_resumption_backoff_doubles_and_is_capped():
    limits = McpLimits(backoff_base=0.25, backoff_cap=2.0)
    assert [limits.backoff(n) for n in range(1, 6)] == [0.25, 0.5, 1.0, 2.0, 2.0]


def test_the_tool_list_cache_is_bounded_in_bytes():
    """Lists of 30 connections, each ~0.2 MB (100 tools of ~1 KB, and their weight in memory), in a
    cache of 1 MB: it holds a few, never more bytes."""
    async def fill(url: str) -> tuple[int, int]:
        http = build_outbound_client(allow_private=True, connect_timeout=5, timeout=15, max_response_bytes=1 << 20)
        client = McpClient(http, limits=McpLimits(cache_bytes=1_000_000, max_tools=1000))
        try:
            for scope in range(30):
                await client.list_tools(url, request_secret="s", scope=str(scope))
                assert client.cache_bytes <= 1_000_000
            return client.cache_bytes, len(client._tools)
        finally:
            await http.aclose()

    with HostileMcpServer(per_page=100, pages=1, pad=900) as server:
        size, entries = asyncio.run(fill(server.url))
    assert 800_000 < size <= 1_000_000 and 3 <= entries < 30
