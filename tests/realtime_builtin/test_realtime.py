"""The built-in Pusher-protocol server and the realtime endpoints, with a real WebSocket client."""

from __future__ import annotations

import asyncio
import json
import uuid

import pusher
import pytest
from hypothesis import given
from hypothesis import strategies as st
from websockets.asyncio.client import connect

from heddle.realtime.channel_auth import channel_auth, is_valid_socket_id, parse_thread_channel
from support.loom import SCRIPTED_AGENT, open_thread


@given(a=st.integers(0, 10**12), b=st.integers(0, 10**12), thread=st.uuids())
def test_signatures_equal_the_official_pusher_library(a, b, thread):
    socket_id, channel = f"{a}.{b}", f"private-thread-{thread}"
    official = pusher.Pusher(app_id="1", key="app-key", secret="app-secret")
    assert channel_auth("app-key", "app-secret", socket_id, channel) == official.authenticate(
        channel=channel, socket_id=socket_id)["auth"]


@pytest.mark.parametrize("name", ["private-thread-", "private-thread-x", "presence-thread-" + str(uuid.uuid4()),
                                  "private-thread-" + str(uuid.uuid4()).upper(), "private-thread-" + str(uuid.uuid4()) + "x",
                                  "thread-" + str(uuid.uuid4())])
def test_only_canonical_thread_channels(name):
    assert parse_thread_channel(name) is None
    assert not is_valid_socket_id("1.2.3") and not is_valid_socket_id("abc") and is_valid_socket_id("123.456")


class Socket:
    """A raw Pusher-protocol client over a real WebSocket."""

    def __init__(self, ws):
        self.ws = ws

    async def recv(self, timeout: float = 5) -> dict:
        frame = json.loads(await asyncio.wait_for(self.ws.recv(), timeout))
        if isinstance(frame.get("data"), str):
            try:
                frame["data"] = json.loads(frame["data"])
            except json.JSONDecodeError:
                pass
        return frame

    async def send(self, event: str, data: dict) -> None:
        await self.ws.send(json.dumps({"event": event, "data": data}))


def ws_url(server, key=None, protocol=7):
    return f"ws://127.0.0.1:{server.port}/app/{key or server.services.realtime.key}?protocol={protocol}&client=js"


async def handshake(server):
    ws = await connect(ws_url(server))
    sock = Socket(ws)
    hello = await sock.recv()
    assert hello["event"] == "pusher:connection_established"
    return sock, hello["data"]["socket_id"]


def test_config_and_auth_endpoints(http, tenant):
    agent = tenant.add_agent(SCRIPTED_AGENT)
    h = tenant.headers()
    config = http.get("/v1/loom/realtime/config", headers=h).json()["data"]
    assert config["enabled"] is True and config["key"] and config["ws_port"]
    assert set(config) == {"enabled", "key", "cluster", "ws_host", "ws_port", "force_tls"}
    thread = open_thread(http, h, agent)
    channel = f"private-thread-{thread}"
    body = {"socket_id": "123.456", "channel_name": channel}
    resp = http.post("/v1/loom/realtime/auth", json=body, headers=h)
    assert resp.status_code == 200
    expected = channel_auth(config["key"], tenant.server.services.realtime.secret, "123.456", channel)
    assert resp.json()["data"]["auth"] == expected == resp.json()["auth"]
    form = http.post("/v1/loom/realtime/auth", content=f"socket_id=123.456&channel_name={channel}",
                     headers={**h, "Content-Type": "application/x-www-form-urlencoded"})
    assert form.status_code == 200 and form.json()["data"]["auth"] == expected
    for bad in ({"socket_id": "x", "channel_name": channel}, {"socket_id": "1.2", "channel_name": "private-x"},
                {"socket_id": "1.2"}, {}):
        r = http.post("/v1/loom/realtime/auth", json=bad, headers=h)
        assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_request"
    other = http.post("/v1/loom/realtime/auth", json=body, headers=tenant.headers("web:mallory"))
    assert other.status_code == 403 and other.json()["error"]["code"] == "forbidden"
    unknown = {"socket_id": "1.2", "channel_name": f"private-thread-{uuid.uuid4()}"}
    assert http.post("/v1/loom/realtime/auth", json=unknown, headers=h).status_code == 403
    assert http.post("/v1/loom/realtime/auth", json=body, headers=tenant.headers(subject=None)).status_code == 400
    assert http.post("/v1/loom/realtime/auth", json=body).status_code == 401


def test_realtime_off_for_a_workspace(http, tenant):
    tenant.update(realtime=False)
    h = tenant.headers()
    assert http.get("/v1/loom/realtime/config", headers=h).json()["data"]["enabled"] is False
    agent = tenant.add_agent(SCRIPTED_AGENT)
    thread = open_thread(http, h, agent)
    r = http.post("/v1/loom/realtime/auth", json={"socket_id": "1.2", "channel_name": f"private-thread-{thread}"},
                  headers=h)
    assert r.status_code == 409 and r.json()["error"]["code"] == "realtime_disabled"


async def test_protocol_ping_bad_json_unknown_key_and_bad_auth(server):
    sock, socket_id = await handshake(server)
    await sock.send("pusher:ping", {})
    assert (await sock.recv())["event"] == "pusher:pong"
    await sock.ws.send("not json")
    assert (await sock.recv())["event"] == "pusher:error"
    channel = f"private-thread-{uuid.uuid4()}"
    await sock.send("pusher:subscribe", {"channel": channel, "auth": "wrong:sig"})
    assert (await sock.recv())["event"] == "pusher:error"
    assert (await sock.recv())["event"] == "pusher:subscription_error"
    await sock.send("client-hello", {"channel": channel})
    assert (await sock.recv())["event"] == "pusher:error"
    await sock.ws.close()
    ws = await connect(ws_url(server, key="nope"))
    err = json.loads(await ws.recv())
    assert err["event"] == "pusher:error" and json.loads(err["data"])["code"] == 4001
    await asyncio.sleep(0.05)
    assert ws.close_code == 4001 or (await ws.wait_closed()) is None
    ws = await connect(ws_url(server, protocol=99))
    err = json.loads(await ws.recv())
    assert json.loads(err["data"])["code"] == 4007


async def test_events_of_a_run_arrive_in_order(server, tenant):
    import httpx

    agent = tenant.add_agent(SCRIPTED_AGENT)
    h = tenant.headers("web:live")
    async with httpx.AsyncClient(base_url=server.base_url) as http:
        thread = (await http.post("/v1/loom/threads", json={"agent": agent}, headers=h)).json()["data"]["id"]
        sock, socket_id = await handshake(server)
        channel = f"private-thread-{thread}"
        auth = (await http.post("/v1/loom/realtime/auth", json={"socket_id": socket_id, "channel_name": channel},
                                headers=h)).json()["data"]["auth"]
        await sock.send("pusher:subscribe", {"channel": channel, "auth": auth})
        ok = await sock.recv()
        assert ok["event"] == "pusher_internal:subscription_succeeded" and ok["channel"] == channel
        run_id = (await http.post(f"/v1/loom/threads/{thread}/messages", json={"content": "hello"},
                                  headers=h)).json()["data"]["run_id"]
        events = []
        while not (events and events[-1]["event"] == "run.updated" and events[-1]["data"]["terminal"]):
            events.append(await sock.recv())
        names = [(e["event"], e["data"].get("role") or e["data"].get("state")) for e in events]
        assert names == [("message.created", "user"), ("run.updated", "running"),
                         ("message.created", "assistant"), ("run.updated", "closed")]
        assert all(e["channel"] == channel for e in events) and events[-1]["data"]["id"] == run_id
        await sock.send("pusher:unsubscribe", {"channel": channel})
        await asyncio.sleep(0.05)
        assert channel not in server.services.realtime.hub.channels
        await sock.ws.close()


async def test_slow_subscriber_is_dropped_without_stalling_others():
    from heddle.realtime.hub import RealtimeHub

    hub = RealtimeHub(queue_size=8)
    received, closed = [], []
    stall = asyncio.Event()

    async def slow_send(frame):
        await stall.wait()  # a client that never reads

    async def fast_send(frame):
        received.append(json.loads(frame)["event"])

    async def close(code, reason):
        closed.append(code)

    slow, fast = hub.connect("1.1", slow_send, close), hub.connect("2.2", fast_send, close)
    hub.subscribe(slow, "private-thread-x")
    hub.subscribe(fast, "private-thread-x")
    for i in range(50):
        await hub.publish("private-thread-x", f"e{i}", {})
        await asyncio.sleep(0)
    await asyncio.sleep(0.05)
    assert received == [f"e{i}" for i in range(50)]  # the fast one got everything, in order
    assert closed == [4100] and slow.dropped and hub.dropped_total == 1
    assert slow not in hub.channels["private-thread-x"]
    await hub.disconnect(fast)
