"""The server's activity timeout: ping after silence, close with 4201 when no pong follows."""

from __future__ import annotations

import asyncio
import time

import pytest

from heddle.realtime import protocol
from heddle.realtime.hub import RealtimeHub
from realtime.realtime_testkit import PusherSocket, realtime_app

ACTIVITY, PONG = 0.3, 0.3


@pytest.fixture
async def quick(module_server):
    """A server that pings after 0.3 s of client silence and waits 0.3 s for the pong."""
    server, app = module_server
    hub = RealtimeHub()
    app.app = realtime_app(hub, activity_timeout=ACTIVITY, pong_timeout=PONG)
    yield server, hub
    await hub.aclose(timeout=2)


async def test_advertised_activity_timeout_is_whole_seconds(quick):
    server, _ = quick
    sock = await PusherSocket.open(server.port)
    assert sock.activity_timeout == 1
    await sock.close()


async def test_silent_client_is_pinged_then_closed_with_4201(quick):
    server, hub = quick
    sock = await PusherSocket.open(server.port)
    started = time.monotonic()
    assert await sock.recv() == {"event": "pusher:ping", "data": {}}
    assert time.monotonic() - started >= ACTIVITY * 0.9
    error = await sock.recv()
    assert error["event"] == "pusher:error" and error["data"]["code"] == protocol.PONG_NOT_RECEIVED
    assert await sock.closed() == protocol.PONG_NOT_RECEIVED
    assert time.monotonic() - started >= (ACTIVITY + PONG) * 0.9
    await asyncio.sleep(0.05)
    assert hub.connection_count == 0


async def test_a_client_that_answers_pings_stays_connected(quick):
    server, _ = quick
    sock = await PusherSocket.open(server.port)
    for _ in range(3):
        assert (await sock.recv())["event"] == "pusher:ping"
        await sock.send("pusher:pong")
    await sock.send("pusher:ping")
    assert (await sock.recv())["event"] == "pusher:pong"
    assert sock.ws.close_code is None
    await sock.close()


async def test_any_client_message_counts_as_activity(quick):
    server, _ = quick
    sock = await PusherSocket.open(server.port)
    deadline = time.monotonic() + 3 * ACTIVITY
    while time.monotonic() < deadline:
        await sock.send("pusher:ping")
        assert (await sock.recv())["event"] == "pusher:pong"  # never a server ping in between
        await asyncio.sleep(ACTIVITY / 3)
    await sock.close()
