"""The tool calls of one model turn (issue 28): concurrent and bounded, each fenced, results back in
call order, arguments checked against the tool's JSON Schema before any host is called, tool
metrics, and a run's own Identify call in its trace by the time the run is terminal.

The model is llmock (a third-party OpenAI-compatible server) scripted to ask for several calls
in one turn; the tools are a real loopback tool host (conftest.py) whose `/tools/overlap` counts
the calls in flight at once.
"""

from __future__ import annotations

import json
import re
import time

import pytest
from llmock.scenarios import Reply, ToolCall
from sqlalchemy import select

from heddle.billing.models import LedgerEntry
from hosted_runs.conftest import TOOLS
from hosted_runs.test_fencing import bump_fence, drain, snapshot
from support.loom import SCRIPTED_AGENT, open_thread, post, wait_run


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def server(request, tmp_path_factory, llmock_server):
    """The module's server, with a model class on llmock. The request log is written only every
    30 s, so a run's Identify call can be in its trace at the close only through the run itself."""
    from support.server import LiveServer

    if request.param == "sqlite":
        url = f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('db') / 'heddle.db'}"
    else:
        url = request.getfixturevalue("pg_database_factory")()
    classes = json.dumps({"remote": {"provider": "openai", "model": "gpt-4o-mini", "api_key": "sk-llmock",
                                     "base_url": llmock_server.base_url("openai"), "max_retries": 1}})
    live = LiveServer(database_url=url, model_classes=classes, outbound_timeout=10.0,
                      request_log_flush_seconds=30.0).start()
    yield live
    live.stop()


@pytest.fixture
def agent(tenant, toolhost):
    return tenant.add_agent({"name": "parallel", "model_class": "remote", "instructions": "Use the tools.",
                             "tools": TOOLS}, classes=("scripted", "remote"))


def tool_calls(http, h, run_id):
    return [c for t in http.get(f"/v1/loom/runs/{run_id}/trace", headers=h).json()["data"]["turns"]
            for c in t["tool_calls"]]


def charges(tenant, ref: str) -> list:
    async def read(s):
        return list(await s.scalars(select(LedgerEntry).where(LedgerEntry.ref == ref)))

    return tenant.run(read)


def tool_metric(http, status: str, kind: str = "hosted") -> float:
    pattern = rf'^heddle_tool_calls_total{{[^}}]*kind="{kind}"[^}}]*status="{status}"[^}}]*}} (\S+)$'
    found = re.search(pattern, http.get("/metrics").text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


def start(http, tenant, agent):
    h = tenant.headers("web:parallel")
    thread = open_thread(http, h, agent)
    return h, post(http, h, thread, "go")["run_id"]


def script(llmock, calls: list[tuple[str, dict]], answer: str = "Done.") -> None:
    llmock.add(Reply(tool_calls=tuple(ToolCall(name, args) for name, args in calls)))
    llmock.reply(answer)


def test_one_turns_calls_run_concurrently_bounded_and_go_back_in_call_order(http, tenant, agent, toolhost, llmock):
    ok_before = tool_metric(http, "ok")
    # The first call holds longest, so they finish out of call order. The first four must all be
    # in flight before the shortest of them ends: 1.1 s for a loaded CI machine to start them
    # (0.3 s was not always enough there, on PostgreSQL).
    holds = [2.0, 1.7, 1.4, 1.1, 0.3]
    script(llmock, [("overlap", {"n": n, "hold": hold}) for n, hold in enumerate(holds, start=1)])
    h, run_id = start(http, tenant, agent)
    run = wait_run(http, h, run_id, states=("closed", "failed"))
    assert run["state"] == "closed", run
    assert toolhost.max_in_flight == 4  # HEDDLE_RUN_TOOL_CONCURRENCY's default bounds them
    calls = tool_calls(http, h, run_id)
    assert [c["status"] for c in calls] == ["succeeded"] * 5
    assert [c["result"] for c in calls] == [{"n": n} for n in range(1, 6)]
    # The model's next request has the results in the order it asked for the calls.
    messages = llmock.requests[-1].body["messages"]
    (asked,) = [m for m in messages if m["role"] == "assistant" and m.get("tool_calls")]
    results = [m for m in messages if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in results] == [c["id"] for c in asked["tool_calls"]]
    assert [json.loads(m["content"])["result"]["n"] for m in results] == [1, 2, 3, 4, 5]
    assert tool_metric(http, "ok") - ok_before == 5


def test_arguments_against_the_schema_are_a_tool_error_with_no_host_call(http, tenant, agent, toolhost, llmock):
    refused_before = tool_metric(http, "refused")
    script(llmock, [("overlap", {"n": "one"}), ("overlap", {"n": 2, "hold": 0}), ("overlap", {"n": 3, "x": 1})])
    h, run_id = start(http, tenant, agent)
    assert wait_run(http, h, run_id, states=("closed", "failed"))["state"] == "closed"
    bad, good, extra = tool_calls(http, h, run_id)
    assert good["status"] == "succeeded" and good["result"] == {"n": 2}
    for call, where in ((bad, "n"), (extra, "arguments")):
        assert call["status"] == "failed" and not call.get("attempts") and not charges(tenant, call["id"])
        error = call["result"]["error"]
        assert error["code"] == "invalid_arguments" and len(error["message"]) <= 1000
        assert error["message"].split(": ", 1)[1].startswith(f"{where}: ")
    assert "'one' is not of type 'integer'" in bad["result"]["error"]["message"]
    assert "'x' was unexpected" in extra["result"]["error"]["message"]
    assert [r.body["args"]["n"] for r in toolhost.calls("/tools/overlap")] == [2]  # only the valid call
    # The model reads the refusal as the call's result.
    results = [m for m in llmock.requests[-1].body["messages"] if m["role"] == "tool"]
    assert "invalid_arguments" in results[0]["content"]
    assert tool_metric(http, "refused") - refused_before == 2


def test_a_stale_fence_during_one_concurrent_call_writes_nothing(http, tenant, agent, toolhost, llmock):
    script(llmock, [("gated", {}), ("overlap", {"n": 1, "hold": 0})])
    h, run_id = start(http, tenant, agent)
    assert toolhost.gate_entered.wait(10), "the gated tool was never called"
    # The sibling call is recorded while the gated one is still in flight.
    calls: list[dict] = []
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        calls = tool_calls(http, h, run_id)
        if calls and calls[1]["status"] == "succeeded":
            break
        time.sleep(0.02)
    assert calls[1]["status"] == "succeeded" and calls[0]["status"] == "pending"
    bump_fence(tenant, run_id)
    before = snapshot(tenant, run_id)
    toolhost.gate.set()
    drain(tenant.server)
    assert snapshot(tenant, run_id) == before  # the stale executor recorded nothing
    assert len(toolhost.calls("/tools/gated")) == 1 and len(llmock.requests) == 1  # and asked no model


def test_a_runs_identify_call_is_in_its_trace_when_the_run_is_terminal(http, tenant):
    agent = tenant.add_agent(SCRIPTED_AGENT)
    h = tenant.headers("web:identify")
    run_id = post(http, h, open_thread(http, h, agent), "Which bank is DEUTDEFF?")["run_id"]
    assert wait_run(http, h, run_id, states=("closed", "failed"))["state"] == "closed"
    trace = http.get(f"/v1/loom/runs/{run_id}/trace", headers=h).json()["data"]
    assert trace["api_calls_total"] == 1
    (call,) = trace["api_calls"]
    assert call["path"] == "/v1/identify" and call["status"] == 200
    assert tool_metric(http, "ok", kind="builtin") >= 1
