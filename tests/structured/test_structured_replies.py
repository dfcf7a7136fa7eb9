"""Structured replies (issue 45) through a real server: an agent with `output.schema` asked by
llmock (OpenAI-compatible: its journal shows the json_schema `response_format`) and by the fake
Anthropic server (a tool the model must use); a valid object is the message's `data`; an invalid
reply is repaired once, then the run fails `invalid_output` with both attempts in the trace."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import httpx
import jsonschema
import pytest

sys.path.insert(0, str(Path(__file__).parent.parent / "providers"))

import llmfake_anthropic  # noqa: E402
from llmfake_http import Reply, Script, ServerThread  # noqa: E402

from heddle.loom.agent_file import AgentFileError, parse_agent_file  # noqa: E402
from support.loom import open_thread, post, wait_run  # noqa: E402
from support.net import free_port  # noqa: E402
from support.server import LiveServer  # noqa: E402
from support.sse import collect  # noqa: E402
from support.tenants import make_tenant  # noqa: E402

ANTHROPIC_KEY = "sk-ant-test-0123456789"
SCHEMA = {"type": "object", "additionalProperties": False, "required": ["amount", "currency"],
          "properties": {"amount": {"type": "number", "minimum": 0}, "currency": {"type": "string", "enum": ["EUR", "USD"]}}}
OPEN_SCHEMA = {"type": "object", "required": ["summary"], "properties": {"summary": {"type": "string"}}}
GOOD = {"amount": 5, "currency": "EUR"}


@pytest.fixture(scope="module")
def anthropic_fake():
    script = Script()
    server = ServerThread(llmfake_anthropic.create_app(script, ANTHROPIC_KEY), free_port())
    server.start()
    yield server.url, script
    server.stop()


@pytest.fixture
def deployment(tmp_path, llmock, anthropic_fake):
    anthropic_fake[1].reset()
    classes = json.dumps({
        "gpt": {"provider": "openai", "model": "gpt-4o-mini", "base_url": llmock.base_url("openai"),
                "api_key": "sk-llmock", "max_retries": 0, "timeout": 5, "max_tokens": 128},
        "claude": {"provider": "anthropic", "model": "claude-fake", "base_url": anthropic_fake[0],
                   "api_key": ANTHROPIC_KEY, "max_retries": 0, "timeout": 5, "max_tokens": 128}})
    server = LiveServer(database_url=f"sqlite+aiosqlite:///{tmp_path / 'shape.db'}", model_classes=classes).start()
    tenant = make_tenant(server)
    agents = {}
    for name, cls, schema in (("gpt", "gpt", SCHEMA), ("gpt_open", "gpt", OPEN_SCHEMA), ("claude", "claude", SCHEMA),
                              ("scripted", "scripted", SCHEMA)):
        agents[name] = tenant.add_agent({"name": name, "model_class": cls, "instructions": "Answer in shape.",
                                         "tools": [], "output": {"schema": schema}}, classes=(cls,))
    with httpx.Client(base_url=server.base_url, timeout=10) as http:
        yield http, tenant, agents, anthropic_fake[1]
    server.stop()


def run_of(deployment, agent: str, subject: str = "web:shape"):
    http, tenant, agents, _ = deployment
    h = tenant.headers(subject)
    thread = open_thread(http, h, agents[agent])
    run = wait_run(http, h, post(http, h, thread, "what do I owe?")["run_id"], states=("closed", "failed"))
    trace = http.get(f"/v1/loom/runs/{run['id']}/trace", headers=h).json()["data"]
    return run, trace, thread, h


def test_openai_is_asked_with_a_strict_json_schema_and_the_object_is_the_messages_data(deployment, llmock):
    llmock.reply(json.dumps(GOOD))
    run, trace, thread, h = run_of(deployment, "gpt")
    assert run["state"] == "closed"
    message = run["latest_message"]
    assert message["data"] == GOOD and json.loads(message["content"]) == GOOD
    body = llmock.requests[0].body
    assert body["response_format"] == {"type": "json_schema", "json_schema": {"name": "reply", "schema": SCHEMA,
                                                                             "strict": True}}
    assert "respond" not in [t["function"]["name"] for t in body.get("tools", [])]
    http = deployment[0]
    items = http.get(f"/v1/loom/threads/{thread}/messages", headers=h).json()["data"]["items"]
    assert items[-1]["data"] == GOOD and items[0]["data"] is None
    events, _ = collect(http, f"/v1/loom/runs/{run['id']}/events", h)
    created = [e for e in events if e["event"] == "message.created" and e["data"]["role"] == "assistant"]
    assert created and created[-1]["data"]["data"] == GOOD


def test_a_schema_strict_mode_cannot_take_is_sent_not_strict(deployment, llmock):
    llmock.reply(json.dumps({"summary": "ok", "extra": 1}))
    run, _, _, _ = run_of(deployment, "gpt_open")
    assert run["latest_message"]["data"] == {"summary": "ok", "extra": 1}
    assert llmock.requests[0].body["response_format"]["json_schema"]["strict"] is False


def test_an_invalid_reply_is_repaired_once_with_the_error_given_back(deployment, llmock):
    llmock.reply("Sure! You owe five euros.")
    llmock.reply(json.dumps(GOOD))
    run, trace, _, _ = run_of(deployment, "gpt")
    assert run["state"] == "closed" and run["latest_message"]["data"] == GOOD
    first, second = trace["turns"]
    assert "not JSON" in first["response"]["output_error"] and "output_error" not in second["response"]
    repair = llmock.requests[1].body["messages"]
    assert repair[-2] == {"role": "assistant", "content": "Sure! You owe five euros."}
    assert repair[-1]["role"] == "user" and "does not match the required output schema" in repair[-1]["content"]


def test_json_that_fails_the_schema_twice_fails_the_run_invalid_output(deployment, llmock):
    llmock.reply(json.dumps({"amount": -1, "currency": "EUR"}))
    llmock.reply(json.dumps({"amount": 3, "currency": "GBP"}))
    run, trace, thread, h = run_of(deployment, "gpt")
    assert run["state"] == "failed" and run["error"]["code"] == "invalid_output"
    assert "currency" in run["error"]["message"]
    first, second = trace["turns"]
    assert first["response"]["output_error"].startswith("amount:") and second["response"]["output_error"].startswith("currency:")
    assert first["response"]["text"] != second["response"]["text"]
    http = deployment[0]
    items = http.get(f"/v1/loom/threads/{thread}/messages", headers=h).json()["data"]["items"]
    assert [m["role"] for m in items] == ["user"]  # no invalid answer is given as one


def test_anthropic_is_made_to_answer_through_a_tool_and_its_input_is_the_data(deployment):
    script = deployment[3]
    script.push(Reply(tool_calls=(("respond", GOOD),)))
    run, trace, _, _ = run_of(deployment, "claude")
    assert run["state"] == "closed" and run["latest_message"]["data"] == GOOD
    body = script.requests[0].body
    assert body["tool_choice"] == {"type": "any"}
    respond = [t for t in body["tools"] if t["name"] == "respond"]
    assert respond and respond[0]["input_schema"] == SCHEMA


def test_anthropic_invalid_twice_fails_invalid_output(deployment):
    script = deployment[3]
    script.push(Reply(tool_calls=(("respond", {"amount": "five"}),)), Reply(tool_calls=(("respond", {"amount": 5}),)))
    run, trace, _, _ = run_of(deployment, "claude")
    assert run["state"] == "failed" and run["error"]["code"] == "invalid_output"
    assert len(trace["turns"]) == 2 and all(t["response"]["output_error"] for t in trace["turns"])


def test_the_scripted_model_answers_a_deterministic_instance_of_the_schema(deployment):
    first, _, _, _ = run_of(deployment, "scripted", "web:s1")
    second, _, _, _ = run_of(deployment, "scripted", "web:s2")
    assert first["state"] == "closed" and first["latest_message"]["data"] == second["latest_message"]["data"]
    jsonschema.validate(first["latest_message"]["data"], SCHEMA)


@pytest.mark.parametrize("schema,why", [
    ({"type": "objekt"}, "not a valid JSON Schema"),
    ({"type": "object", "properties": {"a": {"type": 3}}}, "not a valid JSON Schema"),
    ({"type": "object", "required": "a"}, "not a valid JSON Schema"),
    ({"type": "array"}, "must describe an object"),
])
def test_an_output_schema_that_is_not_json_schema_is_refused_at_save(schema, why):
    with pytest.raises(AgentFileError, match=why):
        parse_agent_file(json.dumps({"name": "a", "model_class": "scripted", "output": {"schema": schema}}),
                         filename="agent.json")
