"""A client generated from /openapi.json by a standard generator (openapi-python-client) runs a
whole conversation against a real server: typed bodies, awaiting_input, an outcome, errors."""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

SERVER_SETTINGS = {"outbound_timeout": 2.0}


@pytest.fixture(scope="module")
def generated(server, tmp_path_factory):
    """`openapi-python-client generate` on the live server's document, imported as `heddle_api`."""
    out = tmp_path_factory.mktemp("gen")
    with server.client() as c:
        (out / "openapi.json").write_text(json.dumps(c.get("/openapi.json").json()))
    tool = shutil.which("openapi-python-client", path=str(Path(sys.executable).parent)) or shutil.which(
        "openapi-python-client")
    assert tool, "openapi-python-client is a dev dependency"
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    subprocess.run([tool, "generate", "--path", str(out / "openapi.json"), "--meta", "none",
                    "--output-path", str(out / "heddle_api")], check=True, env=env, capture_output=True, timeout=120)
    sys.path.insert(0, str(out))
    for name in [m for m in sys.modules if m == "heddle_api" or m.startswith("heddle_api.")]:
        del sys.modules[name]  # a module generated for the other database backend
    try:
        yield importlib.import_module("heddle_api")
    finally:
        sys.path.remove(str(out))


def mod(name: str):
    return importlib.import_module(f"heddle_api.{name}")


def wait(client, run_id, subject, states=("closed", "failed", "awaiting_input", "awaiting_outcome")):
    get_run = mod("api.loom.get_run")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        run = get_run.sync(run_id, client=client, service_subject=subject).data
        if run.state.value in states:
            return run
        time.sleep(0.02)
    raise AssertionError(f"run {run_id} still {run.state}")


def test_generated_client_full_conversation(generated, server, tenant, toolhost):
    client = generated.AuthenticatedClient(base_url=server.base_url, token=tenant.secret)
    models = mod("models")
    loom = "api.loom."
    ws = mod("api.workspace.current_workspace").sync(client=client)
    assert isinstance(ws, models.WorkspaceEnvelope) and ws.data.id == tenant.workspace_id

    found = mod("api.identify.identify").sync(client=client, body=models.IdentifyRequest(identifier="DEUTDEFF"))
    assert isinstance(found.data, models.IdentifyResult) and found.data.result == models.ResultKind.IDENTIFIED
    assert found.data.institution.address.country == "DE"

    subject = "web:generated"
    thread = mod(loom + "create_thread").sync(client=client, body=models.CreateThread(agent=tenant.agent),
                                               service_subject=subject)
    assert isinstance(thread.data, models.Thread) and thread.data.subject == subject

    post = mod(loom + "post_message")
    accepted = post.sync(str(thread.data.id), client=client, body=models.PostMessage(content="ask: Which account?"),
                         service_subject=subject)
    assert isinstance(accepted.data, models.MessageAccepted)
    run = wait(client, str(accepted.data.run_id), subject)
    assert run.state == models.RunState.AWAITING_INPUT
    assert isinstance(run.pending, models.InputPending) and run.pending.question == "Which account?"
    post.sync(str(thread.data.id), client=client, body=models.PostMessage(content="The savings one"),
              service_subject=subject)
    run = wait(client, str(run.id), subject, states=("closed", "failed"))
    assert run.terminal and run.latest_message.content == "You said: The savings one"

    accepted = post.sync(str(thread.data.id), client=client, service_subject=subject,
                         body=models.PostMessage(content='call: transfer {"amount": 5}'))
    run = wait(client, str(accepted.data.run_id), subject)
    assert run.state == models.RunState.AWAITING_OUTCOME and isinstance(run.pending, models.OutcomePending)
    [call] = run.pending.tool_calls
    done = mod(loom + "post_outcome").sync(
        str(run.id), client=client, service_subject=subject,
        body=models.PostOutcome(tool_call_id=str(call.id), state=models.OutcomeState.OCCURRED))
    assert isinstance(done.data, models.Run)
    run = wait(client, str(run.id), subject, states=("closed", "failed"))
    assert run.state == models.RunState.CLOSED
    trace = mod(loom + "get_trace").sync(str(run.id), client=client, service_subject=subject)
    assert isinstance(trace.data, models.Trace)
    assert trace.data.turns[0].tool_calls[0].outcome.state == models.OutcomeState.OCCURRED

    page = mod(loom + "list_messages").sync(str(thread.data.id), client=client, service_subject=subject)
    assert [m.role.value for m in page.data.items][:2] == ["user", "assistant"]

    missing = mod(loom + "get_run").sync(str(uuid.uuid4()), client=client, service_subject=subject)
    assert isinstance(missing, models.ErrorEnvelope) and missing.error.code == "not_found"
    bad = mod("api.workspace.current_workspace").sync(
        client=generated.AuthenticatedClient(base_url=server.base_url, token="sk_live_" + "x" * 43))
    assert isinstance(bad, models.ErrorEnvelope) and bad.error.code == "unauthorized"
