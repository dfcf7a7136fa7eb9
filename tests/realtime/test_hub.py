"""The hub's fan-out, bounded outboxes and limits, driven through plain async send/close callables
(the socket side is covered over real WebSockets in test_protocol and test_slow_consumer)."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import re
import uuid

import pytest

from heddle.realtime import protocol
from heddle.realtime.hub import HubFull, RealtimeHub
from realtime.realtime_testkit import FIXED_CHANNEL

CHANNEL = FIXED_CHANNEL


class Peer:
    """The far end of a connection: records frames; `gate` can hold every send (a stalled reader)."""

    def __init__(self) -> None:
        self.frames: list[dict] = []
        self.closed: list[tuple[int, str]] = []
        self.gate = asyncio.Event()
        self.gate.set()

    async def send(self, text: str) -> None:
        await self.gate.wait()
        frame = json.loads(text)
        frame["data"] = json.loads(frame["data"])
        self.frames.append(frame)

    async def close(self, code: int, reason: str) -> None:
        self.closed.append((code, reason))

    def events(self) -> list:
        return [f["data"].get("n") for f in self.frames]


async def settle() -> None:
    """Let the writer tasks run until they have nothing left to do."""
    for _ in range(200):
        await asyncio.sleep(0)


def connect(hub: RealtimeHub, channel: str = CHANNEL) -> tuple:
    peer = Peer()
    conn = hub.open(peer.send, peer.close)
    assert hub.subscribe(conn, channel)
    return conn, peer


async def test_publish_fans_out_in_order_and_counts_deliveries():
    hub = RealtimeHub()
    (_, a), (_, b) = connect(hub), connect(hub)
    for n in range(30):
        assert await hub.publish(CHANNEL, "run.updated", {"n": n}) == 2
    assert await hub.publish(f"private-thread-{uuid.uuid4()}", "run.updated", {}) == 0
    await settle()
    assert a.events() == b.events() == list(range(30))
    assert a.frames[0] == {"event": "run.updated", "channel": CHANNEL, "data": {"n": 0}}
    assert hub.published_total == 31
    await hub.aclose()


async def test_a_stalled_subscriber_is_dropped_and_never_slows_the_others():
    hub = RealtimeHub(queue_size=4)
    (slow_conn, slow), (_, fast) = connect(hub), connect(hub)
    slow.gate.clear()  # stops reading
    for n in range(20):
        await asyncio.wait_for(hub.publish(CHANNEL, "run.updated", {"n": n}), 0.1)  # never waits on a socket
        await settle()
    assert fast.events() == list(range(20))
    assert hub.dropped_total == 1 and hub.subscriber_count(CHANNEL) == 1 and slow_conn.socket_id not in \
        {c.socket_id for c in hub._channels[CHANNEL]}
    slow.gate.set()  # the stalled send completes; the backlog is discarded, then the socket is closed
    await asyncio.wait_for(slow_conn.writer, 1)
    assert slow.events() == [0] and slow.closed == [(protocol.OVER_CAPACITY, "Over capacity: client too slow")]
    assert slow_conn.close_code == protocol.OVER_CAPACITY
    await hub.aclose()


async def test_a_send_that_never_completes_ends_the_writer_after_send_timeout():
    hub = RealtimeHub(send_timeout=0.1)
    conn, peer = connect(hub)
    peer.gate.clear()
    await hub.publish(CHANNEL, "run.updated", {"n": 1})
    await asyncio.wait_for(conn.writer, 1)
    assert conn.closing and not peer.closed
    # The next publish notices and forgets it (not counted as a slow drop: it is already gone).
    assert await hub.publish(CHANNEL, "run.updated", {"n": 2}) == 0
    assert hub.subscriber_count(CHANNEL) == 0 and hub.dropped_total == 0 and hub.connection_count == 0


async def test_a_send_error_ends_the_writer_quietly():
    hub = RealtimeHub()

    async def broken(text: str) -> None:
        raise ConnectionResetError

    conn = hub.open(broken, Peer().close)
    hub.subscribe(conn, CHANNEL)
    await hub.publish(CHANNEL, "run.updated", {})
    await asyncio.wait_for(conn.writer, 1)
    assert conn.closing and conn.writer.exception() is None


async def test_data_is_encoded_at_publish_time():
    hub = RealtimeHub()
    _, peer = connect(hub)
    data = {"n": 1, "at": dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.UTC), "id": uuid.UUID(int=7)}
    await hub.publish(CHANNEL, "run.updated", data)
    data["n"] = 2  # a later change must not leak into the queued event
    await settle()
    assert peer.frames[0]["data"] == {"n": 1, "at": "2024-01-02T03:04:05+00:00", "id": str(uuid.UUID(int=7))}


@pytest.mark.parametrize("channel,event,data,error", [
    ("bad channel", "run.updated", {}, ValueError),
    ("", "run.updated", {}, ValueError),
    (CHANNEL, "", {}, ValueError),
    (CHANNEL, "x" * 201, {}, ValueError),
    (CHANNEL, "new\nline", {}, ValueError),
    (CHANNEL, "run.updated", ["not", "a", "dict"], TypeError),
    (CHANNEL, "run.updated", {"x": float("nan")}, ValueError),
    (CHANNEL, "run.updated", {"x": object()}, TypeError),
    (CHANNEL, "run.updated", {"x": {1, 2}}, TypeError),
    (CHANNEL, "run.updated", {"x": "y" * 2000}, ValueError),  # over max_event_bytes below
])
async def test_invalid_publishes_raise_and_send_nothing(channel, event, data, error):
    hub = RealtimeHub(max_event_bytes=1024)
    _, peer = connect(hub)
    with pytest.raises(error):
        await hub.publish(channel, event, data)
    await settle()
    assert peer.frames == [] and hub.published_total == 0


async def test_subscription_and_connection_limits():
    hub = RealtimeHub(max_connections=2, max_channels_per_connection=2)
    conn, _ = connect(hub)
    assert hub.subscribe(conn, CHANNEL)  # again: already counted
    assert hub.subscribe(conn, "private-thread-2")
    assert not hub.subscribe(conn, "private-thread-3")
    hub.open(Peer().send, Peer().close)
    with pytest.raises(HubFull):
        hub.open(Peer().send, Peer().close)
    await hub.aclose()


async def test_forget_removes_every_subscription_and_is_idempotent():
    hub = RealtimeHub()
    conn, _ = connect(hub)
    hub.subscribe(conn, "private-thread-2")
    hub.forget(conn)
    hub.forget(conn)
    assert hub.channel_count == 0 and hub.connection_count == 0 and conn.channels == set()
    hub.unsubscribe(conn, CHANNEL)  # unknown: no error
    await conn.abort()


async def test_socket_ids_are_pusher_shaped_and_unique():
    hub = RealtimeHub()
    ids = {hub.open(Peer().send, Peer().close).socket_id for _ in range(500)}
    assert len(ids) == 500 and all(re.fullmatch(r"[0-9]+\.[0-9]+", i) for i in ids)
    await hub.aclose()


async def test_aclose_sends_queued_frames_then_closes_with_4200():
    hub = RealtimeHub()
    conn, peer = connect(hub)
    await hub.publish(CHANNEL, "run.updated", {"n": 1})
    await hub.aclose()
    assert peer.events() == [1] and peer.closed == [(protocol.SERVER_CLOSING, "Server shutting down")]
    assert hub.stats() == {"connections": 0, "channels": 0, "published_total": 1, "dropped_total": 0}


@pytest.mark.parametrize("options", [{"queue_size": 0}, {"max_connections": 0}, {"send_timeout": 0},
                                     {"max_channels_per_connection": 0}, {"max_event_bytes": 0}])
def test_hub_limits_must_be_positive(options):
    with pytest.raises(ValueError):
        RealtimeHub(**options)
