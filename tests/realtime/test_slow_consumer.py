"""Over real sockets: a client that stops reading is dropped with 4100 while a fast one gets every
event in order, and publishing never waits on either."""

from __future__ import annotations

import asyncio
import base64
import os
import time
import uuid

from websockets.asyncio.client import connect

from heddle.realtime import protocol
from heddle.realtime.hub import RealtimeHub
from heddle.realtime.signing import channel_auth
from realtime.realtime_testkit import (
    APP_KEY,
    APP_SECRET,
    PusherSocket,
    realtime_app,
    small_receive_buffer_socket,
    ws_url,
)

MAX_EVENTS = 3_000  # 48 MB: an upper bound, not the expectation; the drop comes much earlier
AFTER_DROP = 50


def pad() -> str:
    """16 kB that per-message deflate cannot shrink."""
    return base64.b64encode(os.urandom(12_000)).decode()


async def test_slow_subscriber_is_dropped_and_the_fast_one_gets_everything(module_server):
    server, app = module_server
    hub = RealtimeHub(queue_size=16, send_timeout=10)
    app.app = realtime_app(hub)
    channel = f"private-thread-{uuid.uuid4()}"

    fast = await PusherSocket.open(server.port)
    # The slow client: a tiny receive buffer, and its library stops reading after one queued frame.
    slow = PusherSocket(await connect(ws_url(server.port), sock=small_receive_buffer_socket(server.port),
                                      max_queue=1))
    hello = await slow.recv()
    slow.socket_id = hello["data"]["socket_id"]
    for sock in (fast, slow):
        ok = await sock.subscribe(channel, channel_auth(APP_KEY, APP_SECRET, sock.socket_id, channel))
        assert ok["event"] == "pusher_internal:subscription_succeeded"

    received: list[int] = []
    published = 0

    async def read_fast() -> None:
        while True:
            received.append((await fast.recv())["data"]["n"])

    def dropped() -> bool:
        return hub.dropped_total > 0

    reader = asyncio.create_task(read_fast())
    slowest_publish = 0.0
    # Publish until the socket buffers towards the slow client are full and it is dropped, then
    # some more: how much the kernel buffers absorb first differs between machines.
    after_drop = 0
    while published < MAX_EVENTS and after_drop < AFTER_DROP:
        started = time.perf_counter()
        await hub.publish(channel, "run.updated", {"n": published, "pad": pad()})
        slowest_publish = max(slowest_publish, time.perf_counter() - started)
        published += 1
        after_drop += dropped()
        await asyncio.sleep(0.001)  # a realistic pace, so the fast client is never the slow one
    for _ in range(1000):
        if len(received) >= published:
            break
        await asyncio.sleep(0.01)
    reader.cancel()

    assert dropped(), f"the slow client was not dropped after {published} events"
    assert received == list(range(published))
    assert hub.dropped_total == 1 and hub.subscriber_count(channel) == 1
    # Publishing never waited on the stalled socket: such a wait lasts the hub's send timeout
    # (10 s), so a tenth of it tells the two apart on a loaded machine too (a bound of 50 ms
    # failed under a load of 10 on 2 cores while nothing waited).
    assert slowest_publish < hub.send_timeout / 10

    # The slow client, reading at last, finds an in-order prefix and then the 4100 close.
    got: list[int] = []
    try:
        while True:
            got.append((await slow.recv())["data"]["n"])
    except Exception:
        pass
    assert await slow.closed() == protocol.OVER_CAPACITY
    assert got == list(range(len(got))) and len(got) < published - AFTER_DROP
    await fast.close()
    await hub.aclose(timeout=2)
