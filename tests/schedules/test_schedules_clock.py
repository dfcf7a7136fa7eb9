"""Firing on a test clock: `fire_due(now=...)` on the server's own loop, its poller off, so cron
ticks, missed ticks, late firings and a workspace out of credits are exact (SQLite and PostgreSQL)."""

from __future__ import annotations

import datetime as dt

import pytest
from sqlalchemy import delete, select

from heddle.loom import schedule_firing
from heddle.loom.models import Schedule
from support.loom import SCRIPTED_AGENT, open_thread, wait_run
from support.tenants import make_tenant

SERVER_SETTINGS = {"schedule_poll_seconds": 0}  # the test is the clock


def parse(ts: str) -> dt.datetime:
    return dt.datetime.fromisoformat(ts.replace("Z", "+00:00"))


def fire(server, now: dt.datetime) -> int:
    return server.call(schedule_firing.fire_due(server.services.uow, now=now))


def scheduled_messages(http, h, thread):
    items = http.get(f"/v1/loom/threads/{thread}/messages", headers=h, params={"limit": 200}).json()["data"]["items"]
    return [m for m in items if m["scheduled"]]


def get(http, h, thread):
    (one,) = http.get(f"/v1/loom/threads/{thread}/schedules", headers=h).json()["data"]["items"]
    return one


@pytest.fixture(autouse=True)
def no_schedules_left(server):
    """The module's server is shared: a test's schedules must not fire in the next one's clock."""
    yield

    async def clear():
        async with server.services.db.transaction() as s:
            await s.execute(delete(Schedule))

    server.call(clear())


@pytest.fixture
def thread(tenant, http):
    return open_thread(http, tenant.headers(), tenant.add_agent(SCRIPTED_AGENT))


def test_a_cron_fires_on_each_tick_and_skips_the_ticks_it_missed(server, tenant, http, thread):
    h = tenant.headers()
    made = http.post(f"/v1/loom/threads/{thread}/schedules", headers=h,
                     json={"content": "tick", "cron": "*/5 * * * *", "timezone": "Asia/Kolkata"}).json()["data"]
    first = parse(made["next_run_at"])
    assert first.minute % 5 == 30 % 5 and fire(server, first - dt.timedelta(seconds=1)) == 0  # not yet due
    assert fire(server, first) == 1 and fire(server, first) == 0  # once per tick
    wait_run(http, h, scheduled_messages(http, h, thread)[0]["run_id"])
    second = parse(get(http, h, thread)["next_run_at"])
    assert second == first + dt.timedelta(minutes=5)
    assert fire(server, second + dt.timedelta(seconds=2)) == 1
    wait_run(http, h, scheduled_messages(http, h, thread)[-1]["run_id"])
    # Down for an hour: the missed ticks fire once, marked late, and the next is after "now".
    later = second + dt.timedelta(hours=1, seconds=30)
    assert fire(server, later) == 1 and fire(server, later) == 0
    marks = [m["scheduled"] for m in scheduled_messages(http, h, thread)]
    assert len(marks) == 3 and [m["late"] for m in marks] == [False, False, True]
    assert marks[2]["late_seconds"] == 3330 and marks[2]["due_at"] == (second + dt.timedelta(minutes=5)).isoformat().replace("+00:00", "Z")
    now = get(http, h, thread)
    assert parse(now["next_run_at"]) > later and now["runs"] == 3 and now["last_run"]["late_seconds"] == 3330


def test_a_cron_ends_after_max_runs_or_at_ends_at(server, tenant, http, thread):
    h = tenant.headers()
    made = http.post(f"/v1/loom/threads/{thread}/schedules", headers=h,
                     json={"content": "twice", "cron": "0 * * * *", "max_runs": 2}).json()["data"]
    t = parse(made["next_run_at"])
    assert fire(server, t) == 1
    wait_run(http, h, scheduled_messages(http, h, thread)[-1]["run_id"])
    assert fire(server, t + dt.timedelta(hours=1)) == 1
    ended = get(http, h, thread)
    assert ended["state"] == "ended" and ended["next_run_at"] is None and ended["runs"] == 2
    assert fire(server, t + dt.timedelta(hours=5)) == 0


def test_a_missed_one_off_fires_once_when_the_service_returns_marked_late(server, tenant, http, thread):
    h = tenant.headers()
    at = dt.datetime.now(dt.UTC) + dt.timedelta(minutes=3)
    made = http.post(f"/v1/loom/threads/{thread}/schedules", headers=h,
                     json={"content": "reminder", "at": at.isoformat()}).json()["data"]
    back = at + dt.timedelta(hours=2)  # nothing ran for two hours after it was due
    assert fire(server, back) == 1 and fire(server, back) == 0
    (message,) = scheduled_messages(http, h, thread)
    assert message["scheduled"]["late"] is True and message["scheduled"]["late_seconds"] == pytest.approx(7200, abs=1)
    assert message["scheduled"]["schedule_id"] == made["id"]


def test_a_workspace_out_of_credits_pauses_its_schedules_visibly_and_resumes_when_paid(server, http):
    from heddle.billing import service as billing
    from heddle.money import to_micro

    broke = make_tenant(server, credits=0)
    h = broke.headers()
    thread = open_thread(http, h, broke.add_agent(SCRIPTED_AGENT))
    made = http.post(f"/v1/loom/threads/{thread}/schedules", headers=h,
                     json={"content": "hourly", "cron": "0 * * * *"}).json()["data"]
    t = parse(made["next_run_at"])
    assert fire(server, t + dt.timedelta(minutes=1)) == 1  # claimed: paused, not fired
    paused = get(http, h, thread)
    assert paused["state"] == "paused" and paused["paused_reason"] == "insufficient_credits" and paused["runs"] == 0
    assert parse(paused["next_run_at"]) == t + dt.timedelta(hours=1)  # the missed tick is not kept
    assert fire(server, t + dt.timedelta(hours=3)) == 0  # paused: nothing piles up
    assert scheduled_messages(http, h, thread) == []
    broke.run(lambda s: billing.grant(s, broke.workspace_id, to_micro(10)))
    assert server.call(schedule_firing.resume_paid(server.services.db)) == 1
    assert get(http, h, thread)["state"] == "active"
    assert fire(server, t + dt.timedelta(hours=3)) == 1
    assert len(scheduled_messages(http, h, thread)) == 1


def test_a_busy_thread_queues_the_scheduled_message(server, tenant, http, thread):
    h = tenant.headers()
    busy = http.post(f"/v1/loom/threads/{thread}/messages", headers=h, json={"content": "ask: which account?"})
    run_id = busy.json()["data"]["run_id"]
    wait_run(http, h, run_id, states=("awaiting_input",))
    made = http.post(f"/v1/loom/threads/{thread}/schedules", headers=h,
                     json={"content": "the 9am check", "at": (dt.datetime.now(dt.UTC) + dt.timedelta(minutes=1)).isoformat()}).json()["data"]
    # A run awaiting input takes the scheduled message as its answer, as a posted one would.
    assert fire(server, parse(made["next_run_at"])) == 1
    run = wait_run(http, h, run_id, states=("closed", "failed"))
    assert run["state"] == "closed"
    (message,) = scheduled_messages(http, h, thread)
    assert message["run_id"] == run_id and message["content"] == "the 9am check"


def test_two_claimers_at_once_fire_each_due_schedule_once(server, tenant, http, thread):
    """Two concurrent firing loops of one process (PostgreSQL: two transactions, SKIP LOCKED)."""
    import asyncio

    h = tenant.headers()
    threads = [thread] + [open_thread(http, tenant.headers(f"web:p{i}"), tenant.agents["helper"]) for i in range(5)]
    at = dt.datetime.now(dt.UTC) + dt.timedelta(minutes=1)
    for i, t in enumerate(threads):
        hh = h if i == 0 else tenant.headers(f"web:p{i - 1}")
        for k in range(3):
            assert http.post(f"/v1/loom/threads/{t}/schedules", headers=hh,
                             json={"content": f"s{k}", "at": (at + dt.timedelta(seconds=k)).isoformat()}).status_code == 201

    async def both():
        uow = server.services.uow
        return await asyncio.gather(*(schedule_firing.fire_due(uow, now=at + dt.timedelta(seconds=5)) for _ in range(4)))

    fired = server.call(both())
    assert sum(fired) == 18

    async def rows():
        async with server.services.db.session() as s:
            return list(await s.execute(select(Schedule.runs, Schedule.state).where(
                Schedule.workspace_id == tenant.workspace_id)))

    assert sorted(set(server.call(rows()))) == [(1, "ended")]
