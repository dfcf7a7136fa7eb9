"""Schedules in queue mode, with real `heddle worker` processes on real PostgreSQL (issue 45).

Each worker polls for due schedules; claims take row locks with SKIP LOCKED, so two workers
never fire one schedule twice; a worker killed while a schedule fell due leaves it to the next
worker, which fires it once, marked late.
"""

from __future__ import annotations

import datetime as dt
import time

import httpx
import pytest
from sqlalchemy import func, select, update

from heddle.loom.models import Message, Run, Schedule
from support.loom import SCRIPTED_AGENT, open_thread
from workers.procs import start

pytestmark = [pytest.mark.slow, pytest.mark.postgres]
POLL = {"HEDDLE_SCHEDULE_POLL_SECONDS": "0.2"}


@pytest.fixture
def workers(deployment_env, tmp_path):
    started = []

    def make():
        proc = start("worker", {**deployment_env, **POLL}, tmp_path).wait_healthy()
        started.append(proc)
        return proc

    yield make
    for proc in started:
        proc.kill()


def read(server, query):
    async def go():
        async with server.services.database().session() as s:
            return list(await s.execute(query))

    return server.call(go())


def write(server, statement):
    async def go():
        async with server.services.database().transaction() as s:
            await s.execute(statement)

    server.call(go())


def wait_until(predicate, timeout=90.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError("not in time")


def test_two_workers_fire_each_due_schedule_once(server, tenant, workers):
    agent = tenant.add_agent(SCRIPTED_AGENT)
    at = (dt.datetime.now(dt.UTC) + dt.timedelta(seconds=6)).isoformat()
    made = []
    with httpx.Client(base_url=server.base_url, timeout=10) as http:
        for i in range(8):
            h = tenant.headers(f"web:w{i}")
            thread = open_thread(http, h, agent)
            for k in range(5):
                resp = http.post(f"/v1/loom/threads/{thread}/schedules", json={"content": f"c{k}", "at": at}, headers=h)
                assert resp.status_code == 201, resp.text
                made.append(resp.json()["data"]["id"])
    first, second = workers(), workers()
    ws = tenant.workspace_id
    wait_until(lambda: read(server, select(func.count()).select_from(Schedule).where(
        Schedule.workspace_id == ws, Schedule.state == "ended"))[0][0] == 40)
    assert sorted(set(read(server, select(Schedule.runs).where(Schedule.workspace_id == ws)))) == [(1,)]
    # A schedule that fired into a busy thread queued its run: its message joins the thread's
    # messages when the run starts (loom/thread_queue.py), so the runs must have run first.
    wait_until(lambda: dict(read(server, select(Run.state, func.count()).where(Run.workspace_id == ws)
                                 .group_by(Run.state))) == {"closed": 40})
    marks = [m for (m,) in read(server, select(Message.scheduled).join(Run, Run.id == Message.run_id).where(
        Run.workspace_id == ws, Message.scheduled.is_not(None)))]
    assert len(marks) == 40 and len({m["schedule_id"] for m in marks}) == 40 and set(
        m["schedule_id"] for m in marks) == set(made)
    origins = read(server, select(Run.origin, func.count()).where(Run.workspace_id == ws).group_by(Run.origin))
    assert dict(origins) == {"schedule": 40}
    assert first.popen.poll() is None and second.popen.poll() is None


def test_a_schedule_due_while_no_worker_ran_fires_once_late_after_the_restart(server, tenant, workers):
    agent = tenant.add_agent({**SCRIPTED_AGENT, "name": "restart"})
    h = tenant.headers("web:restart")
    worker = workers()
    with httpx.Client(base_url=server.base_url, timeout=10) as http:
        thread = open_thread(http, h, agent)
        made = http.post(f"/v1/loom/threads/{thread}/schedules", headers=h, json={
            "content": "after the outage", "at": (dt.datetime.now(dt.UTC) + dt.timedelta(minutes=10)).isoformat()}
        ).json()["data"]
        worker.kill()  # the deployment goes down before it is due ...
        # ... and stays down past it: it fell due five minutes ago.
        write(server, update(Schedule).where(Schedule.id == made["id"]).values(
            next_run_at=dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)))
        time.sleep(1.0)
        assert read(server, select(Schedule.runs).where(Schedule.id == made["id"])) == [(0,)]
        workers()  # back up
        wait_until(lambda: read(server, select(Schedule.state).where(Schedule.id == made["id"])) == [("ended",)])
        time.sleep(1.0)  # more polls: still once
        items = http.get(f"/v1/loom/threads/{thread}/messages", headers=h).json()["data"]["items"]
    fired = [m for m in items if m["scheduled"]]
    assert len(fired) == 1
    assert fired[0]["scheduled"]["late"] is True and fired[0]["scheduled"]["late_seconds"] >= 300
