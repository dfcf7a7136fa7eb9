"""A run queued behind a busy thread (`if_busy: enqueue`) joins the trace of the request that
queued it, like any other run: `heddle serve` as a subprocess exports its spans over OTLP/HTTP to
the real receiver of tests/observability, and the queued run's `invoke_agent` span (started by
the executor once the run ahead of it closed) is a child of the second request's server span."""

from __future__ import annotations

import json
import secrets

import httpx
import pytest

from observability.otlp_receiver import OtlpReceiver
from support.loom import open_thread, wait_run
from support.processes import serve_process

pytestmark = pytest.mark.slow

SERVER_KIND = 2  # SpanKind in the OTLP protobuf


@pytest.fixture
def otlp():
    receiver = OtlpReceiver()
    yield receiver
    receiver.close()


def test_a_queued_run_exports_its_spans_into_the_queuing_request_trace(tmp_path, llmock, otlp):
    from support.server import LiveServer
    from support.tenants import make_tenant

    classes = json.dumps({"remote": {"provider": "openai", "model": "gpt-4o-mini",
                                     "base_url": llmock.base_url("openai"), "api_key": "sk-llmock", "max_retries": 0}})
    db_url = f"sqlite+aiosqlite:///{tmp_path / 'queued.db'}"
    seed = LiveServer(database_url=db_url, model_classes=classes).start()  # migrates; no OTEL_* here
    tenant = make_tenant(seed)
    agent = tenant.add_agent({"name": "teller", "model_class": "remote", "instructions": "Answer.", "tools": []},
                             classes=("remote",))
    seed.stop()

    llmock.delay(1.5, times=1)  # the first run is still thinking when the second message is posted
    llmock.reply("First answer.", times=1)
    llmock.reply("Second answer.", times=1)
    proc, base = serve_process(db_url, env={
        "HEDDLE_MODEL_CLASSES": classes, "HEDDLE_RATE_LIMIT_PER_SUBJECT": "off",
        "OTEL_EXPORTER_OTLP_ENDPOINT": otlp.endpoint, "OTEL_SERVICE_NAME": "heddle-under-test",
        "OTEL_BSP_SCHEDULE_DELAY": "50"})
    first_trace, second_trace = secrets.token_hex(16), secrets.token_hex(16)
    try:
        with httpx.Client(base_url=base, timeout=10) as http:
            h = tenant.headers("web:queued")
            thread = open_thread(http, h, agent)
            busy = http.post(f"/v1/loom/threads/{thread}/messages", json={"content": "first"},
                             headers={**h, "traceparent": f"00-{first_trace}-{secrets.token_hex(8)}-01"})
            assert busy.status_code == 202, busy.text
            queued = http.post(f"/v1/loom/threads/{thread}/messages", json={"content": "second", "if_busy": "enqueue"},
                               headers={**h, "traceparent": f"00-{second_trace}-{secrets.token_hex(8)}-01"})
            assert queued.status_code == 202, queued.text
            data = queued.json()["data"]
            assert data["queued"] is True and data["run"]["state"] == "queued"
            run = wait_run(http, h, data["run_id"], states=("closed", "failed"), timeout=30)
            assert run["state"] == "closed", run
        spans = otlp.wait_for(lambda found: sum(s.name == "invoke_agent teller" for s in found) >= 2)
    finally:
        proc.terminate()
        proc.wait(10)

    (request,) = [s for s in spans if s.trace_id == second_trace and s.kind == SERVER_KIND]
    assert request.name == "POST /v1/loom/threads/{thread_id}/messages"
    (queued_span,) = [s for s in spans if s.name == "invoke_agent teller"
                      and s.attributes["heddle.run.id"] == data["run_id"]]
    assert (queued_span.trace_id, queued_span.parent_id) == (second_trace, request.span_id)
    # its model call is in that trace too, and the first run stayed in its own
    assert any(s.name == "chat gpt-4o-mini" and s.parent_id == queued_span.span_id for s in spans)
    (first_span,) = [s for s in spans if s.name == "invoke_agent teller" and s is not queued_span]
    assert first_span.trace_id == first_trace
