"""AG-UI with Heddle's hosted tools (a real loopback tool host): approvals as interrupts answered
by `resume`, a run that keeps working after its client hung up and is followed again by the same
message, and a direct session token (auth exactly as /v1)."""

from __future__ import annotations

import json
import threading
import time

import pytest

from interop.a2a_kit import rpc
from interop.agui_kit import assistant, finished, run_input, stream, types, user
from run_control.run_control_kit import AGENT_TOOLS, ToolHost

SERVER_SETTINGS = {"sse_heartbeat_seconds": 0.5, "sse_poll_seconds": 0.2, "sse_max_streams_per_subject": 2}


@pytest.fixture
def toolhost(tenant):
    from heddle.workspaces import service as ws_service

    ws = tenant.run(lambda s: ws_service.get_workspace(s, tenant.workspace_id))
    host = ToolHost(request_secret=ws.request_secret, key_id=tenant.key_id).start()
    tenant.update(mint_url=f"{host.base_url}/mint", jwks_json=host.jwks)

    async def connect(s):
        await ws_service.create_connection(s, tenant.workspace_id, "bank", host.base_url)

    tenant.run(connect)
    tenant.agent = tenant.add_agent({"name": "banker", "model_class": "scripted", "instructions": "",
                                     "tools": AGENT_TOOLS})
    yield host
    host.release()
    host.stop()


@pytest.mark.parametrize("mode", ["relay", "direct"])
def test_approval_interrupt_then_resume(http, tenant, toolhost, mode):
    h = tenant.headers("web:appr") if mode == "relay" else {"Authorization": f"Bearer {toolhost.mint_token('web:appr')}"}
    status, events = stream(http, tenant.agent, h, run_input(f"t-appr-{mode}", user('call: pay {"amount": 5}')))
    assert status == 200, events
    end = finished(events)
    assert end["outcome"]["type"] == "interrupt", end
    interrupt = end["outcome"]["interrupts"][0]
    assert interrupt["reason"] == "tool_approval" and interrupt["toolCallId"] == interrupt["id"]
    assert "TOOL_CALL_START" in types(events)  # the call the UI is asked about
    status, events = stream(http, tenant.agent, h, run_input(
        f"t-appr-{mode}", user("x"), assistant("y"),
        resume=[{"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}]))
    assert status == 200, events
    assert finished(events)["type"] == "RUN_FINISHED"
    result = [e for e in events if e["type"] == "TOOL_CALL_RESULT"]
    assert result and json.loads(result[0]["content"])["result"] == {"paid": 5}
    assert "TOOL_CALL_START" not in types(events)  # told by the first stream: only its result now
    assert len(toolhost.calls("/tools/pay")) == 1
    # Declined next time: the call is not made.
    status, events = stream(http, tenant.agent, h, run_input(f"t-appr-{mode}", user('call: pay {"amount": 7}')))
    interrupt = finished(events)["outcome"]["interrupts"][0]
    status, events = stream(http, tenant.agent, h, run_input(
        f"t-appr-{mode}", user("x"), assistant("y"),
        resume=[{"interruptId": interrupt["id"], "status": "cancelled"}]))
    result = [e for e in events if e["type"] == "TOOL_CALL_RESULT"]
    assert json.loads(result[0]["content"])["status"] == "declined"
    assert len(toolhost.calls("/tools/pay")) == 1
    # A malformed approval payload is refused before anything is written.
    status, events = stream(http, tenant.agent, h, run_input(f"t-appr-{mode}", user('call: pay {"amount": 9}')))
    interrupt = finished(events)["outcome"]["interrupts"][0]
    status, body = stream(http, tenant.agent, h, run_input(
        f"t-appr-{mode}", user("x"), assistant("y"),
        resume=[{"interruptId": interrupt["id"], "status": "resolved", "payload": {"yes": 1}}]))
    assert status == 400 and body["error"]["code"] == "invalid_request"


def test_hung_up_client_then_the_same_message_follows_the_run(http, tenant, toolhost):
    h = tenant.headers("web:slow")
    body = run_input("t-slow", user('call: slow {}'))
    status, events = stream(http, tenant.agent, h, body, limit=2)  # hangs up: the tool is still working
    run_id = events[1]["value"]["run_id"]
    toolhost.wait_for_call("/tools/slow")
    run = http.get(f"/v1/loom/runs/{run_id}", headers=h).json()["data"]
    assert run["state"] == "running"  # the run goes on without its client
    threading.Timer(0.5, toolhost.release).start()
    status, events = stream(http, tenant.agent, h, body)  # the same message again: follows that run
    assert status == 200 and events[1]["value"]["run_id"] == run_id
    kinds = types(events)
    assert "TOOL_CALL_RESULT" in kinds and finished(events)["type"] == "RUN_FINISHED"
    assert len(toolhost.calls("/tools/slow")) == 1  # not posted twice


def test_protocol_streams_are_counted_with_the_event_streams(http, tenant, toolhost, server):
    """AG-UI and A2A streams count against HEDDLE_SSE_MAX_STREAMS_PER_SUBJECT (2 here): a third is 429."""
    h = tenant.headers("web:cap")
    second = tenant.add_agent({"name": "banker2", "model_class": "scripted", "instructions": "", "tools": AGENT_TOOLS,
                               "a2a": {"publish": True}})
    held = []
    for agent, thread in ((tenant.agent, "cap-1"), (second, "cap-2")):
        reader = threading.Thread(target=lambda a=agent, t=thread: held.append(
            stream(server.client(), a, h, run_input(t, user("call: slow {}")), timeout=30)), daemon=True)
        reader.start()
    toolhost.wait_for_call("/tools/slow", n=2)
    status, body = stream(http, tenant.agent, h, run_input("cap-1", user("again")))
    assert status == 429 and body["error"]["code"] == "rate_limited"
    r = rpc(http, second, h, {"jsonrpc": "2.0", "id": 1, "method": "message/stream", "params": {"message": {
        "kind": "message", "messageId": "m-cap", "role": "user", "parts": [{"kind": "text", "text": "hi"}]}}})
    assert r.status_code == 429 and r.json()["error"]["code"] == "rate_limited"
    toolhost.release()
    deadline = time.monotonic() + 30
    while len(held) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [finished(events)["type"] for _, events in held] == ["RUN_FINISHED", "RUN_FINISHED"]


def test_a2a_approval_answered_with_a_data_part(tenant, toolhost, server):
    """A2A: a task waiting for an approval is input-required, its calls in a data part; a message
    to the task with `{"tool_call_id", "approved"}` answers it, and the call is made."""
    import asyncio

    from a2a.types.a2a_pb2 import Message, Part, Role, SendMessageRequest, TaskState
    from google.protobuf.json_format import MessageToDict

    from interop.a2a_kit import client_for, send

    published = tenant.add_agent({"name": "payer", "model_class": "scripted", "instructions": "",
                                  "tools": AGENT_TOOLS, "a2a": {"publish": True}})

    async def scenario():
        client, raw, _ = await client_for(server.base_url, published, tenant.headers("web:a2a-appr"))
        try:
            task = (await send(client, 'call: pay {"amount": 3}'))[-1].task
            assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
            data = MessageToDict(task.status.message.parts[1].data)
            assert data["pending"] == "approval" and data["tool_calls"][0]["name"] == "pay"
            answer = Part()
            answer.data.struct_value.update({"tool_call_id": data["tool_calls"][0]["tool_call_id"], "approved": True})
            request = SendMessageRequest(message=Message(message_id="m-approve", role=Role.ROLE_USER, parts=[answer],
                                                         task_id=task.id, context_id=task.context_id))
            done = [e async for e in client.send_message(request)][-1].task
            assert done.id == task.id and done.status.state == TaskState.TASK_STATE_COMPLETED, done
        finally:
            await client.close()
            await raw.aclose()

    asyncio.run(scenario())
    assert len(toolhost.calls("/tools/pay")) == 1
