"""Realtime inside the app: config/auth endpoints and a run's events over a real WebSocket.

The protocol, signing, hub and publishers are tested in tests/realtime."""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest
from websockets.asyncio.client import connect

from heddle.realtime.signing import channel_auth
from support.loom import SCRIPTED_AGENT, open_thread


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
        deltas = [e["data"] for e in events if e["event"] == "message.delta"]
        names = [(e["event"], e["data"].get("role") or e["data"].get("state")) for e in events
                 if e["event"] != "message.delta"]
        assert names == [("message.created", "user"), ("run.updated", "running"),
                         ("message.created", "assistant"), ("run.updated", "closed")]
        # The reply streamed word by word between `running` and the whole message, in order.
        reply = events[-2]["data"]
        assert [e["event"] for e in events[2:-2]] == ["message.delta"] * len(deltas) and len(deltas) > 1
        assert [d["seq"] for d in deltas] == list(range(len(deltas)))
        assert {(d["run_id"], d["message_id"]) for d in deltas} == {(run_id, reply["id"])}
        assert "".join(d["delta"] for d in deltas) == reply["content"]
        assert all(e["channel"] == channel for e in events) and events[-1]["data"]["id"] == run_id
        assert server.services.realtime.hub.subscriber_count(channel) == 1
        await sock.send("pusher:unsubscribe", {"channel": channel})
        await asyncio.sleep(0.05)
        assert server.services.realtime.hub.subscriber_count(channel) == 0
        await sock.ws.close()


def test_pusher_mode_needs_credentials():
    from heddle.config import Settings
    from heddle.realtime.setup import Realtime

    with pytest.raises(ValueError, match="HEDDLE_PUSHER_APP_ID"):
        Realtime(Settings(realtime="pusher"))
    rt = Realtime(Settings(realtime="pusher", pusher_app_id="1", pusher_key="k", pusher_secret="s",
                           pusher_cluster="eu"))
    config = rt.public_config(True)
    assert config == {"enabled": True, "key": "k", "cluster": "eu", "ws_host": "ws-eu.pusher.com",
                      "ws_port": 443, "force_tls": True}
    assert "s" not in json.dumps(config).replace('"', " ").split()
    assert Realtime(Settings(realtime="off")).public_config(True)["enabled"] is False
