"""A run a worker executes joins the trace of the request that created it: `heddle serve` (queue
mode) and `heddle worker`, both exporting over OTLP/HTTP to one real receiver, with llmock as the
model. The API process saves the request's `traceparent` with the run; the worker's
`invoke_agent` span is its child, and the model call's `chat` span the worker's child."""

from __future__ import annotations

import json
import secrets

import httpx
import pytest

from observability.otlp_receiver import OtlpReceiver
from support.loom import open_thread, wait_run
from workers.procs import start

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

SERVER_KIND = 2


def test_a_worker_run_joins_the_trace_of_the_request_that_created_it(deployment_env, tmp_path, tenant, llmock):
    classes = json.dumps({"remote": {"provider": "openai", "model": "gpt-4o-mini", "base_url": llmock.base_url("openai"),
                                     "api_key": "sk-llmock", "max_retries": 1}})
    otlp = OtlpReceiver()
    env = {**deployment_env, "HEDDLE_MODEL_CLASSES": classes, "OTEL_EXPORTER_OTLP_ENDPOINT": otlp.endpoint,
           "OTEL_BSP_SCHEDULE_DELAY": "50"}
    api = start("serve", {**env, "OTEL_SERVICE_NAME": "heddle-api"}, tmp_path)
    worker = start("worker", {**env, "OTEL_SERVICE_NAME": "heddle-worker"}, tmp_path)
    trace_id, parent_span = secrets.token_hex(16), secrets.token_hex(8)
    try:
        for proc in (api, worker):
            proc.wait_healthy()
        agent = tenant.add_agent({"name": "queued-teller", "model_class": "remote", "instructions": "Answer.",
                                  "tools": []}, classes=("remote",))
        llmock.reply("Your balance is 42 euros.")
        h = tenant.headers("web:traced")
        with httpx.Client(base_url=api.base_url, timeout=10) as http:
            thread = open_thread(http, h, agent)
            sent = http.post(f"/v1/loom/threads/{thread}/messages", json={"content": "balance please"},
                             headers={**h, "traceparent": f"00-{trace_id}-{parent_span}-01"})
            assert sent.status_code == 202, sent.text
            run = wait_run(http, h, sent.json()["data"]["run_id"], states=("closed", "failed"), timeout=60)
        assert run["state"] == "closed", run
        spans = otlp.wait_for(lambda found: any(s.name == "invoke_agent queued-teller" for s in found)
                              and any(s.name.startswith("chat ") for s in found)
                              and any(s.kind == SERVER_KIND and s.trace_id == trace_id for s in found))
    finally:
        for proc in (api, worker):
            proc.kill()
        otlp.close()
    (request,) = [s for s in spans if s.trace_id == trace_id and s.kind == SERVER_KIND and "messages" in s.name]
    assert request.service == "heddle-api" and request.parent_id == parent_span
    (run_span,) = [s for s in spans if s.name == "invoke_agent queued-teller"]
    assert run_span.service == "heddle-worker"  # another process, the same trace
    assert (run_span.trace_id, run_span.parent_id) == (trace_id, request.span_id)
    assert run_span.attributes["heddle.run.id"] == run["id"]
    (chat,) = [s for s in spans if s.name == "chat gpt-4o-mini"]
    assert (chat.service, chat.trace_id, chat.parent_id) == ("heddle-worker", trace_id, run_span.span_id)
