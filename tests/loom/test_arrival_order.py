"""New messages on their way to the model in the order they came (heddle/loom/arrival_order.py):
the permits themselves, then through the real server, where a run's engine hands its message's
permit on and a request that starts no run gives it back when it ends."""

from __future__ import annotations

import asyncio
import time

import pytest

from heddle.loom.arrival_order import ArrivalOrder, mark_taken, release_handed
from support.loom import SCRIPTED_AGENT, one_message_at_a_time, open_thread, post, wait_run

# -- the permits ---------------------------------------------------------------------------


async def test_permits_go_in_order_of_arrival_width_at_a_time():
    order = ArrivalOrder(width=2, hold=60)
    first, second = await order.take(), await order.take()
    got: list[str] = []

    async def wait(name: str) -> None:
        permit = await order.take()
        got.append(name)
        await asyncio.sleep(0)
        permit.release()

    waiters = [asyncio.create_task(wait(name)) for name in "abcd"]
    await asyncio.sleep(0.01)
    assert got == []  # two permits out: everyone else waits
    second.release()
    second.release()  # idempotent: one permit back, not two
    await asyncio.sleep(0.01)
    first.release()
    await asyncio.gather(*waiters)
    assert got == ["a", "b", "c", "d"]
    # all permits are back: `width` can be taken at once again, and no more
    held = [await order.take(), await order.take()]
    third = asyncio.create_task(order.take())
    await asyncio.sleep(0.01)
    assert not third.done()
    held[0].release()
    (await third).release()
    held[1].release()


async def test_a_permit_counts_for_its_hold_only():
    order = ArrivalOrder(width=1, hold=0.05)
    stuck = await order.take()  # never released by its holder (waiting on a lock elsewhere, say)
    nxt = await asyncio.wait_for(order.take(), timeout=5)
    assert stuck.released and not nxt.released
    nxt.release()


def test_bad_width_or_hold():
    with pytest.raises(ValueError):
        ArrivalOrder(width=0)
    with pytest.raises(ValueError):
        ArrivalOrder(hold=0)


async def test_a_permit_goes_with_the_task_created_after_it():
    order = ArrivalOrder(width=1, hold=60)
    reached: list[str] = []

    async def request() -> asyncio.Task:
        permit = await order.take()
        mark_taken()  # the executor, about to create the run's task

        async def run() -> None:
            await asyncio.sleep(0.01)
            reached.append("model")
            release_handed()  # the run's model request: the next message may go

        task = asyncio.create_task(run())
        permit.release_unless_taken()  # the request ends: the run carries the permit
        assert not permit.released
        return task

    run_task = await asyncio.create_task(request())
    nxt = await asyncio.wait_for(order.take(), timeout=5)
    assert reached == ["model"]
    await run_task
    nxt.release()


async def test_a_request_that_starts_no_run_gives_its_permit_back():
    order = ArrivalOrder(width=1, hold=60)

    async def request() -> None:
        permit = await order.take()
        permit.release_unless_taken()

    await asyncio.create_task(request())
    (await asyncio.wait_for(order.take(), timeout=5)).release()
    release_handed()  # nothing handed in this context: nothing happens


# -- through the server --------------------------------------------------------------------


@pytest.fixture
def one_at_a_time(server):
    with one_message_at_a_time(server) as given:
        yield given


def test_each_run_hands_its_permit_on(http, tenant, one_at_a_time):
    agent = tenant.add_agent(SCRIPTED_AGENT)
    started = time.monotonic()
    for n in range(4):
        h = tenant.headers(f"web:order{n}")
        thread = open_thread(http, h, agent)
        run_id = post(http, h, thread, "hello")["run_id"]
        assert wait_run(http, h, run_id)["state"] == "closed"
    assert time.monotonic() - started < 30  # not a held minute
    # each run carried its message's permit and gave it back (its hold of a minute never ran out)
    assert len(one_at_a_time) == 4 and all(p.taken and p.released for p in one_at_a_time)


def test_a_refused_or_failed_message_gives_its_permit_back(http, tenant, one_at_a_time):
    agent = tenant.add_agent(SCRIPTED_AGENT)
    h = tenant.headers("web:refused")
    missing = http.post("/v1/loom/threads/00000000-0000-0000-0000-000000000000/messages",
                        json={"content": "hi"}, headers=h)
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
    bad = http.post("/v1/loom/threads/not-a-uuid/messages", json={"content": "hi"}, headers=h)
    assert bad.status_code in (400, 404)
    thread = open_thread(http, h, agent)
    run_id = post(http, h, thread, "hello")["run_id"]  # would wait a minute for a kept permit
    assert wait_run(http, h, run_id)["state"] == "closed"
    # the 404 gave its permit back without a run (the malformed id never reached the handler)
    assert not one_at_a_time[0].taken and one_at_a_time[-1].taken
    assert all(p.released for p in one_at_a_time)
