"""A crash never makes a call free (issue 40, reproduction 6), with real processes on PostgreSQL.

`heddle serve` and `heddle worker` in queue mode; ten runs each call an at-most-once tool that
holds its answer for seconds. The worker is killed with SIGKILL while the calls are in flight,
another worker takes the runs over: each call, whose fate is now unknown, waits in
`awaiting_outcome`, and the caller posts `occurred`. Every call is charged exactly once, as the
same call settled in its own process would be (heddle/loom/charging.py), and the ledger
matches the calls' final states: one `tool_call` entry per started call, none twice.
"""

from __future__ import annotations

import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from sqlalchemy import select

from heddle.billing.models import LedgerEntry
from heddle.loom.models import Run, ToolCall
from support.loom import open_thread, post, wait_run
from workers.conftest import server  # noqa: F401  (queue mode, over this module's deployment_env)
from workers.procs import queue_env, start

pytestmark = [pytest.mark.slow, pytest.mark.postgres]

RUNS, HOLD, PRICE = 10, 8.0, 1.0
ONCE = {"name": "hold_once", "description": "Holds its answer, at most once", "path": "/tools/overlap",
        "connection": "bank", "interaction": "auto", "reliability": "at_most_once",
        "parameters": {"type": "object", "properties": {"n": {"type": "integer"}, "hold": {"type": "number"}},
                       "required": ["n"], "additionalProperties": False}}


@pytest.fixture(scope="module")
def deployment_env(pg_database_factory):
    return queue_env(pg_database_factory(), HEDDLE_RUN_LEASE_SECONDS="2", HEDDLE_WORKER_HEARTBEAT_SECONDS="1",
                     HEDDLE_WORKER_STALLED_SECONDS="3", HEDDLE_OUTBOUND_TIMEOUT="30",
                     HEDDLE_TOOL_CALL_PRICE_CREDITS=str(PRICE))


def _calls_and_ledger(tenant, run_ids):
    async def read(s):
        runs = (await s.scalars(select(Run).where(Run.id.in_(run_ids)))).all()
        calls = (await s.scalars(select(ToolCall).where(ToolCall.run_id.in_(run_ids)))).all()
        entries = (await s.scalars(select(LedgerEntry).where(LedgerEntry.workspace_id == tenant.workspace_id,
                                                             LedgerEntry.reason == "tool_call"))).all()
        return ({r.id: r.cost_micro for r in runs},
                [(c.id, c.status, c.outcome_state, c.cost_micro, bool(c.attempts)) for c in calls],
                [(e.ref, e.amount_micro) for e in entries])

    return tenant.run(read)


def test_calls_settled_after_a_sigkill_are_charged_exactly_once(deployment_env, tmp_path, tenant, toolhost):
    api = start("serve", deployment_env, tmp_path).wait_healthy()
    doomed = start("worker", deployment_env, tmp_path).wait_healthy()
    finisher = None
    agent = tenant.add_agent({"name": "once", "model_class": "scripted", "instructions": "", "tools": [ONCE]})
    try:
        with httpx.Client(base_url=api.base_url, timeout=20) as http:
            def begin(i: int) -> tuple[dict, str]:
                h = tenant.headers(f"web:crash{i}")
                return h, post(http, h, open_thread(http, h, agent), f'call: hold_once {{"n": {i}, "hold": {HOLD}}}')[
                    "run_id"]

            with ThreadPoolExecutor(RUNS) as pool:
                started = list(pool.map(begin, range(RUNS)))
            deadline = time.monotonic() + 60
            while len(toolhost.calls("/tools/overlap")) < RUNS and time.monotonic() < deadline:
                time.sleep(0.1)
            in_flight = len(toolhost.calls("/tools/overlap"))
            assert in_flight >= 1, "the worker never called the tool"
            doomed.popen.kill()  # SIGKILL mid-call: no answer recorded, no lease renewed
            doomed.popen.wait(10)
            finisher = start("worker", deployment_env, tmp_path).wait_healthy()

            awaiting = 0
            for h, run_id in started:
                run = wait_run(http, h, run_id, states=("closed", "failed", "awaiting_outcome"), timeout=90)
                if run["state"] == "awaiting_outcome":
                    awaiting += 1
                    trace = http.get(f"/v1/loom/runs/{run_id}/trace", headers=h).json()["data"]
                    [call] = trace["turns"][0]["tool_calls"]
                    assert call["status"] == "awaiting_outcome" and call["cost_credits"] == PRICE, call
                    done = http.post(f"/v1/loom/runs/{run_id}/outcome", headers=h,
                                     json={"tool_call_id": call["id"], "state": "occurred"})
                    assert done.status_code == 200, done.text
                assert wait_run(http, h, run_id, states=("closed", "failed"), timeout=60)["state"] == "closed"
            assert awaiting == in_flight  # each call the killed worker had sent waited for its outcome
    finally:
        for proc in (doomed, finisher, api):
            if proc is not None:
                proc.kill()

    run_costs, calls, ledger = _calls_and_ledger(tenant, [uuid.UUID(r) for _, r in started])
    assert len(calls) == RUNS
    price = round(PRICE * 1_000_000)
    # The ledger against the calls' final states: one charge per started call, at its price, none twice.
    charged = {ref: amount for ref, amount in ledger}
    assert len(ledger) == len(charged) == RUNS
    for call_id, status, outcome, cost, attempted in calls:
        assert attempted and status in ("succeeded", "resolved"), (status, outcome)
        assert cost == price and charged[str(call_id)] == -price  # a charge is a negative entry
    assert all(cost >= price for cost in run_costs.values())
