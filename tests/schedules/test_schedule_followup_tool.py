"""The built-in `schedule_followup` tool from a model call (llmock, an OpenAI-compatible server):
an agent with `schedules: true` is offered it, a call makes a one-off schedule of the run's
thread made by the agent, which then fires as a message marked scheduled; bad arguments are the
call's failure (the model reads why), and the per-thread cap holds."""

from __future__ import annotations

import datetime as dt
import json

import httpx
import pytest

from heddle.console.agent_yaml import agent_yaml
from heddle.loom import schedule_firing
from heddle.loom.agent_file import AgentFileError, parse_agent_file
from support.loom import open_thread, post, wait_run
from support.server import LiveServer
from support.tenants import make_tenant


@pytest.fixture
def remote(tmp_path, llmock):
    classes = json.dumps({"remote": {
        "provider": "openai", "model": "gpt-4o-mini", "base_url": llmock.base_url("openai"), "api_key": "sk-llmock",
        "max_retries": 0, "timeout": 5, "max_tokens": 64}})
    server = LiveServer(database_url=f"sqlite+aiosqlite:///{tmp_path / 'tool.db'}", model_classes=classes,
                        schedule_poll_seconds=0, schedules_max_per_thread=1).start()
    tenant = make_tenant(server)
    agent = tenant.add_agent({"name": "teller", "model_class": "remote", "instructions": "Answer.", "tools": [],
                              "schedules": True}, classes=("remote",))
    with httpx.Client(base_url=server.base_url, timeout=10) as http:
        yield server, http, tenant, agent
    server.stop()


def test_a_model_call_of_schedule_followup_makes_a_schedule_that_fires(remote, llmock):
    server, http, tenant, agent = remote
    h = tenant.headers("web:tool")
    at = (dt.datetime.now(dt.UTC) + dt.timedelta(days=1)).replace(microsecond=0)
    llmock.call_tool("schedule_followup", {"content": "Check transfer T-1 again", "at": at.isoformat()})
    llmock.reply("I'll check again tomorrow.")
    thread = open_thread(http, h, agent)
    run = wait_run(http, h, post(http, h, thread, "is my transfer through?")["run_id"], states=("closed", "failed"))
    assert run["state"] == "closed" and run["latest_message"]["content"] == "I'll check again tomorrow."
    first = llmock.requests[0].body
    offered = [t["function"]["name"] for t in first["tools"]]
    assert "schedule_followup" in offered
    trace = http.get(f"/v1/loom/runs/{run['id']}/trace", headers=h).json()["data"]
    (call,) = [c for turn in trace["turns"] for c in turn["tool_calls"]]
    assert call["name"] == "schedule_followup" and call["kind"] == "schedule" and call["status"] == "succeeded"
    (schedule,) = http.get(f"/v1/loom/threads/{thread}/schedules", headers=h).json()["data"]["items"]
    assert call["result"]["schedule_id"] == schedule["id"]
    assert schedule["created_by"] == {"kind": "agent", "run_id": run["id"]} and schedule["content"] == "Check transfer T-1 again"
    assert schedule["next_run_at"] == at.isoformat().replace("+00:00", "Z")
    llmock.reply("Your transfer arrived.")
    assert server.call(schedule_firing.fire_due(server.services.uow, now=at)) == 1
    items = http.get(f"/v1/loom/threads/{thread}/messages", headers=h).json()["data"]["items"]
    (fired,) = [m for m in items if m["scheduled"]]
    assert fired["scheduled"]["created_by"] == "agent" and fired["scheduled"]["created_by_run_id"] == run["id"]
    later = wait_run(http, h, fired["run_id"], states=("closed", "failed"))
    assert later["origin"] == "schedule" and later["latest_message"]["content"] == "Your transfer arrived."


def test_bad_arguments_and_the_cap_are_the_calls_failure(remote, llmock):
    server, http, tenant, agent = remote
    h = tenant.headers("web:bad")
    thread = open_thread(http, h, agent)
    future = (dt.datetime.now(dt.UTC) + dt.timedelta(hours=2)).isoformat()
    llmock.call_tool("schedule_followup", {"content": "x", "at": "2001-01-01T00:00:00Z"})
    llmock.call_tool("schedule_followup", {"content": "x", "at": "tomorrow"})
    llmock.call_tool("schedule_followup", {"content": "first", "at": future})
    llmock.call_tool("schedule_followup", {"content": "second", "at": future})
    llmock.reply("done")
    run = wait_run(http, h, post(http, h, thread, "remind me")["run_id"], states=("closed", "failed"))
    trace = http.get(f"/v1/loom/runs/{run['id']}/trace", headers=h).json()["data"]
    calls = [c for turn in trace["turns"] for c in turn["tool_calls"]]
    assert [(c["status"], (c["result"].get("error") or {}).get("code")) for c in calls] == [
        ("failed", "invalid_schedule"), ("failed", "invalid_schedule"), ("succeeded", None),
        ("failed", "too_many_schedules")]
    assert len(http.get(f"/v1/loom/threads/{thread}/schedules", headers=h).json()["data"]["items"]) == 1


def test_schedules_true_round_trips_through_the_console_yaml_and_the_name_stays_reserved():
    spec = parse_agent_file("name: a\nmodel_class: scripted\nschedules: true\n")
    assert spec.tool_dicts() == [{"builtin": "schedule_followup"}]
    text = agent_yaml({"name": "a", "model_class": "scripted", "tools": spec.tool_dicts()})
    assert "schedules: true" in text and "schedule_followup" not in text
    assert parse_agent_file(text).schedules is True
    with pytest.raises(AgentFileError):
        parse_agent_file("name: a\nmodel_class: scripted\ntools:\n  - name: schedule_followup\n"
                         "    description: x\n    path: /x\n")
