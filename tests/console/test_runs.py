"""Runs, a run's trace and requests, threads, the request log, credits and the Identify playground."""

from __future__ import annotations

import datetime as dt
import time

import pytest

from support.console import expect_error
from support.loom import SCRIPTED_AGENT, open_thread, post, wait_run
from support.tenants import make_tenant


@pytest.fixture
def busy(server, http):
    """A workspace with two agents and three finished runs (two subjects)."""
    tenant = make_tenant(server)
    a = tenant.add_agent(SCRIPTED_AGENT)
    b = tenant.add_agent({**SCRIPTED_AGENT, "name": "other"})
    runs = []
    for subject, agent, text in (("web:ann", a, "hello"), ("web:bob", a, "fail: boom"), ("web:ann", b, "hi")):
        h = tenant.headers(subject)
        run_id = post(http, h, open_thread(http, h, agent), text)["run_id"]
        wait_run(http, h, run_id)
        runs.append(run_id)
        time.sleep(0.01)  # distinct created_at
    return tenant, a, b, runs


def test_runs_list_filters_and_pages(console, busy):
    tenant, a, b, (r1, r2, r3) = busy
    base = f"/workspaces/{tenant.workspace_id}/runs"
    items = console.data("GET", base)["items"]
    assert [r["id"] for r in items] == [r3, r2, r1]  # newest first
    assert set(items[0]) >= {"id", "thread_id", "agent_id", "agent_version", "subject", "state", "cost_credits",
                             "turn_count", "opened_at", "closed_at", "updated_at"}
    assert [r["id"] for r in console.data("GET", base, params={"state": "failed"})["items"]] == [r2]
    assert [r["id"] for r in console.data("GET", base, params={"agent": b})["items"]] == [r3]
    assert [r["id"] for r in console.data("GET", base, params={"subject": "web:ann"})["items"]] == [r3, r1]
    page1 = console.data("GET", base, params={"limit": 2})
    assert [r["id"] for r in page1["items"]] == [r3, r2] and page1["next_cursor"]
    page2 = console.data("GET", base, params={"limit": 2, "cursor": page1["next_cursor"]})
    assert [r["id"] for r in page2["items"]] == [r1] and page2["next_cursor"] is None
    middle = items[1]["opened_at"]
    assert [r["id"] for r in console.data("GET", base, params={"since": middle})["items"]] == [r3, r2]
    assert [r["id"] for r in console.data("GET", base, params={"until": middle})["items"]] == [r1]
    latest = max(r["updated_at"] for r in items)
    assert console.data("GET", base, params={"updated_after": latest})["items"] == []
    before = console.data("GET", base, params={"updated_after": "2000-01-01T00:00:00"})["items"]
    assert len(before) == 3


@pytest.mark.parametrize("params,field", [
    ({"state": "sleeping"}, "state"), ({"limit": 0}, "limit"), ({"limit": 1000}, "limit"),
    ({"since": "yesterday"}, "since"), ({"cursor": "garbage!"}, "cursor"), ({"subject": "x" * 400}, "subject"),
])
def test_runs_list_bad_queries(console, busy, params, field):
    tenant = busy[0]
    err = expect_error(console.get(f"/workspaces/{tenant.workspace_id}/runs", params=params), 400, "invalid_request")
    assert any(d["field"] == field for d in err["details"]), err


def test_run_detail_has_the_v1_trace_and_its_requests(server, http, console, busy):
    tenant, a, _, (r1, _, _) = busy
    attributed = http.post("/v1/identify", json={"identifier": "DEUTDEFF"},
                           headers={**tenant.headers(None), "Service-Run": r1})
    assert attributed.status_code == 200
    server.flush_request_log()
    detail = console.data("GET", f"/workspaces/{tenant.workspace_id}/runs/{r1}")
    v1 = http.get(f"/v1/loom/runs/{r1}/trace", headers=tenant.headers(None)).json()["data"]
    assert detail["trace"] == v1
    assert detail["run"]["id"] == r1 and detail["run"]["agent_version"] == 1
    assert detail["agent"] == {"id": a, "name": SCRIPTED_AGENT["name"], "version": 1}
    assert [(e["method"], e["path"], e["status"]) for e in detail["requests"]] == [("POST", "/v1/identify", 200)]
    assert detail["requests"][0]["request_id"] == attributed.headers["request-id"]
    # The run's own messages, oldest first: the user's opening message heads the console's timeline.
    assert [(m["role"], m["run_id"]) for m in detail["messages"]] == [("user", r1), ("assistant", r1)]
    assert detail["messages"][0]["content"] == "hello"


def test_run_and_thread_of_another_workspace_are_404(console, busy, server):
    tenant, _, _, (r1, _, _) = busy
    other = make_tenant(server)
    thread = console.data("GET", f"/workspaces/{tenant.workspace_id}/runs/{r1}")["run"]["thread_id"]
    expect_error(console.get(f"/workspaces/{other.workspace_id}/runs/{r1}"), 404, "not_found")
    expect_error(console.get(f"/workspaces/{other.workspace_id}/threads/{thread}"), 404, "not_found")
    expect_error(console.get(f"/workspaces/{tenant.workspace_id}/runs/not-a-uuid"), 404, "not_found")
    expect_error(console.get(f"/workspaces/{tenant.workspace_id}/threads/00000000-0000-0000-0000-000000000000"),
                 404, "not_found")


def test_thread_with_messages_and_runs(console, busy, http):
    tenant, a, _, (r1, _, _) = busy
    h = tenant.headers("web:ann")
    thread = open_thread(http, h, a)
    again = post(http, h, thread, "hello again")["run_id"]
    wait_run(http, h, again)
    data = console.data("GET", f"/workspaces/{tenant.workspace_id}/threads/{thread}")
    assert data["thread"]["id"] == thread and data["thread"]["subject"] == "web:ann"
    assert [m["role"] for m in data["messages"]] == ["user", "assistant", "user", "assistant"]
    assert [r["id"] for r in data["runs"]] == [again, r1]
    assert data["agent"] == {"id": a, "name": SCRIPTED_AGENT["name"]}


def test_threads_list_filters_and_pages(console, busy, http):
    tenant, a, b, (r1, r2, r3) = busy
    base = f"/workspaces/{tenant.workspace_id}/threads"
    items = console.data("GET", base)["items"]
    # Three threads (ann with a, bob with a, ann with b), newest first, each with its latest run.
    assert [(t["subject"], t["agent"]) for t in items] == [("web:ann", b), ("web:bob", a), ("web:ann", a)]
    assert [t["latest_run"]["id"] for t in items] == [r3, r2, r1]
    assert items[1]["latest_run"]["state"] == "failed"
    assert items[0]["agent_name"] == "other" and items[2]["agent_name"] == SCRIPTED_AGENT["name"]
    assert [t["agent"] for t in console.data("GET", base, params={"agent": b})["items"]] == [b]
    assert [t["subject"] for t in console.data("GET", base, params={"subject": "web:bob"})["items"]] == ["web:bob"]
    page1 = console.data("GET", base, params={"limit": 2})
    assert len(page1["items"]) == 2 and page1["next_cursor"]
    page2 = console.data("GET", base, params={"limit": 2, "cursor": page1["next_cursor"]})
    assert [t["id"] for t in page2["items"]] == [items[2]["id"]] and page2["next_cursor"] is None
    for params, field in (({"limit": 0}, "limit"), ({"cursor": "garbage!"}, "cursor"), ({"subject": "x" * 300}, "subject")):
        err = expect_error(console.get(base, params=params), 400, "invalid_request")
        assert field in err["message"] or any(d.get("field") == field for d in err.get("details") or []), err
    expect_error(console.get("/workspaces/ws_nope/threads"), 404, "not_found")


def test_request_log_filters_and_pages(server, http, console):
    tenant = make_tenant(server)
    h = {"Authorization": f"Bearer {tenant.secret}"}
    for identifier in ("DEUTDEFF", "NOPE!", "GB82WEST12345698765432"):
        http.post("/v1/identify", json={"identifier": identifier}, headers=h)
    http.get("/v1/loom/threads", headers=h)  # 400: no subject
    server.flush_request_log()
    base = f"/workspaces/{tenant.workspace_id}/requests"
    items = console.data("GET", base)["items"]
    assert [e["path"] for e in items] == ["/v1/loom/threads", "/v1/identify", "/v1/identify", "/v1/identify"]
    assert {e["status"] for e in console.data("GET", base, params={"status": 400})["items"]} == {400}
    assert all(e["path"] == "/v1/identify" for e in console.data("GET", base, params={"path": "/v1/id"})["items"])
    page = console.data("GET", base, params={"limit": 3})
    rest = console.data("GET", base, params={"limit": 3, "cursor": page["next_cursor"]})
    assert [e["id"] for e in page["items"] + rest["items"]] == [e["id"] for e in items]
    future = (dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)).isoformat()
    assert console.data("GET", base, params={"since": future})["items"] == []
    expect_error(console.get(base, params={"status": 9999}), 400, "invalid_request")
    expect_error(console.get(base, params={"cursor": "zzz"}), 400, "invalid_request")


def test_credits_grant_ledger_and_series(console):
    ws = console.data("POST", "/workspaces", 201, json={"name": "Money", "credits": 1})["id"]
    for amount in (2, 3.5):
        data = console.data("POST", f"/workspaces/{ws}/credits", json={"amount": amount})
    assert data["balance_credits"] == 6.5
    assert [e["amount_credits"] for e in data["ledger"]] == [3.5, 2, 1]
    assert [p["balance_credits"] for p in data["series"]] == [1, 3, 6.5]
    page = console.data("GET", f"/workspaces/{ws}/credits", params={"limit": 2})
    assert len(page["ledger"]) == 2 and page["next_before"] == page["ledger"][-1]["id"]
    rest = console.data("GET", f"/workspaces/{ws}/credits", params={"limit": 2, "before": page["next_before"]})
    assert [e["amount_credits"] for e in rest["ledger"]] == [1] and rest["next_before"] is None
    for body in ({"amount": 0}, {"amount": -5}, {"amount": "lots"}, {}, {"amount": 1e12}):
        err = expect_error(console.post(f"/workspaces/{ws}/credits", json=body), 400, "invalid_request")
        assert err["details"][0]["field"] == "amount"
    expect_error(console.get(f"/workspaces/{ws}/credits", params={"limit": 0}), 400, "invalid_request")


def test_identify_playground_is_charged_like_the_api(console):
    ws = console.data("POST", "/workspaces", 201, json={"name": "Play", "credits": 1})["id"]
    found = console.data("POST", f"/workspaces/{ws}/identify", json={"identifier": "DEUTDEFF"})
    assert found["result"] == "identified" and found["rail"] == "swift"
    credits = console.data("GET", f"/workspaces/{ws}/credits")
    assert credits["balance_credits"] == 0 and credits["ledger"][0]["reason"] == "identify"
    expect_error(console.post(f"/workspaces/{ws}/identify", json={"identifier": "DEUTDEFF"}), 402,
                 "insufficient_credits")
    err = expect_error(console.post(f"/workspaces/{ws}/identify", json={"identifier": ""}), 400, "invalid_request")
    assert err["details"]
    expect_error(console.post(f"/workspaces/{ws}/identify", json={"nope": 1}), 400, "invalid_request")
    expect_error(console.post("/workspaces/ws_nope/identify", json={"identifier": "DEUTDEFF"}), 404, "not_found")
