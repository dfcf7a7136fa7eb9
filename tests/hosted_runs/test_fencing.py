"""Fenced execution: an executor that lost its run writes nothing and calls no tool host again.

A real server runs a real tool host's slow tool (`/tools/gated`, whose first call waits for the
test). While the server's executor waits on that call, the test takes the run over: either with
a second, real executor on the same database (`claim_and_execute(force=True)`, as a process
whose lease check found the first one expired would), or by bumping the fence as such a takeover
does. Then the first call returns, and the first executor must change nothing.
"""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import select, update

from heddle.billing.models import LedgerEntry
from heddle.loom import lease
from heddle.loom.models import Message, Run, ToolCall, Turn
from heddle.loom.states import (
    CALL_FINAL,
    CALL_TRANSITIONS,
    InvalidCallTransition,
)
from heddle.loom.unit_of_work import RunWork
from support.loom import open_thread, post, wait_run

SERVER_SETTINGS = {"outbound_timeout": 10.0, "tool_call_price_credits": 0.5}


def snapshot(tenant, run_id: str):
    """Every row the engine writes for a run, as plain values (fence and lease bookkeeping aside)."""
    rid = uuid.UUID(run_id)

    async def read(s):
        run = await s.get(Run, rid)
        cols = [c.key for c in Run.__table__.columns if c.key not in ("fence", "lease_owner", "lease_expires_at")]
        rows = [tuple(getattr(run, c) for c in cols)]
        for model, where in ((Turn, Turn.run_id == rid), (ToolCall, ToolCall.run_id == rid),
                             (Message, Message.run_id == rid), (LedgerEntry, LedgerEntry.run_id == rid)):
            for obj in await s.scalars(select(model).where(where)):
                rows.append(tuple(getattr(obj, c.key) for c in model.__table__.columns))
        return sorted(rows, key=repr)

    return tenant.run(read)


def drain(server) -> None:
    server.call(server.services.executor.drain())


def take_over(server, run_id: str) -> bool:
    """A second executor claims the run while the first still holds it, and runs it."""
    svc = server.services
    return server.call(lease.claim_and_execute(svc.database(), svc.engine, uuid.UUID(run_id), "other-process",
                                               force=True))


def bump_fence(tenant, run_id: str) -> None:
    """Move the run's fence on, as another process's takeover does, without executing it."""

    async def bump(s):
        await s.execute(update(Run).where(Run.id == uuid.UUID(run_id))
                        .values(fence=Run.fence + 1, lease_owner="other-process"))

    tenant.run(bump)


def start_gated(http, tenant, toolhost, tool: str):
    h = tenant.headers("web:fence")
    thread = open_thread(http, h, tenant.agent)
    run_id = post(http, h, thread, f"call: {tool} {{}}")["run_id"]
    assert toolhost.gate_entered.wait(10), "the tool host was never called"
    return h, run_id


def gated_calls(toolhost):
    return toolhost.calls("/tools/gated")


def test_takeover_finishes_run_and_the_stale_executor_writes_nothing(http, tenant, toolhost):
    h, run_id = start_gated(http, tenant, toolhost, "gated")
    assert take_over(server := tenant.server, run_id)
    run = wait_run(http, h, run_id, states=("closed",))
    [call] = http.get(f"/v1/loom/runs/{run_id}/trace", headers=h).json()["data"]["turns"][0]["tool_calls"]
    assert call["status"] == "succeeded" and call["result"] == {"call": 2}
    before = snapshot(tenant, run_id)
    toolhost.gate.set()  # the first executor's call now returns (with another result)
    drain(server)
    assert snapshot(tenant, run_id) == before
    assert len(gated_calls(toolhost)) == 2  # the takeover's retry, never a third
    assert run["state"] == "closed"
    charges = tenant.run(lambda s: s.scalars(select(LedgerEntry).where(
        LedgerEntry.run_id == uuid.UUID(run_id), LedgerEntry.reason == "tool_call")))
    assert len(list(charges)) == 1


def test_at_most_once_call_taken_over_stays_unknown(http, tenant, toolhost):
    """The issue's first failure: the call must not end both `unknown_fate` and `succeeded`."""
    h, run_id = start_gated(http, tenant, toolhost, "gated_once")
    assert take_over(tenant.server, run_id)
    run = wait_run(http, h, run_id, states=("awaiting_outcome",))
    [pending] = run["pending"]["tool_calls"]
    assert pending["result"]["error"]["code"] == "unknown_fate"
    before = snapshot(tenant, run_id)
    toolhost.gate.set()
    drain(tenant.server)
    assert snapshot(tenant, run_id) == before
    assert len(gated_calls(toolhost)) == 1
    # The caller reconciles; the run finishes, and the resolved call can never move back.
    resp = http.post(f"/v1/loom/runs/{run_id}/outcome", headers=h,
                     json={"tool_call_id": pending["id"], "state": "occurred"})
    assert resp.status_code == 200, resp.text
    assert wait_run(http, h, run_id, states=("closed",))["state"] == "closed"
    call_id = uuid.UUID(pending["id"])
    for status, event in (("awaiting_outcome", "resolve"), ("pending", "await_outcome"), ("resolved", "succeed")):
        with pytest.raises(InvalidCallTransition):
            tenant.run(lambda s, st=status, ev=event: RunWork(s).move_call(call_id, st, ev))
    status = tenant.run(lambda s: s.scalar(select(ToolCall.status).where(ToolCall.id == call_id)))
    assert status == "resolved"


def test_stale_executor_does_not_retry_an_idempotent_call(http, tenant, toolhost):
    """Fence bumped mid-call (a takeover elsewhere); the 503 would be retried, but not by a stale executor."""
    toolhost.gate_status = 503
    h, run_id = start_gated(http, tenant, toolhost, "gated")
    bump_fence(tenant, run_id)
    before = snapshot(tenant, run_id)
    toolhost.gate.set()
    drain(tenant.server)
    assert len(gated_calls(toolhost)) == 1
    assert snapshot(tenant, run_id) == before
    run = http.get(f"/v1/loom/runs/{run_id}", headers=h).json()["data"]
    assert run["state"] == "running"  # the other process holds it now; this one left it alone


def test_a_claim_grows_the_fence_and_an_old_token_cannot_write(http, tenant, toolhost):
    h = tenant.headers("web:fence2")
    run_id = post(http, h, open_thread(http, h, tenant.agent), "call: balance {}")["run_id"]
    wait_run(http, h, run_id, states=("closed",))
    fence = tenant.run(lambda s: s.scalar(select(Run.fence).where(Run.id == uuid.UUID(run_id))))
    assert fence >= 1
    old = lease.Fence(uuid.UUID(run_id), fence - 1)
    with pytest.raises(lease.StaleExecutor):
        tenant.run(old.hold)
    with pytest.raises(lease.StaleExecutor):  # closed: even the latest token holds nothing now
        tenant.run(lease.Fence(uuid.UUID(run_id), fence).hold)


def test_no_transition_leaves_a_final_tool_call_status():
    assert not [key for key in CALL_TRANSITIONS if key[0] in CALL_FINAL]
    # Nothing moves back to `pending`, except an approved call that was never made (approvals).
    back = {key for key, to in CALL_TRANSITIONS.items() if to == "pending"}
    assert back == {("awaiting_approval", "approve")}
