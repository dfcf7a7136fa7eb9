"""Issue 40's reproductions 1, 3, 4 and 5 against hostile MCP servers on loopback (hostile_mcp.py),
with Heddle's real MCP client (the official SDK's) on the other side: every input bounded with
its own code and metric, tool names screened, causes as the server gave them."""

from __future__ import annotations

import time

import pytest

from heddle.workspaces import service as ws_service
from mcp_runs.hostile_mcp import BAD_NAMES, HostileMcpServer
from mcp_runs.mcp_runs_kit import Mint, connect
from support.loom import open_thread, post, wait_run

DEADLINE, RESUMPTIONS = 6.0, 3
SERVER_SETTINGS = {"tool_call_price_credits": 1.0, "mcp_max_tools": 128, "tools_max_per_turn": 64,
                   "mcp_call_deadline_seconds": DEADLINE, "mcp_max_resumptions": RESUMPTIONS}
DONE = ("closed", "failed", "awaiting_input", "awaiting_outcome")


@pytest.fixture
def hostile(tenant):
    ws = tenant.run(lambda s: ws_service.get_workspace(s, tenant.workspace_id))
    mint = Mint(ws.request_secret, tenant.key_id).start()
    tenant.update(mint_url=f"{mint.base_url}/mint", jwks_json=mint.jwks)
    with HostileMcpServer() as server:
        connect(tenant, "hostile", server.url)
        yield server
    mint.stop()


def run_once(http, tenant, content: str, subject: str = "web:alice", entry=None):
    agent_id = tenant.add_agent({"name": "victim", "model_class": "scripted", "instructions": "",
                                 "tools": [entry or {"mcp": "hostile"}]})
    h = tenant.headers(subject)
    run_id = post(http, h, open_thread(http, h, agent_id), content)["run_id"]
    return h, run_id, wait_run(http, h, run_id, states=DONE, timeout=30)


def limit_count(http, code: str) -> float:
    for line in http.get("/metrics").text.splitlines():
        if line.startswith(f'heddle_mcp_limits_total{{limit="{code}"}}'):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_the_issues_paged_list_is_refused_at_its_first_page(http, tenant, hostile):
    # The issue's list: 1,600 tools a page (0.88 MB, under the 1 MiB response cap), 50 pages. Its
    # first page is cut off while read (512 KiB for the whole list), never parsed.
    before = limit_count(http, "mcp_list_too_large")
    _, _, run = run_once(http, tenant, 'call: t0_0 {}')
    assert run["state"] == "failed" and run["error"]["code"] == "mcp_list_too_large", run
    assert hostile.counts["tools/list"] == 1
    assert limit_count(http, "mcp_list_too_large") == before + 1
    # Refused for the connection, whatever the subject: another subject's run fetches nothing.
    _, _, run = run_once(http, tenant, 'call: t0_0 {}', subject="web:mallory")
    assert run["state"] == "failed" and run["error"]["code"] == "mcp_list_too_large", run
    assert hostile.counts["tools/list"] == 1 and hostile.counts["initialize"] == 1


def test_a_paged_list_past_its_bytes_is_cut_off_while_read(http, tenant, hostile):
    hostile.per_page, hostile.pad = 20, 12_000  # 0.24 MB a page, 20 tools: the bytes stop it first
    before = limit_count(http, "mcp_list_too_large")
    _, _, run = run_once(http, tenant, 'call: t0_0 {}')
    assert run["state"] == "failed" and run["error"]["code"] == "mcp_list_too_large", run
    assert hostile.counts["tools/list"] == 3  # 512 KiB: the third page is cut off half-read
    assert limit_count(http, "mcp_list_too_large") == before + 1


@pytest.mark.parametrize(("per_page", "pages", "code"), [
    (60, 3, "mcp_too_many_tools"),  # 180 tools (small ones), over the connection's 128
    (50, 2, "tools_over_turn_limit"),  # 100 tools: a connection may list them, a turn may not offer them
])
def test_tools_per_connection_and_per_turn_are_bounded(http, tenant, hostile, per_page, pages, code):
    hostile.per_page, hostile.pages, hostile.pad = per_page, pages, 0
    _, _, run = run_once(http, tenant, 'call: t0_0 {}')
    assert run["state"] == "failed" and run["error"]["code"] == code, run
    counted = (f'heddle_mcp_limits_total{{limit="{code}"}}' if code.startswith("mcp_")
               else f'heddle_tools_refused_total{{reason="{code}"}}')
    assert counted in http.get("/metrics").text


def test_an_endless_cursor_is_too_many_pages_not_an_http_status(http, tenant, hostile):
    hostile.mode, hostile.per_page, hostile.pad = "endless", 1, 0
    _, _, run = run_once(http, tenant, 'call: t0_0 {}')
    assert run["state"] == "failed" and run["error"]["code"] == "mcp_too_many_pages", run
    assert "HTTP" not in run["error"]["message"]
    assert hostile.counts["tools/list"] == 20


def test_a_jsonrpc_error_is_reported_as_the_server_gave_it(http, tenant, hostile):
    hostile.mode = "db_down"  # GET answers 405, which the spec allows
    _, _, run = run_once(http, tenant, 'call: echo {}')
    assert run["state"] == "failed" and run["error"]["code"] == "tools_unavailable", run
    assert "-32000" in run["error"]["message"] and "backend database down" in run["error"]["message"]
    assert "405" not in run["error"]["message"]


def test_the_resumption_loop_is_bounded_with_backoff(http, tenant, hostile):
    hostile.mode = "resume_loop"
    started = time.monotonic()
    _, _, run = run_once(http, tenant, 'call: echo {}')
    took = time.monotonic() - started
    assert run["state"] == "failed" and run["error"]["code"] == "mcp_too_many_resumptions", run
    # Each resumption waited its backoff (0.25, 0.5, 1 s), never the server's `retry: 0`.
    assert hostile.counts["resume"] <= RESUMPTIONS and took < DEADLINE + 5
    assert took > 1.5


def test_a_call_stuck_in_the_resumption_loop_has_an_unknown_fate_and_is_charged_once(http, tenant, hostile):
    hostile.mode = "call_loop"
    h, run_id, run = run_once(http, tenant, 'call: echo {"text": "hi"}')
    assert run["state"] == "awaiting_outcome", run
    [call] = http.get(f"/v1/loom/runs/{run_id}/trace", headers=h).json()["data"]["turns"][0]["tool_calls"]
    assert call["status"] == "awaiting_outcome" and call["reliability"] == "at_most_once"
    assert call["result"]["error"]["cause"]["code"] == "mcp_too_many_resumptions"
    assert call["cost_credits"] == 1.0
    assert hostile.counts["tools/call"] == 1 and hostile.counts["resume"] <= RESUMPTIONS


def test_bad_and_clashing_names_are_reported_and_never_offered(http, tenant, hostile):
    hostile.mode = "names"
    h, run_id, run = run_once(http, tenant, 'call: echo {"text": "hi"}')
    assert run["state"] == "closed", run
    [turn, *_] = http.get(f"/v1/loom/runs/{run_id}/trace", headers=h).json()["data"]["turns"]
    assert turn["request"]["tools"] == ["ask_user", "echo"]  # one ask_user: the built-in
    refused = {r["name"]: r["reason"] for r in turn["request"]["refused_tools"]}
    assert refused == {
        "ask_user": "reserved_name", "": "invalid_name", ("x" * 79) + "…": "invalid_name",
        "has space": "invalid_name", "<script>alert(1)</script>": "invalid_name", "nul\\u0000name": "invalid_name",
    }
    assert len(refused) == len(BAD_NAMES)
    [call] = turn["tool_calls"]
    assert call["name"] == "echo" and call["status"] == "succeeded"
    metrics = http.get("/metrics").text
    assert 'heddle_tools_refused_total{reason="invalid_name"}' in metrics
