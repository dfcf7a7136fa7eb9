"""A run's tool call as an OpenTelemetry span (issue 28): `heddle serve`, configured only by the
standard `OTEL_*` variables, exports to a real OTLP/HTTP receiver; the hosted tool's outbound
request is a child of its `execute_tool` span and carries that context to the tool host."""

from __future__ import annotations

import httpx
import pytest

from hosted_runs.conftest import TOOLS, ToolHost
from observability.otlp_receiver import OtlpReceiver
from support.loom import open_thread, post, wait_run
from support.processes import serve_process

pytestmark = pytest.mark.slow

CLIENT_KIND = 3  # SpanKind in the OTLP protobuf


def test_a_hosted_tool_call_is_an_execute_tool_span_with_its_outbound_call_inside(tmp_path):
    from heddle.workspaces import service as ws_service
    from support.server import LiveServer
    from support.tenants import make_tenant

    db_url = f"sqlite+aiosqlite:///{tmp_path / 'spans.db'}"
    seed = LiveServer(database_url=db_url).start()  # migrates and seeds; no OTEL_* here
    tenant = make_tenant(seed)
    ws = tenant.run(lambda s: ws_service.get_workspace(s, tenant.workspace_id))
    host = ToolHost(request_secret=ws.request_secret, key_id=tenant.key_id).start()
    otlp = OtlpReceiver()
    try:
        tenant.update(mint_url=f"{host.base_url}/mint", jwks_json=host.jwks)
        tenant.run(lambda s: ws_service.create_connection(s, tenant.workspace_id, "bank", host.base_url))
        agent = tenant.add_agent({"name": "banker", "model_class": "scripted", "instructions": "", "tools": TOOLS})
        seed.stop()
        proc, base = serve_process(db_url, env={
            "HEDDLE_RATE_LIMIT_PER_SUBJECT": "off", "OTEL_EXPORTER_OTLP_ENDPOINT": otlp.endpoint,
            "OTEL_BSP_SCHEDULE_DELAY": "50"})
        try:
            with httpx.Client(base_url=base, timeout=10) as http:
                h = tenant.headers("web:spans")
                run_id = post(http, h, open_thread(http, h, agent), "call: balance {}")["run_id"]
                assert wait_run(http, h, run_id, states=("closed", "failed"))["state"] == "closed"
                trace = http.get(f"/v1/loom/runs/{run_id}/trace", headers=h).json()["data"]
            spans = otlp.wait_for(lambda found: any(s.name == "execute_tool balance" for s in found)
                                  and any(s.kind == CLIENT_KIND and s.name == "POST" for s in found))
        finally:
            proc.terminate()
            proc.wait(10)
    finally:
        host.stop()
        otlp.close()

    (call,) = trace["turns"][0]["tool_calls"]
    assert call["status"] == "succeeded"
    (tool,) = [s for s in spans if s.name == "execute_tool balance"]
    assert tool.attributes["gen_ai.operation.name"] == "execute_tool"
    assert tool.attributes["gen_ai.tool.name"] == "balance"
    assert tool.attributes["gen_ai.tool.call.id"] == trace["turns"][0]["response"]["tool_calls"][0]["id"]
    assert tool.attributes["heddle.tool.kind"] == "hosted"
    assert tool.attributes["heddle.tool.status"] == "succeeded"
    outbound = [s for s in spans if s.parent_id == tool.span_id and s.kind == CLIENT_KIND]
    assert outbound and all(s.trace_id == tool.trace_id for s in outbound)
    (sent,) = host.calls("/tools/balance")
    _, trace_id, parent, _ = sent.headers["traceparent"].split("-")
    assert trace_id == tool.trace_id and parent in {s.span_id for s in outbound}
