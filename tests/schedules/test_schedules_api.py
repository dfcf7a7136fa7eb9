"""Schedules over HTTP on a real server (SQLite and PostgreSQL): made, listed, cancelled, refused
when bad, and fired by the server's own loop as a message marked scheduled that starts a run."""

from __future__ import annotations

import datetime as dt
import time
from zoneinfo import ZoneInfo

import pytest

from support.loom import SCRIPTED_AGENT, open_thread, wait_run
from support.tenants import make_tenant

SERVER_SETTINGS = {"schedule_poll_seconds": 0.2, "schedules_max_per_thread": 3, "schedules_max_per_subject": 4}


def soon(seconds: float = 1.0) -> str:
    return (dt.datetime.now(dt.UTC) + dt.timedelta(seconds=seconds)).isoformat()


@pytest.fixture
def thread(tenant, http):
    agent = tenant.add_agent(SCRIPTED_AGENT)
    return open_thread(http, tenant.headers(), agent)


def schedules_of(http, tenant, thread_id, subject="web:alice"):
    resp = http.get(f"/v1/loom/threads/{thread_id}/schedules", headers=tenant.headers(subject))
    assert resp.status_code == 200, resp.text
    return resp.json()["data"]["items"]


def wait_for(predicate, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (value := predicate()):
            return value
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


def test_a_one_off_schedule_fires_once_as_a_scheduled_message_and_a_run(tenant, http, thread):
    h = tenant.headers()
    resp = http.post(f"/v1/loom/threads/{thread}/schedules", json={"content": "check my transfer", "at": soon(3)},
                     headers=h)
    assert resp.status_code == 201, resp.text
    made = resp.json()["data"]
    assert made["state"] == "active" and made["next_run_at"] and made["created_by"] == {"kind": "caller", "run_id": None}

    def fired():
        items = http.get(f"/v1/loom/threads/{thread}/messages", headers=h).json()["data"]["items"]
        return [m for m in items if m["scheduled"]]

    messages = wait_for(fired)
    assert len(messages) == 1
    mark = messages[0]["scheduled"]
    assert messages[0]["content"] == "check my transfer" and messages[0]["role"] == "user"
    assert mark["schedule_id"] == made["id"] and mark["created_by"] == "caller" and mark["late"] is False
    run = wait_run(http, h, messages[0]["run_id"])
    assert run["state"] == "closed" and run["origin"] == "schedule"
    trace = http.get(f"/v1/loom/runs/{run['id']}/trace", headers=h).json()["data"]
    assert trace["origin"] == "schedule"
    (after,) = schedules_of(http, tenant, thread)
    assert after["state"] == "ended" and after["runs"] == 1 and after["next_run_at"] is None
    assert after["last_run"]["run_id"] == run["id"]
    time.sleep(0.6)  # a few more polls: still one
    assert len(fired()) == 1


def test_a_cancelled_schedule_never_fires(tenant, http, thread):
    h = tenant.headers()
    made = http.post(f"/v1/loom/threads/{thread}/schedules", json={"content": "never", "at": soon(3.0)},
                     headers=h).json()["data"]
    resp = http.delete(f"/v1/loom/schedules/{made['id']}", headers=h)
    assert resp.status_code == 200 and resp.json()["data"]["deleted"] is True
    time.sleep(4.0)
    items = http.get(f"/v1/loom/threads/{thread}/messages", headers=h).json()["data"]["items"]
    assert items == []
    assert http.delete(f"/v1/loom/schedules/{made['id']}", headers=h).status_code == 404


def test_a_cron_schedule_is_listed_with_its_next_tick_in_its_time_zone(tenant, http, thread):
    h = tenant.headers()
    resp = http.post(f"/v1/loom/threads/{thread}/schedules", headers=h, json={
        "content": "weekly summary", "cron": "0 9 * * 1", "timezone": "Europe/Berlin", "max_runs": 3})
    assert resp.status_code == 201, resp.text
    made = resp.json()["data"]
    tick = dt.datetime.fromisoformat(made["next_run_at"].replace("Z", "+00:00"))
    local = tick.astimezone(ZoneInfo("Europe/Berlin"))
    assert local.weekday() == 0 and (local.hour, local.minute) == (9, 0)
    assert made["cron"] == "0 9 * * 1" and made["timezone"] == "Europe/Berlin" and made["max_runs"] == 3
    assert [s["id"] for s in schedules_of(http, tenant, thread)] == [made["id"]]


@pytest.mark.parametrize("body,field", [
    ({"content": "x", "at": "2020-01-01T09:00:00Z"}, "at"),
    ({"content": "x", "cron": "* * * * * *"}, "cron"),
    ({"content": "x", "cron": "0 0 30 2 *"}, "cron"),
    ({"content": "x", "cron": "every day"}, "cron"),
    ({"content": "x", "cron": "0 9 * * *", "timezone": "Mars/Olympus"}, "timezone"),
    ({"content": "x", "cron": "0 9 * * *", "timezone": "../../etc/passwd"}, "timezone"),
    ({"content": "x"}, "at"),
    ({"content": "x", "at": "2030-01-01T09:00:00Z", "cron": "0 9 * * *"}, "at"),
    ({"content": "x", "at": "2030-01-01T09:00:00Z", "max_runs": 2}, "ends_at"),
    ({"content": "x", "cron": "0 9 * * *", "ends_at": "2020-01-01T00:00:00Z"}, "ends_at"),
    ({"content": "x", "at": "9999-12-31T23:59:00-01:00"}, "at"),
    ({"content": "x", "at": "2099-01-01T00:00:00Z"}, "at"),  # more than five years away
    ({"content": "x", "cron": "0 9 * * *", "ends_at": "9999-12-31T23:59:00-01:00"}, "ends_at"),
])
def test_bad_timing_is_refused_with_invalid_schedule(tenant, http, thread, body, field):
    resp = http.post(f"/v1/loom/threads/{thread}/schedules", json=body, headers=tenant.headers())
    assert resp.status_code == 400, resp.text
    error = resp.json()["error"]
    assert error["code"] == "invalid_schedule" and error["details"]["field"] == field


@pytest.mark.parametrize("body", [
    {"content": "x", "at": "tomorrow at nine"},
    {"content": "x", "at": "2030-01-01T09:00:00"},  # no offset
    {"content": "", "at": "2030-01-01T09:00:00Z"},
    {"content": "x" * 32_001, "at": "2030-01-01T09:00:00Z"},
    {"content": "a\u0000b", "at": "2030-01-01T09:00:00Z"},
    {"content": "x", "at": "2030-01-01T09:00:00Z", "extra": 1},
])
def test_unparseable_or_oversized_input_is_invalid_request(tenant, http, thread, body):
    resp = http.post(f"/v1/loom/threads/{thread}/schedules", json=body, headers=tenant.headers())
    assert resp.status_code == 400, resp.text
    assert resp.json()["error"]["code"] == "invalid_request"


def test_another_subjects_thread_and_schedule_are_not_found(tenant, http, thread):
    body = {"content": "x", "at": "2030-01-01T09:00:00Z"}
    made = http.post(f"/v1/loom/threads/{thread}/schedules", json=body, headers=tenant.headers()).json()["data"]
    bob = tenant.headers("web:bob")
    assert http.post(f"/v1/loom/threads/{thread}/schedules", json=body, headers=bob).status_code == 404
    assert http.get(f"/v1/loom/threads/{thread}/schedules", headers=bob).status_code == 404
    assert http.delete(f"/v1/loom/schedules/{made['id']}", headers=bob).status_code == 404
    assert http.post(f"/v1/loom/threads/{thread}/schedules", json=body,
                     headers=tenant.headers(None)).json()["error"]["code"] == "subject_required"
    other = make_tenant(tenant.server)  # another workspace, the same subject name
    assert http.get(f"/v1/loom/threads/{thread}/schedules", headers=other.headers()).status_code == 404
    assert http.delete(f"/v1/loom/schedules/{made['id']}", headers=other.headers()).status_code == 404
    assert len(schedules_of(http, tenant, thread)) == 1


def test_too_many_schedules_per_thread_and_per_subject(tenant, http, thread):
    h = tenant.headers()
    body = {"content": "x", "at": "2030-01-01T09:00:00Z"}
    for _ in range(3):
        assert http.post(f"/v1/loom/threads/{thread}/schedules", json=body, headers=h).status_code == 201
    resp = http.post(f"/v1/loom/threads/{thread}/schedules", json=body, headers=h)
    assert resp.status_code == 409 and resp.json()["error"]["code"] == "too_many_schedules"
    assert resp.json()["error"]["details"]["scope"] == "thread"
    second = open_thread(http, h, tenant.add_agent({**SCRIPTED_AGENT, "name": "other"}))
    assert http.post(f"/v1/loom/threads/{second}/schedules", json=body, headers=h).status_code == 201
    resp = http.post(f"/v1/loom/threads/{second}/schedules", json=body, headers=h)
    assert resp.status_code == 409 and resp.json()["error"]["details"]["scope"] == "subject"


def test_deleting_the_thread_or_erasing_the_subject_deletes_its_schedules(tenant, http, thread):
    from sqlalchemy import func, select

    from heddle.loom.models import Schedule

    def count():
        return tenant.run(lambda s: s.scalar(select(func.count()).select_from(Schedule)
                                             .where(Schedule.workspace_id == tenant.workspace_id)))

    body = {"content": "x", "at": "2030-01-01T09:00:00Z"}
    http.post(f"/v1/loom/threads/{thread}/schedules", json=body, headers=tenant.headers())
    assert count() == 1
    assert http.delete(f"/v1/loom/threads/{thread}", headers=tenant.headers()).status_code == 200
    assert count() == 0
    carol = tenant.headers("web:carol")
    t2 = open_thread(http, carol, tenant.add_agent({**SCRIPTED_AGENT, "name": "c"}))
    http.post(f"/v1/loom/threads/{t2}/schedules", json=body, headers=carol)
    assert count() == 1
    assert http.delete("/v1/loom/subjects/web:carol", headers=tenant.headers(None)).status_code == 200
    assert count() == 0
