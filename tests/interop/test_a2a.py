"""A2A: a published Heddle agent through the official a2a-sdk client (v1.0) and raw v0.3 JSON-RPC,
against the real server, embedded layout (SQLite and PostgreSQL; tests/interop/test_a2a_workers.py
runs the PostgreSQL layout with a worker process)."""

from __future__ import annotations

import asyncio

from a2a.types.a2a_pb2 import CancelTaskRequest, GetTaskRequest, ListTasksRequest, TaskState

from interop.a2a_kit import PUBLISHED, client_for, rpc, send
from support.loom import SCRIPTED_AGENT
from support.tenants import make_tenant

SERVER_SETTINGS = {"sse_heartbeat_seconds": 0.5, "sse_poll_seconds": 0.2}


def test_card_send_reply_get_list_and_cancel(server, tenant, http):
    agent = tenant.add_agent(PUBLISHED)
    h = tenant.headers("web:a2a")

    async def scenario():
        client, raw, card = await client_for(server.base_url, agent, h)
        try:
            assert card.name == "payments" and card.capabilities.streaming
            assert card.supported_interfaces[0].url.endswith(f"/v1/a2a/{agent}")
            scheme = card.security_schemes["heddle_workspace_key"].http_auth_security_scheme
            assert scheme.scheme == "bearer" and "Service-Subject" in scheme.description
            # A message, its reply: the task completes with the reply as artifact and status message.
            events = await send(client, "Where does DEUTDEFF go?")
            task = events[-1].task
            assert task.status.state == TaskState.TASK_STATE_COMPLETED, task
            reply = task.artifacts[0].parts[0].text
            assert "DEUTDEFF" in reply and task.status.message.parts[0].text == reply
            assert task.metadata["origin"] == "a2a"
            got = await client.get_task(GetTaskRequest(id=task.id, history_length=10))
            assert got.id == task.id and got.context_id == task.context_id
            assert [m.parts[0].text for m in got.history][0] == "Where does DEUTDEFF go?"
            # A question: input-required, answered in the same task.
            events = await send(client, "ask: Which account?")
            asked = events[-1].task
            assert asked.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
            assert asked.status.message.parts[0].text == "Which account?"
            events = await send(client, "DE89370400440532013000", task_id=asked.id, context_id=asked.context_id)
            assert events[-1].task.id == asked.id
            assert events[-1].task.status.state == TaskState.TASK_STATE_COMPLETED
            # Listed: this agent's tasks of this subject, newest first.
            listed = await client.list_tasks(ListTasksRequest(page_size=10))
            assert [t.id for t in listed.tasks] == [asked.id, task.id] and listed.total_size == 2
            # Cancel: a task waiting for input is cancelled; a finished one cannot be.
            events = await send(client, "ask: Cancel me?")
            waiting = events[-1].task
            cancelled = await client.cancel_task(CancelTaskRequest(id=waiting.id))
            assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
            try:
                await client.cancel_task(CancelTaskRequest(id=task.id))
                raise AssertionError("a completed task was cancelled")
            except Exception as exc:  # the client raises the protocol's error
                assert "cancel" in str(exc).lower(), exc
        finally:
            await client.close()
            await raw.aclose()
        # The run behind the task, in Heddle's own API: origin a2a, charged, traced.
        trace = http.get(f"/v1/loom/runs/{task.id}/trace", headers=h).json()["data"]
        assert trace["origin"] == "a2a" and trace["state"] == "closed" and trace["cost_credits"] > 0

    asyncio.run(scenario())


def test_streaming(server, tenant):
    agent = tenant.add_agent(PUBLISHED)
    h = tenant.headers("web:a2a-stream")

    async def scenario():
        client, raw, card = await client_for(server.base_url, agent, h, streaming=True)
        try:
            events = await send(client, "hello there")
            kinds = [e.WhichOneof("payload") for e in events]
            assert kinds[0] == "task" and "artifact_update" in kinds, kinds
            # A new task starts as submitted, however far the run got before the stream's first
            # read (eager tasks may finish the scripted reply by then); its pieces follow.
            assert events[0].task.status.state == TaskState.TASK_STATE_SUBMITTED
            assert not events[0].task.artifacts
            text = "".join(e.artifact_update.artifact.parts[0].text for e in events
                           if e.WhichOneof("payload") == "artifact_update")
            assert text.startswith("I am the scripted model")
            assert events[-1].task.status.state == TaskState.TASK_STATE_COMPLETED
        finally:
            await client.close()
            await raw.aclose()

    asyncio.run(scenario())


def test_v03_json_rpc(server, tenant, http):
    """v0.3 clients on the same endpoint: message/send and tasks/get in the v0.3 shapes."""
    agent = tenant.add_agent(PUBLISHED)
    h = tenant.headers("web:v03")
    body = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": {
        "kind": "message", "messageId": "m-1", "role": "user", "parts": [{"kind": "text", "text": "hello"}]}}}
    r = rpc(http, agent, h, body)
    assert r.status_code == 200, r.text
    result = r.json()["result"]
    assert result["kind"] == "task" and result["status"]["state"] == "completed", result
    r = rpc(http, agent, h, {"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {"id": result["id"]}})
    assert r.json()["result"]["id"] == result["id"]


def test_bad_input(server, tenant, http):
    agent = tenant.add_agent(PUBLISHED)
    h = tenant.headers("web:bad")
    # Malformed JSON-RPC: not JSON, no method, not 2.0.
    r = rpc(http, agent, h, b"{nope")
    assert r.status_code == 200 and r.json()["error"]["code"] == -32700  # parse error, as JSON-RPC says
    r = rpc(http, agent, h, {"jsonrpc": "1.0", "id": 1, "method": "GetTask", "params": {}})
    assert r.json()["error"]["code"] == -32600
    # An unknown method.
    r = rpc(http, agent, h, {"jsonrpc": "2.0", "id": 1, "method": "tasks/teleport", "params": {}}, version="1.0")
    assert r.json()["error"]["code"] == -32601
    # Bad params.
    r = rpc(http, agent, h, {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": 5}},
            version="1.0")
    assert r.json()["error"]["code"] == -32602
    # A task of another workspace (and of another subject) is not found.
    other = make_tenant(server)
    other_agent = other.add_agent(PUBLISHED)
    body = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": {
        "kind": "message", "messageId": "m-1", "role": "user", "parts": [{"kind": "text", "text": "hi"}]}}}
    theirs = rpc(http, other_agent, other.headers("web:x"), body).json()["result"]["id"]
    r = rpc(http, agent, h, {"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {"id": theirs}})
    assert r.json()["error"]["code"] == -32001  # TaskNotFound
    mine = rpc(http, agent, h, body).json()["result"]["id"]
    r = rpc(http, agent, tenant.headers("web:someone-else"),
            {"jsonrpc": "2.0", "id": 3, "method": "tasks/get", "params": {"id": mine}})
    assert r.json()["error"]["code"] == -32001
    # Cancel of a finished task.
    r = rpc(http, agent, h, {"jsonrpc": "2.0", "id": 4, "method": "tasks/cancel", "params": {"id": mine}})
    assert r.json()["error"]["code"] == -32002  # TaskNotCancelable
    # Another workspace's agent, an unpublished agent, an unknown one: 404, the card too.
    unpublished = tenant.add_agent(SCRIPTED_AGENT)
    for name in (other_agent, unpublished, "agent_nosuch"):
        r = rpc(http, name, h, body)
        assert r.status_code == 404 and r.json()["error"]["code"] == "agent_not_found"
        r = http.get(f"/v1/a2a/{name}/.well-known/agent-card.json", headers=h)
        assert r.status_code == 404 and r.json()["error"]["code"] == "agent_not_found"
    # Auth as /v1: no key; no subject for the JSON-RPC endpoint (the card needs none).
    assert rpc(http, agent, {}, body).status_code == 401
    r = rpc(http, agent, tenant.headers(None), body)
    assert r.status_code == 400 and r.json()["error"]["code"] == "subject_required"
    assert http.get(f"/v1/a2a/{agent}/.well-known/agent-card.json", headers=tenant.headers(None)).status_code == 200
