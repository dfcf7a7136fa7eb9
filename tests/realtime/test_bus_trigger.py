"""On the PostgreSQL bus a run's events are sent by the transaction that stores them (migration
0010's trigger): two API servers on one database, the run on B, what A's relay delivers."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from heddle.loom.event_signals import RunEventSignals
from realtime.test_event_bus import shared_settings
from support.loom import SCRIPTED_AGENT, open_thread, post, wait_run
from support.server import LiveServer
from support.sse import parse
from support.tenants import make_tenant

pytestmark = pytest.mark.postgres


@pytest.fixture
def pg_pair(pg_database_factory):
    url = pg_database_factory()
    shared = shared_settings("postgres")
    a = LiveServer(database_url=url, **shared).start()
    b = LiveServer(database_url=url, **shared).start()
    seen: list[tuple[str, str, dict]] = []
    lock = threading.Lock()

    def observe(channel: str, event: str, data: dict) -> None:
        with lock:
            seen.append((channel, event, data))

    a.services.realtime.relay.observers.append(observe)
    yield a, b, seen
    a.stop()
    b.stop()


def _wait_for(seen, predicate, timeout: float = 15) -> list:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [e for e in list(seen) if predicate(e)]
        if found:
            return found
        time.sleep(0.05)
    return []


def test_a_message_far_over_the_notify_limit_arrives_whole_with_the_run_events(pg_pair):
    a, b, seen = pg_pair
    tenant = make_tenant(b)
    agent = tenant.add_agent(SCRIPTED_AGENT)
    h = tenant.headers("web:long")
    text = "é" * 9000 + " end"  # stored as JSON escapes: about 54 KB, seven times a NOTIFY's limit
    with b.client() as http:
        thread = open_thread(http, h, agent)
        run_id = post(http, h, thread, text)["run_id"]
        assert wait_run(http, h, run_id)["state"] == "closed"
    channel = f"private-thread-{thread}"
    closed = _wait_for(seen, lambda e: e[1] == "run.updated" and e[2].get("state") == "closed")
    assert closed and closed[0][0] == channel
    events = [(event, data) for ch, event, data in seen if ch == channel]
    users = [d for e, d in events if e == "message.created" and d["role"] == "user"]
    assert [u["content"] for u in users] == [text]
    names = [e for e, _ in events]
    # In commit order: the post's two events, the reply's pieces (one stored row, relayed one by
    # one), then the reply and the run's end.
    assert names[:2] == ["message.created", "run.updated"] and names[-2:] == ["message.created", "run.updated"]
    pieces = [d for e, d in events if e == "message.delta"]
    assert pieces and [p["seq"] for p in pieces] == list(range(len(pieces)))
    assert b.services.realtime.publisher.sent == 0  # none of them went through the publisher


def test_a_workspace_with_realtime_off_sends_nothing(pg_pair):
    a, b, seen = pg_pair
    tenant = make_tenant(b)
    tenant.update(realtime=False)
    agent = tenant.add_agent(SCRIPTED_AGENT)
    h = tenant.headers("web:quiet")
    with b.client() as http:
        thread = open_thread(http, h, agent)
        run_id = post(http, h, thread, "hello")["run_id"]
        assert wait_run(http, h, run_id)["state"] == "closed"
    # Another workspace's run afterwards: once its events are here, the quiet one's would be too.
    loud = make_tenant(b)
    loud_agent = loud.add_agent(SCRIPTED_AGENT)
    with b.client() as http:
        lh = loud.headers("web:loud")
        loud_thread = open_thread(http, lh, loud_agent)
        assert wait_run(http, lh, post(http, lh, loud_thread, "hello")["run_id"])["state"] == "closed"
    assert _wait_for(seen, lambda e: e[0] == f"private-thread-{loud_thread}" and e[1] == "run.updated"
                     and e[2].get("state") == "closed")
    assert not [e for e in seen if e[0] == f"private-thread-{thread}"]


def test_each_stored_event_arrives_with_its_seq_so_streams_elsewhere_need_no_read(pg_pair):
    """Migration 0019: every row carries its `seq` (a packed row's pieces numbered up to it), the
    numbers of the stored log exactly; the SSE streams of A are handed the events themselves."""
    a, b, _seen = pg_pair
    fed: list[tuple[str, dict, int | None]] = []
    lock = threading.Lock()

    def observe(event: str, data: dict, seq: int | None) -> None:
        with lock:
            fed.append((event, data, seq))

    a.services.realtime.relay.log_observers.append(observe)
    tenant = make_tenant(b)
    agent = tenant.add_agent(SCRIPTED_AGENT)
    h = tenant.headers("web:seq")
    with b.client() as http:
        thread = open_thread(http, h, agent)
        run_id = post(http, h, thread, "tell me something in a few words")["run_id"]
        assert wait_run(http, h, run_id)["state"] == "closed"
    assert _wait_for(fed, lambda e: e[0] == "run.updated" and e[1].get("id") == run_id
                     and e[1].get("state") == "closed")
    with a.client() as http, http.stream("GET", f"/v1/loom/runs/{run_id}/events", headers=h) as response:
        lines = list(response.iter_lines())
    stored = [e for e in parse(iter(lines)) if "comment" not in e]
    mine = [(event, seq) for event, data, seq in fed
            if (data.get("id") if event == "run.updated" else data.get("run_id")) == run_id]
    assert mine == [(e["event"], int(e["id"])) for e in stored]
    assert any(event == "message.delta" for event, _ in mine)


def test_a_stream_is_handed_an_event_with_its_seq_and_woken_to_read_one_without():
    signals = RunEventSignals()
    run_id = "6f1c0c1e-0000-4000-8000-000000000001"
    waiter = signals.subscribe(uuid.UUID(run_id))
    signals.wake("message.delta", {"run_id": run_id, "message_id": "m", "seq": 0, "delta": "hi"}, 7)
    assert [(e.name, e.seq) for e in waiter.rows] == [("message.delta", 7)] and not waiter.stale
    signals.wake("run.updated", {"id": run_id, "state": "closed"})
    assert waiter.stale and waiter.event.is_set()
