"""WebSocket caps before authentication (heddle/realtime/admission.py), over loopback sockets:
per client address (127.0.0.x are distinct clients) and for sockets not yet subscribed with a
valid channel signature; 4100 beyond, the slot back when a socket closes or authenticates."""

from __future__ import annotations

import asyncio
import json
import uuid

import httpx
from websockets.asyncio.client import connect

from heddle.realtime import protocol
from heddle.realtime.admission import Admission
from heddle.realtime.hub import RealtimeHub
from heddle.realtime.signing import channel_auth
from realtime.realtime_testkit import APP_KEY, APP_SECRET, LoopServer, PusherSocket, realtime_app, ws_url


async def _open(port: int, source: str) -> PusherSocket:
    return await PusherSocket.open(port, local_addr=(source, 0))


async def _refused(port: int, source: str, key: str = APP_KEY) -> tuple[dict, int | None]:
    ws = await connect(ws_url(port, key), local_addr=(source, 0))
    error = json.loads(await asyncio.wait_for(ws.recv(), 5))
    await asyncio.wait_for(ws.wait_closed(), 5)
    return json.loads(error["data"]), ws.close_code


async def test_per_address_cap_refuses_with_4100_and_frees_on_close():
    hub = RealtimeHub()
    admission = Admission(per_address=3, unauthenticated=100)
    async with LoopServer(realtime_app(hub, admission=admission)) as server:
        held = [await _open(server.port, "127.0.0.2") for _ in range(3)]
        data, code = await _refused(server.port, "127.0.0.2")
        assert code == protocol.OVER_CAPACITY and data["code"] == protocol.OVER_CAPACITY
        assert "this address" in data["message"]
        other = await _open(server.port, "127.0.0.3")  # another client is not affected
        await held[0].close()
        await asyncio.sleep(0.2)
        again = await _open(server.port, "127.0.0.2")
        for sock in [*held[1:], other, again]:
            await sock.close()
        await asyncio.sleep(0.2)
    assert admission.by_address == {} and admission.unauthenticated == 0 and hub.connection_count == 0


async def test_unauthenticated_cap_counts_only_sockets_not_yet_subscribed():
    hub = RealtimeHub()
    admission = Admission(per_address=0, unauthenticated=2)
    async with LoopServer(realtime_app(hub, admission=admission)) as server:
        first = await _open(server.port, "127.0.0.4")
        second = await _open(server.port, "127.0.0.5")
        data, code = await _refused(server.port, "127.0.0.6")
        assert code == protocol.OVER_CAPACITY and "not yet subscribed" in data["message"]
        # a bad signature does not authenticate
        channel = f"private-thread-{uuid.uuid4()}"
        assert (await first.subscribe(channel, "x:y"))["event"] == "pusher:subscription_error"
        assert (await _refused(server.port, "127.0.0.6"))[1] == protocol.OVER_CAPACITY
        # a valid one does: its slot goes to the next newcomer
        ok = await first.subscribe(channel, channel_auth(APP_KEY, APP_SECRET, first.socket_id, channel))
        assert ok["event"] == "pusher_internal:subscription_succeeded"
        third = await _open(server.port, "127.0.0.6")
        assert admission.unauthenticated == 2
        for sock in (first, second, third):
            await sock.close()
        await asyncio.sleep(0.2)
    assert admission.unauthenticated == 0


async def test_the_served_app_caps_sockets_per_address_and_counts_them(tmp_path):
    from support.server import LiveServer

    live = LiveServer(database_url=f"sqlite+aiosqlite:///{tmp_path / 'h.db'}",
                      realtime_max_connections_per_address=2)
    await asyncio.to_thread(live.start)
    try:
        key = live.services.realtime.key
        held = []
        for _ in range(2):
            sock = PusherSocket(await connect(ws_url(live.port, key), local_addr=("127.0.0.7", 0)))
            assert (await sock.recv())["event"] == "pusher:connection_established"
            held.append(sock)
        data, code = await _refused(live.port, "127.0.0.7", key)
        assert code == protocol.OVER_CAPACITY
        async with httpx.AsyncClient() as http:
            metrics = (await http.get(f"{live.base_url}/metrics")).text
        assert 'heddle_realtime_connections_refused_total{limit="address"} 1.0' in metrics
        for sock in held:
            await sock.close()
    finally:
        await asyncio.to_thread(live.stop)
