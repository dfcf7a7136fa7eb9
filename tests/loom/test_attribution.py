"""API calls carrying `Service-Run` show up in that run's trace, newest first, workspace-checked."""

from __future__ import annotations

from support.loom import SCRIPTED_AGENT, open_thread, post, wait_run
from support.tenants import make_tenant


def test_service_run_header_attributes_calls(server, http, tenant):
    agent = tenant.add_agent(SCRIPTED_AGENT)
    h = tenant.headers()
    run_id = post(http, h, open_thread(http, h, agent), "ask: hi?")["run_id"]
    wait_run(http, h, run_id)
    for _ in range(3):
        assert http.get("/v1/workspace", headers={**h, "Service-Run": run_id}).status_code == 200
    http.get("/v1/nope", headers={**h, "Service-Run": run_id})  # unauthenticated: never attributed
    missing = "00000000-0000-4000-8000-000000000000"
    http.get(f"/v1/loom/runs/{missing}", headers={**h, "Service-Run": run_id})
    # another workspace cannot attribute calls to this run
    other = make_tenant(server)
    http.get("/v1/workspace", headers={**other.headers(), "Service-Run": run_id})
    server.flush_request_log()
    trace = http.get(f"/v1/loom/runs/{run_id}/trace", headers=h).json()["data"]
    assert trace["api_calls_total"] == 4
    assert [c["path"] for c in trace["api_calls"]] == [f"/v1/loom/runs/{missing}"] + ["/v1/workspace"] * 3
    assert [c["status"] for c in trace["api_calls"]] == [404, 200, 200, 200]
    assert trace["api_calls"][0]["created_at"] >= trace["api_calls"][-1]["created_at"]


def test_malformed_service_run_is_refused(server, http, tenant):
    # Issue 30: the document says a UUID, and a caller who meant to attribute the call must learn
    # that it was not (it used to be ignored silently).
    r = http.get("/v1/workspace", headers={**tenant.headers(), "Service-Run": "nope"})
    assert r.status_code == 400 and r.json()["error"]["details"][0]["field"] == "Service-Run"
