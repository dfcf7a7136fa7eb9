"""Agents through the console: create (JSON or YAML), edit (a new version each time), versions,
and runs executing the version they recorded."""

from __future__ import annotations

import json

import pytest

from support.console import expect_error
from support.loom import open_thread, post, wait_run
from support.tenants import make_tenant

AGENT = {"name": "Payments helper", "model_class": "scripted", "instructions": "Version one.",
         "tools": [{"builtin": "identify"}]}


@pytest.fixture
def ws(console):
    return console.data("POST", "/workspaces", 201, json={"name": "Agents"})["id"]


def test_create_show_update_and_versions(console, ws):
    agent = console.data("POST", f"/workspaces/{ws}/agents", 201, json=AGENT)
    assert agent["id"].startswith("agent_") and agent["version"] == 1 and agent["tools"] == [{"builtin": "identify"}]
    shown = console.data("GET", f"/workspaces/{ws}/agents/{agent['id']}")
    assert shown["versions"][0]["version"] == 1 and shown["versions"][0]["created_by"].startswith("ops-")
    edited = console.data("PUT", f"/workspaces/{ws}/agents/{agent['id']}",
                          json={**AGENT, "instructions": "Version two.", "tools": []})
    assert edited["version"] == 2 and edited["instructions"] == "Version two." and edited["tools"] == []
    shown = console.data("GET", f"/workspaces/{ws}/agents/{agent['id']}")
    assert [v["version"] for v in shown["versions"]] == [2, 1] and shown["version"] == 2
    v1 = console.data("GET", f"/workspaces/{ws}/agents/{agent['id']}/versions/1")
    assert v1["instructions"] == "Version one." and v1["tools"] == [{"builtin": "identify"}]
    assert console.data("GET", f"/workspaces/{ws}/agents/{agent['id']}/versions/2")["tools"] == []
    expect_error(console.get(f"/workspaces/{ws}/agents/{agent['id']}/versions/3"), 404, "not_found")
    expect_error(console.get(f"/workspaces/{ws}/agents/{agent['id']}/versions/0"), 400, "invalid_request")
    listed = console.data("GET", f"/workspaces/{ws}/agents")["items"]
    assert [(a["id"], a["version"]) for a in listed] == [(agent["id"], 2)]


def test_create_from_yaml_text(console, ws):
    text = "name: From YAML\nmodel_class: scripted\ninstructions: Hi.\ntools:\n  - builtin: identify\n"
    agent = console.data("POST", f"/workspaces/{ws}/agents", 201, json={"yaml": text})
    assert agent["name"] == "From YAML" and agent["version"] == 1
    err = expect_error(console.post(f"/workspaces/{ws}/agents", json={"yaml": "name: [unclosed"}),
                       400, "invalid_request")
    assert err["details"][0]["field"] == "yaml" and "YAML" in err["message"]


def test_agents_read_back_as_their_yaml_agent_file(console, ws):
    text = ("name: Payments helper\nmodel_class: scripted\ninstructions: |\n  Line one.\n  Line two.\ntools:\n"
            "  - builtin: identify\n  - name: fee_quote\n    description: Quote a fee\n    path: /fee\n"
            "    parameters: {type: object, properties: {amount: {type: number}}, required: [amount]}\n")
    agent = console.data("POST", f"/workspaces/{ws}/agents", 201, json={"yaml": text})
    shown = console.data("GET", f"/workspaces/{ws}/agents/{agent['id']}")
    assert shown["yaml"].startswith("name: Payments helper\nmodel_class: scripted\ninstructions: |\n  Line one.\n")
    assert "null" not in shown["yaml"] and "{" not in shown["yaml"]  # block YAML, no unset fields
    # Saving the shown file unchanged gives the same definition (as a new version).
    again = console.data("PUT", f"/workspaces/{ws}/agents/{agent['id']}", json={"yaml": shown["yaml"]})
    assert again["version"] == 2
    assert (again["instructions"], again["tools"]) == (shown["instructions"], shown["tools"])
    v1 = console.data("GET", f"/workspaces/{ws}/agents/{agent['id']}/versions/1")
    assert v1["yaml"] == shown["yaml"]


@pytest.mark.parametrize("body,field", [
    ({**AGENT, "model_class": "gpt-nope"}, "model_class"),
    ({**AGENT, "name": ""}, "name"),
    ({**AGENT, "colour": "red"}, "colour"),
    ({**AGENT, "tools": [{"name": "pay", "description": "Pay", "path": "/pay", "risk": "extreme"}]}, "tools.0.risk"),
    ({**AGENT, "tools": [{"name": "pay", "description": "Pay", "path": "/pay", "connection": "nope"}]},
     "tools.0.connection"),
    ({"yaml": 5}, "yaml"),
    # a schema every call's arguments are checked against must be one (issue 28)
    ({**AGENT, "tools": [{"name": "pay", "description": "Pay", "path": "/pay",
                          "parameters": {"type": "object", "properties": {"amount": {"type": "money"}}}}]},
     "tools.0.parameters"),
])
def test_bad_agent_files_name_the_field(console, ws, body, field):
    err = expect_error(console.post(f"/workspaces/{ws}/agents", json=body), 400, "invalid_request")
    assert any(d["field"] == field for d in err["details"]), err


def test_bad_body_shapes_and_unknown_agents(console, ws):
    expect_error(console.post(f"/workspaces/{ws}/agents", json=[1, 2]), 400, "invalid_request")
    expect_error(console.put(f"/workspaces/{ws}/agents/agent_nope", json=AGENT), 404, "not_found")
    expect_error(console.get(f"/workspaces/{ws}/agents/agent_nope"), 404, "not_found")
    agent = console.data("POST", f"/workspaces/{ws}/agents", 201, json=AGENT)
    other = console.data("POST", "/workspaces", 201, json={"name": "Elsewhere"})["id"]
    expect_error(console.get(f"/workspaces/{other}/agents/{agent['id']}"), 404, "not_found")
    expect_error(console.put(f"/workspaces/{other}/agents/{agent['id']}", json=AGENT), 404, "not_found")
    bad = {**AGENT, "instructions": "x" * 40_000}
    err = expect_error(console.put(f"/workspaces/{ws}/agents/{agent['id']}", json=bad), 400, "invalid_request")
    assert err["details"][0]["field"] == "instructions"
    assert console.data("GET", f"/workspaces/{ws}/agents/{agent['id']}")["version"] == 1  # nothing half-written


def _system_prompt(turn: dict) -> str:
    return json.dumps(turn["request"])


def test_runs_record_and_execute_their_version(server, http, console):
    tenant = make_tenant(server)
    agent = console.data("POST", f"/workspaces/{tenant.workspace_id}/agents", 201, json=AGENT)["id"]
    h = tenant.headers("web:versions")
    thread = open_thread(http, h, agent)
    first = post(http, h, thread, "ask: which bank?")["run_id"]
    assert wait_run(http, h, first)["state"] == "awaiting_input"
    console.data("PUT", f"/workspaces/{tenant.workspace_id}/agents/{agent}",
                 json={**AGENT, "instructions": "Version two."})
    post(http, h, thread, "Chase")  # the first run resumes: still version 1
    assert wait_run(http, h, first, states=("closed", "failed"))["state"] == "closed"
    second = post(http, h, thread, "hello")["run_id"]
    assert wait_run(http, h, second)["state"] == "closed"

    runs = console.data("GET", f"/workspaces/{tenant.workspace_id}/runs")["items"]
    assert {r["id"]: r["agent_version"] for r in runs} == {first: 1, second: 2}
    old = console.data("GET", f"/workspaces/{tenant.workspace_id}/runs/{first}")["trace"]
    assert all("Version one." in _system_prompt(t) and "Version two." not in _system_prompt(t) for t in old["turns"])
    new = console.data("GET", f"/workspaces/{tenant.workspace_id}/runs/{second}")["trace"]
    assert all("Version two." in _system_prompt(t) for t in new["turns"])
