"""A new run is inserted already claimed by the in-process executor (no claim transaction).

Checked on a real server: the run closes holding the first fence; and a run inserted claimed
that has to wait for an executor slot is claimed afresh when it starts (its own lease does not
keep it from running). Counts of statements and commits are in tests/scale.
"""

from __future__ import annotations

import uuid

from sqlalchemy import select

from heddle.loom import lease
from heddle.loom.models import Run
from support.loom import open_thread, post, wait_run

AGENT = {"name": "pre", "model_class": "scripted", "instructions": "Be brief.", "tools": []}


def fence_and_lease(tenant, run_id: str):
    async def read(s):
        row = (await s.execute(select(Run.fence, Run.lease_owner).where(Run.id == uuid.UUID(run_id)))).one()
        return tuple(row)

    return tenant.run(read)


def test_a_new_run_is_executed_under_the_fence_it_was_inserted_with(http, tenant):
    agent = tenant.add_agent(AGENT)
    h = tenant.headers("web:pre")
    run_id = post(http, h, open_thread(http, h, agent), "hello")["run_id"]
    assert wait_run(http, h, run_id)["state"] == "closed"
    # Claimed once, by the insert (fence 1), not claimed again; closing dropped the lease.
    assert fence_and_lease(tenant, run_id) == (1, None)


def test_a_claimed_run_that_waits_for_a_slot_is_claimed_afresh_and_runs(http, tenant):
    server = tenant.server
    executor = server.services.executor
    slots = executor._slots
    held = slots._value

    async def hold():
        for _ in range(held):
            await slots.acquire()

    async def release():
        for _ in range(held):
            slots.release()

    agent = tenant.add_agent({**AGENT, "name": "pre-wait"})
    h = tenant.headers("web:pre-wait")
    thread = open_thread(http, h, agent)
    server.call(hold())  # every slot taken: the run will wait for one
    # As if a slot had been free when the run was inserted (a race with other runs).
    executor.preclaim = lambda: lease.claimed_values(executor.owner, executor.lease)
    try:
        run_id = post(http, h, thread, "hello")["run_id"]
        assert fence_and_lease(tenant, run_id) == (1, executor.owner)  # inserted claimed
    finally:
        del executor.preclaim
        server.call(release())
    assert wait_run(http, h, run_id)["state"] == "closed"
    assert fence_and_lease(tenant, run_id) == (2, None)  # claimed again when it got its slot
