"""The workspace overview: runs, failures and their codes, spend, run time and tokens by model
class over the last day or week, from the runs and turns already stored."""

from __future__ import annotations

import time

import pytest

from heddle.control.overview import percentile
from support.console import expect_error
from support.loom import SCRIPTED_AGENT, open_thread, post, wait_run
from support.tenants import make_tenant


@pytest.fixture
def busy(server, http):
    """Three finished runs of one workspace: two closed, one failed (`fail:` makes the scripted
    model fail, a model_error)."""
    tenant = make_tenant(server)
    agent = tenant.add_agent(SCRIPTED_AGENT)
    runs = []
    for subject, text in (("web:ann", "hello"), ("web:bob", "fail: boom"), ("web:ann", "hi")):
        h = tenant.headers(subject)
        run_id = post(http, h, open_thread(http, h, agent), text)["run_id"]
        runs.append(wait_run(http, h, run_id))
        time.sleep(0.01)
    return tenant, runs


def test_overview_counts_what_is_stored(console, busy):
    tenant, runs = busy
    base = f"/workspaces/{tenant.workspace_id}"
    day = console.data("GET", f"{base}/overview")
    assert day["period"] == "day" and day["workspace_id"] == tenant.workspace_id
    assert day["runs"] == {"total": 3, "by_state": {"closed": 2, "failed": 1}}
    assert day["failures"] == {"total": 1, "by_code": [{"code": "model_error", "count": 1}]}
    assert day["spend_credits"] == pytest.approx(sum(r["cost_credits"] for r in runs))
    times = day["run_time_ms"]
    assert times["durations_sampled"] == 3 and 0 <= times["p50"] <= times["p95"]
    # Every turn of the scripted model, with its tokens (the failed run made no turn it paid for).
    [scripted] = day["tokens_by_model_class"]
    assert scripted["model_class"] == "scripted" and scripted["turns"] >= 2 and scripted["input_tokens"] > 0
    week = console.data("GET", f"{base}/overview", params={"period": "week"})
    assert week["runs"] == day["runs"] and week["since"] < day["since"]
    # The figure links to the filtered list: the failed run by its code.
    failed = console.data("GET", f"{base}/runs", params={"state": "failed", "error_code": "model_error",
                                                         "since": day["since"]})["items"]
    assert [r["id"] for r in failed] == [runs[1]["id"]]
    assert console.data("GET", f"{base}/runs", params={"error_code": "cancelled"})["items"] == []


def test_overview_of_an_empty_workspace_and_bad_queries(console, server):
    tenant = make_tenant(server)
    empty = console.data("GET", f"/workspaces/{tenant.workspace_id}/overview")
    assert empty["runs"] == {"total": 0, "by_state": {}} and empty["failures"]["by_code"] == []
    assert empty["run_time_ms"] == {"p50": None, "p95": None, "durations_sampled": 0}
    assert empty["spend_credits"] == 0 and empty["tokens_by_model_class"] == []
    err = expect_error(console.get(f"/workspaces/{tenant.workspace_id}/overview", params={"period": "year"}),
                       400, "invalid_request")
    assert any(d["field"] == "period" for d in err["details"]), err
    expect_error(console.get("/workspaces/ws_nosuchworkspace000000/overview"), 404, "not_found")


def test_percentile_interpolates():
    assert percentile([], 0.5) is None
    assert percentile([1.0], 0.95) == 1.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.5
    assert percentile([float(i) for i in range(1, 101)], 0.95) == pytest.approx(95.05)
