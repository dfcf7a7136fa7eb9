"""ag-ui-validate (PyPI), the AG-UI conformance validator, against the live `/v1/agui` endpoint:
no error-level finding for a plain reply, a run with a tool call, a run that asks the user (and
its resume), and a run that stops on a front-end tool call. Its CLI is run once too, as a
person would run it against a server."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

from ag_ui_validate.transport import TransportOptions, validate_endpoint

from interop.agui_kit import assistant, finished, run_input, stream, user
from support.loom import SCRIPTED_AGENT

SERVER_SETTINGS = {"sse_heartbeat_seconds": 0.5, "sse_poll_seconds": 0.2}
WEATHER = {"name": "show_weather", "description": "Show the weather card.",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}


def validate(server, agent: str, headers: dict, body: dict):
    result = asyncio.run(validate_endpoint(f"{server.base_url}/v1/agui/{agent}",
                                           TransportOptions(input=body, headers=headers, timeout_ms=20_000)))
    errors = [d for d in result.report.diagnostics if d.severity == "error"]
    assert result.status == 200, result.transport_error
    assert not errors, [(d.rule, d.message) for d in errors]
    assert not result.report.internal_errors, result.report.internal_errors
    assert result.event_count >= 4
    print(body["threadId"], [(d.rule, d.severity, d.message) for d in result.report.diagnostics])
    return result


def test_plain_reply_tool_call_and_question_validate(server, tenant, http):
    agent = tenant.add_agent(SCRIPTED_AGENT)
    h = tenant.headers("web:validator")
    validate(server, agent, h, run_input("v-plain", user("Hello! Please respond briefly.")))
    validate(server, agent, h, run_input("v-tool", user("Where does DEUTDEFF go?")))
    validate(server, agent, h, run_input("v-ask", user("ask: Which account?")))
    # A question's resume: the interrupt taken from the test's own client, the resume validated.
    status, events = stream(http, agent, tenant.headers("web:validator2"),
                            run_input("v-ask2", user("ask: Which bank?")))
    interrupt_id = finished(events)["outcome"]["interrupts"][0]["id"]
    validate(server, agent, tenant.headers("web:validator2"), run_input(
        "v-ask2", user("ask: Which bank?"), assistant("Which bank?"),
        resume=[{"interruptId": interrupt_id, "status": "resolved", "payload": "DEUTDEFF"}]))
    validate(server, agent, tenant.headers("web:validator3"),
             run_input("v-fe", user('call: show_weather {"city": "Accra"}'), tools=[WEATHER]))


def test_the_cli_against_the_live_endpoint(server, tenant):
    agent = tenant.add_agent(SCRIPTED_AGENT)
    cli = Path(sys.executable).parent / "ag-ui-validate"
    proc = subprocess.run([str(cli), f"{server.base_url}/v1/agui/{agent}", "--json", "--timeout", "20",
                           "--header", f"Authorization: Bearer {tenant.secret}",
                           "--header", "Service-Subject: web:cli"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
