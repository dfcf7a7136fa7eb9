"""OpenTelemetry end to end: `heddle serve` as a subprocess configured only by the standard
`OTEL_*` variables exports its spans over OTLP/HTTP to a real receiver started here, which
decodes the protobuf. One request carrying a W3C `traceparent` and an `X-Request-Id` starts a run
whose model (llmock, OpenAI-compatible) is called through the provider layer; its webhook goes
out through the SSRF-guarded client with the trace context propagated."""

from __future__ import annotations

import json
import secrets

import httpx
import pytest
from typer.testing import CliRunner

from heddle.cli.main import app as cli
from observability.otlp_receiver import OtlpReceiver
from support.loom import open_thread, wait_run
from support.processes import serve_process
from webhooks.webhook_testkit import Receiver

pytestmark = pytest.mark.slow

SERVER_KIND = 2  # SpanKind in the OTLP protobuf: 1 internal, 2 server, 3 client, 4 producer


@pytest.fixture
def otlp():
    receiver = OtlpReceiver()
    yield receiver
    receiver.close()


@pytest.fixture
def hooks():
    receiver = Receiver()
    yield receiver
    receiver.close()


def test_a_run_exports_request_model_and_webhook_spans(tmp_path, llmock, otlp, hooks):
    from support.server import LiveServer
    from support.tenants import make_tenant

    classes = json.dumps({"remote": {"provider": "openai", "model": "gpt-4o-mini",
                                     "base_url": llmock.base_url("openai"), "api_key": "sk-llmock", "max_retries": 1}})
    db_url = f"sqlite+aiosqlite:///{tmp_path / 'otel.db'}"
    seed = LiveServer(database_url=db_url, model_classes=classes).start()  # migrates; no OTEL_* here
    tenant = make_tenant(seed)
    agent = tenant.add_agent({"name": "teller", "model_class": "remote", "instructions": "Answer.", "tools": []},
                             classes=("remote",))
    seed.stop()
    result = CliRunner().invoke(cli, ["workspace", "update", tenant.workspace_id, "--webhook-url", hooks.url,
                                      "--database-url", db_url, "--json"])
    assert result.exit_code == 0, result.output

    llmock.reply("Your balance is 42 euros.")
    proc, base = serve_process(db_url, env={
        "HEDDLE_MODEL_CLASSES": classes, "HEDDLE_RATE_LIMIT_PER_SUBJECT": "off", "HEDDLE_WEBHOOK_POLL_SECONDS": "0.1",
        "OTEL_EXPORTER_OTLP_ENDPOINT": otlp.endpoint, "OTEL_SERVICE_NAME": "heddle-under-test",
        "OTEL_BSP_SCHEDULE_DELAY": "50", "HEDDLE_LOG_LEVEL": "INFO"})
    trace_id, parent_span = secrets.token_hex(16), secrets.token_hex(8)
    try:
        with httpx.Client(base_url=base, timeout=10) as http:
            h = tenant.headers("web:otel")
            thread = open_thread(http, h, agent)
            sent = http.post(f"/v1/loom/threads/{thread}/messages", json={"content": "balance please"},
                             headers={**h, "traceparent": f"00-{trace_id}-{parent_span}-01",
                                      "X-Request-Id": "lb-7f3a.req:42"})
            assert sent.status_code == 202, sent.text
            assert sent.headers["Request-Id"] == "lb-7f3a.req:42"  # the caller's valid id is kept
            run = wait_run(http, h, sent.json()["data"]["run_id"], states=("closed", "failed"))
            assert run["state"] == "closed", run
            trace = http.get(f"/v1/loom/runs/{run['id']}/trace", headers=h).json()["data"]
            hook = hooks.wait_for(1)[0]
        spans = otlp.wait_for(lambda found: any(s.name.startswith("webhook ") for s in found)
                              and any(s.name.startswith("chat ") for s in found)
                              and any(s.name.startswith("invoke_agent ") for s in found))
    finally:
        proc.terminate()
        proc.wait(10)
    # The access log line (console format under --dev) carries the kept id and the trace id.
    (access,) = [line for line in proc.stderr.read().decode().splitlines() if "request_id=lb-7f3a.req:42" in line]
    assert f"trace_id={trace_id}" in access and "status=202" in access

    assert {s.service for s in spans} == {"heddle-under-test"}
    (request,) = [s for s in spans if s.trace_id == trace_id and s.kind == SERVER_KIND]
    assert request.name == "POST /v1/loom/threads/{thread_id}/messages" and request.parent_id == parent_span
    assert request.attributes["heddle.request_id"] == "lb-7f3a.req:42"
    assert request.attributes["http.response.status_code"] == 202

    # request -> run -> model call: the run's span is a child of the request that created it
    # (through the traceparent saved with the run), the model call a child of the run's span.
    (run_span,) = [s for s in spans if s.name == "invoke_agent teller"]
    assert (run_span.trace_id, run_span.parent_id) == (trace_id, request.span_id)
    assert run_span.attributes["heddle.run.id"] == run["id"] and run_span.attributes["gen_ai.agent.id"] == agent
    assert run_span.attributes["gen_ai.operation.name"] == "invoke_agent"
    (chat,) = [s for s in spans if s.name == "chat gpt-4o-mini"]
    assert chat.trace_id == trace_id  # the run's model call joins the trace of the request that started it
    assert chat.parent_id == run_span.span_id
    (turn,) = trace["turns"]
    assert chat.attributes["gen_ai.system"] == "openai" and chat.attributes["gen_ai.request.model"] == "gpt-4o-mini"
    assert chat.attributes["gen_ai.usage.input_tokens"] == turn["input_tokens"] > 0
    assert chat.attributes["gen_ai.usage.output_tokens"] == turn["output_tokens"] > 0
    assert chat.attributes["gen_ai.response.finish_reasons"] == ["stop"]
    assert chat.attributes["gen_ai.response.model"]

    (webhook,) = [s for s in spans if s.name == "webhook run.closed"]
    (post,) = [s for s in spans if s.parent_id == webhook.span_id and s.name == "POST"]
    assert post.attributes["http.response.status_code"] == 200 and post.attributes["url.full"].endswith("/hooks/heddle")
    version, hook_trace, hook_parent, flags = hook.headers["traceparent"].split("-")
    assert (version, hook_trace, hook_parent) == ("00", post.trace_id, post.span_id)  # propagated to the receiver
    assert int(flags, 16) & 1  # sampled
