"""The built-in and null publishers, and choosing a publisher from settings."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from heddle.config import Settings
from heddle.realtime.hub import RealtimeHub
from heddle.realtime.publishers import (
    BuiltinPublisher,
    EventPublisher,
    NullPublisher,
    PusherPublisher,
    build_publisher,
)
from heddle.realtime.signing import channel_auth
from realtime.realtime_testkit import APP_KEY, APP_SECRET, FIXED_CHANNEL, PusherSocket

CHANNEL = FIXED_CHANNEL


async def test_builtin_publisher_reaches_subscribers_of_the_live_server(live):
    sock = await PusherSocket.open(live.port)
    await sock.subscribe(CHANNEL, channel_auth(APP_KEY, APP_SECRET, sock.socket_id, CHANNEL))
    pub = BuiltinPublisher(live.hub)
    await pub.publish(CHANNEL, "message.created", {"id": "m1", "role": "user"})
    await pub.publish(CHANNEL, "run.updated", {"id": "r1", "state": "running"})
    first, second = await sock.recv(), await sock.recv()
    assert (first["event"], first["data"]["id"]) == ("message.created", "m1")
    assert (second["event"], second["data"]["state"]) == ("run.updated", "running")
    await pub.aclose()
    await sock.close()


@pytest.mark.parametrize("channel,event,data", [
    (CHANNEL, "run.updated", {"x": object()}),
    (CHANNEL, "bad event name", {}),
    ("bad channel", "run.updated", {}),
    (CHANNEL, "run.updated", {"big": "x" * 300_000}),
])
async def test_builtin_publisher_never_raises_into_the_caller(channel, event, data):
    pub = BuiltinPublisher(RealtimeHub())
    await pub.publish(channel, event, data)
    assert pub.failed == 1


async def test_null_publisher_accepts_and_drops():
    pub = NullPublisher()
    await pub.publish(CHANNEL, "run.updated", {"x": object()})
    await pub.aclose()


def test_every_publisher_satisfies_the_protocol():
    for pub in (NullPublisher(), BuiltinPublisher(RealtimeHub()), PusherPublisher("1", "k", "s")):
        assert isinstance(pub, EventPublisher)


def test_build_publisher_builtin_needs_the_hub():
    hub = RealtimeHub()
    pub = build_publisher("builtin", hub, Settings())
    assert isinstance(pub, BuiltinPublisher) and pub.hub is hub
    with pytest.raises(ValueError, match="RealtimeHub"):
        build_publisher("builtin", None, Settings())


def test_build_publisher_pusher_needs_credentials():
    with pytest.raises(ValueError) as info:
        build_publisher("pusher", None, Settings(pusher_key="k"))
    assert "HEDDLE_PUSHER_APP_ID" in str(info.value) and "HEDDLE_PUSHER_SECRET" in str(info.value)
    assert "HEDDLE_PUSHER_KEY" not in str(info.value)
    pub = build_publisher("pusher", None, Settings(pusher_app_id="1", pusher_key="k", pusher_secret="s"))
    assert isinstance(pub, PusherPublisher)


async def test_build_publisher_pusher_uses_the_configured_host(api_settings):
    settings, api = api_settings
    pub = build_publisher("pusher", None, settings)
    await pub.publish(CHANNEL, "run.updated", {"n": 1})
    await asyncio.wait_for(pub.aclose(), 10)
    assert pub.sent == 1 and [e["channels"] for e in api.events] == [[CHANNEL]]


def test_build_publisher_off_and_unknown():
    assert isinstance(build_publisher("off", None, Settings()), NullPublisher)
    with pytest.raises(ValueError, match="unknown realtime mode"):
        build_publisher("carrier-pigeon", None, Settings())  # type: ignore[arg-type]


@pytest.fixture
async def api_settings():
    from realtime.pusher_events_api import PusherEventsAPI
    from realtime.realtime_testkit import LoopServer

    api = PusherEventsAPI("77", "cfg-key", "cfg-secret")
    async with LoopServer(api.app) as server:
        yield Settings(realtime="pusher", pusher_app_id="77", pusher_key="cfg-key", pusher_secret="cfg-secret",
                       pusher_host="127.0.0.1", pusher_port=server.port, pusher_ssl=False), api


async def test_a_reply_streams_its_pieces_only_to_a_channel_someone_hears():
    """On the built-in server a delta stream asks the publisher before each piece: nobody
    subscribed, nothing is encoded or sent; a subscriber who joins mid-reply gets the rest."""
    from heddle.loom.channels import thread_channel
    from heddle.loom.deltas import DeltaStream

    received: list[str] = []

    async def send(text: str) -> None:
        received.append(text)

    async def close(code: int, reason: str) -> None:
        return None

    hub = RealtimeHub()
    thread_id = uuid.uuid4()
    stream = DeltaStream(uuid.uuid4(), thread_id, sink=BuiltinPublisher(hub))
    await stream.delta("Hello ")
    assert hub.published_total == 0
    conn = hub.open(send, close)
    assert hub.subscribe(conn, thread_channel(thread_id))
    await stream.delta("world.")
    for _ in range(20):
        if received:
            break
        await asyncio.sleep(0.01)
    assert hub.published_total == 1 and len(received) == 1 and '"seq\\":1' in received[0]
    await hub.aclose()
