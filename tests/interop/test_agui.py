"""POST /v1/agui/{agent_id}: Heddle agents over AG-UI, against the real server (SQLite and PostgreSQL).

A plain reply, Heddle's own tool (identify), a question to the user (interrupt, then resume), an
the caller's front-end tools (a call the run waits on, answered by
the next input's tool message), a client that hangs up mid-stream, and bad input.
"""

from __future__ import annotations

import json

from interop.agui_kit import assistant, finished, run_input, stream, text_of, tool_result, types, user
from support.loom import SCRIPTED_AGENT, wait_run

SERVER_SETTINGS = {"sse_heartbeat_seconds": 0.5, "sse_poll_seconds": 0.2}
WEATHER = {"name": "show_weather", "description": "Show the weather card in the page.",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}


def test_plain_reply(http, tenant):
    agent = tenant.add_agent(SCRIPTED_AGENT)
    status, events = stream(http, agent, tenant.headers("web:agui"), run_input("t-plain", user("hello")))
    assert status == 200, events
    kinds = types(events)
    assert kinds[0] == "RUN_STARTED" and events[0]["threadId"] == "t-plain"
    assert kinds[1] == "CUSTOM" and events[1]["name"] == "heddle.run"
    assert "TEXT_MESSAGE_START" in kinds and "TEXT_MESSAGE_END" in kinds
    assert text_of(events).startswith("I am the scripted model")
    end = finished(events)
    assert end["type"] == "RUN_FINISHED" and end["runId"] == events[0]["runId"]
    run_id = events[1]["value"]["run_id"]
    run = http.get(f"/v1/loom/runs/{run_id}", headers=tenant.headers("web:agui")).json()["data"]
    assert run["state"] == "closed" and run["origin"] == "agui"
    trace = http.get(f"/v1/loom/runs/{run_id}/trace", headers=tenant.headers("web:agui")).json()["data"]
    assert trace["origin"] == "agui" and trace["cost_credits"] > 0  # charged like any run


def test_heddle_tool_call_and_result(http, tenant):
    agent = tenant.add_agent(SCRIPTED_AGENT)
    status, events = stream(http, agent, tenant.headers("web:agui"), run_input("t-tool", user("Where does DEUTDEFF go?")))
    assert status == 200, events
    kinds = types(events)
    start = kinds.index("TOOL_CALL_START")
    assert kinds[start:start + 4] == ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT"]
    assert events[start]["toolCallName"] == "identify"
    assert json.loads(events[start + 1]["delta"]) == {"identifier": "DEUTDEFF"}
    assert json.loads(events[start + 3]["content"])["status"] == "succeeded"
    assert kinds.index("TEXT_MESSAGE_START") > start  # the reply after the call
    assert finished(events)["type"] == "RUN_FINISHED"


def test_ask_user_interrupt_and_resume(http, tenant):
    agent = tenant.add_agent(SCRIPTED_AGENT)
    h = tenant.headers("web:ask")
    status, events = stream(http, agent, h, run_input("t-ask", user("ask: Which account?")))
    assert status == 200, events
    end = finished(events)
    assert end["outcome"]["type"] == "interrupt"
    interrupt = end["outcome"]["interrupts"][0]
    assert interrupt["reason"] == "input_required" and interrupt["message"] == "Which account?"
    assert text_of(events) == "Which account?"  # the question is shown as the agent's message
    status, events = stream(http, agent, h, run_input(
        "t-ask", user("ask: Which account?"), assistant("Which account?"),
        resume=[{"interruptId": interrupt["id"], "status": "resolved", "payload": "DE89370400440532013000"}]))
    assert status == 200, events
    assert finished(events)["type"] == "RUN_FINISHED"
    assert "outcome" not in finished(events) or finished(events)["outcome"]["type"] == "success"
    # The same interrupt answered again: nothing waits for it any more.
    status, body = stream(http, agent, h, run_input(
        "t-ask", user("x"), assistant("y"),
        resume=[{"interruptId": interrupt["id"], "status": "resolved", "payload": "again"}]))
    assert status == 409 and body["error"]["code"] == "run_not_awaiting_outcome"


def test_ask_user_answered_by_a_user_message(http, tenant):
    agent = tenant.add_agent(SCRIPTED_AGENT)
    h = tenant.headers("web:ask2")
    status, events = stream(http, agent, h, run_input("t-ask2", user("ask: Which bank?")))
    assert finished(events)["outcome"]["type"] == "interrupt"
    run_id = events[1]["value"]["run_id"]
    status, events = stream(http, agent, h, run_input("t-ask2", user("ask: Which bank?"), assistant("Which bank?"),
                                                      user("DEUTDEFF")))
    assert status == 200 and events[1]["value"]["run_id"] == run_id  # the same run, answered
    assert finished(events)["type"] == "RUN_FINISHED" and "DEUTDEFF" in text_of(events)


def test_front_end_tool_round_trip(http, tenant):
    agent = tenant.add_agent(SCRIPTED_AGENT)
    h = tenant.headers("web:fe")
    first = run_input("t-fe", user('call: show_weather {"city": "Lagos"}'), tools=[WEATHER])
    status, events = stream(http, agent, h, first)
    assert status == 200, events
    kinds = types(events)
    start = kinds.index("TOOL_CALL_START")
    call_id = events[start]["toolCallId"]
    assert events[start]["toolCallName"] == "show_weather"
    assert json.loads(events[start + 1]["delta"]) == {"city": "Lagos"}
    assert "TOOL_CALL_RESULT" not in kinds  # the caller answers it
    end = finished(events)
    assert end["type"] == "RUN_FINISHED" and end["outcome"]["pendingToolCallIds"] == [call_id]
    run_id = events[1]["value"]["run_id"]
    assert http.get(f"/v1/loom/runs/{run_id}", headers=h).json()["data"]["state"] == "awaiting_outcome"
    call = {"id": call_id, "type": "function", "function": {"name": "show_weather", "arguments": '{"city":"Lagos"}'}}
    status, events = stream(http, agent, h, run_input(
        "t-fe", user('call: show_weather {"city": "Lagos"}'), assistant(tool_calls=[call]),
        tool_result(call_id, "shown: 31C, sunny"), tools=[WEATHER]))
    assert status == 200, events
    assert finished(events)["type"] == "RUN_FINISHED" and events[1]["value"]["run_id"] == run_id
    trace = http.get(f"/v1/loom/runs/{run_id}/trace", headers=h).json()["data"]
    calls = [c for t in trace["turns"] for c in t["tool_calls"]]
    assert calls[0]["kind"] == "client" and calls[0]["outcome"]["detail"] == {"result": "shown: 31C, sunny"}
    # The same result again: the call no longer waits.
    status, body = stream(http, agent, h, run_input(
        "t-fe", user("x"), assistant(tool_calls=[call]), tool_result(call_id, "again"), tools=[WEATHER]))
    assert status == 409 and body["error"]["code"] == "run_not_awaiting_outcome"


def test_disconnect_mid_stream_leaves_the_run_and_a_new_request_follows_it(http, tenant):
    agent = tenant.add_agent(SCRIPTED_AGENT)
    h = tenant.headers("web:gone")
    body = run_input("t-gone", user("Where does 021000021 go?"))
    status, events = stream(http, agent, h, body, limit=2)  # hangs up after RUN_STARTED and CUSTOM
    assert status == 200
    run_id = events[1]["value"]["run_id"]
    run = wait_run(http, h, run_id, states=("closed",))
    assert run["state"] == "closed"  # the run went on without its client
    # A new request for the same thread and message while it was running follows it; once it is
    # closed, a new stream of the thread's run is a new run (the message again).
    status, again = stream(http, agent, h, body)
    assert status == 200 and finished(again)["type"] == "RUN_FINISHED"


def test_bad_input(http, tenant, server):
    agent = tenant.add_agent(SCRIPTED_AGENT)
    h = tenant.headers("web:bad")
    # Malformed RunAgentInput: no messages; a message of an unknown role; not an object.
    status, body = stream(http, agent, h, {"threadId": "t", "runId": "r"})
    assert status == 400 and body["error"]["code"] == "invalid_request"
    assert any(d["field"] == "messages" for d in body["error"]["details"])
    status, body = stream(http, agent, h, run_input("t", {"id": "1", "role": "wizard", "content": "x"}))
    assert status == 400 and body["error"]["code"] == "invalid_request"
    status, body = stream(http, agent, h, [1, 2])
    assert status == 400 and body["error"]["code"] == "invalid_request"
    status, body = stream(http, agent, h, b"{not json")
    assert status == 400 and body["error"]["code"] == "invalid_request"
    # Nothing after the agent's last message.
    status, body = stream(http, agent, h, run_input("t", user("hi"), assistant("hello")))
    assert status == 400 and body["error"]["code"] == "agui_nothing_to_run"
    # Unknown agent, and another workspace's agent.
    status, body = stream(http, "agent_nosuch", h, run_input("t", user("hi")))
    assert status == 404 and body["error"]["code"] == "agent_not_found"
    from support.tenants import make_tenant
    other = make_tenant(server)
    other_agent = other.add_agent(SCRIPTED_AGENT)
    status, body = stream(http, other_agent, h, run_input("t", user("hi")))
    assert status == 404 and body["error"]["code"] == "agent_not_found"
    # Another workspace's thread id (and another subject's).
    status, events = stream(http, other_agent, other.headers("web:x"), run_input("t-other", user("hi")))
    other_thread = events[1]["value"]["thread_id"]
    status, body = stream(http, agent, h, run_input(other_thread, user("hi")))
    assert status == 404 and body["error"]["code"] == "not_found"
    # A front-end tool result for a call that is not waiting.
    status, body = stream(http, agent, h, run_input("t", user("hi"), assistant("x"),
                                                    tool_result("4b0d6c1e-6a53-4a53-9d0c-2f5a8f0e7c11", "r")))
    assert status == 409 and body["error"]["code"] == "run_not_awaiting_outcome"
    # Auth exactly as /v1: no key, no subject.
    status, body = stream(http, agent, {}, run_input("t", user("hi")))
    assert status == 401 and body["error"]["code"] == "unauthorized"
    status, body = stream(http, agent, tenant.headers(None), run_input("t", user("hi")))
    assert status == 400 and body["error"]["code"] == "subject_required"


def test_no_double_post_while_running(http, tenant):
    """The thread busy with another message: 409 run_active (nothing half-written)."""
    agent = tenant.add_agent(SCRIPTED_AGENT)
    h = tenant.headers("web:busy")
    status, events = stream(http, agent, h, run_input("t-busy", user('call: show_weather {"city": "Oslo"}'),
                                                      tools=[WEATHER]))
    assert finished(events)["outcome"]["pendingToolCallIds"]
    status, body = stream(http, agent, h, run_input("t-busy", user("something else")))
    assert status == 409 and body["error"]["code"] == "run_active"
