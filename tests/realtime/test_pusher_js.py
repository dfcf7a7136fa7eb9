"""The real pusher-js client (npm, Node build) against the built-in server, end to end: it
connects, authorizes through an HTTP endpoint with its own ajax transport, subscribes, and
receives events published through the hub, in order."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any
from urllib.parse import parse_qs

import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from heddle.realtime.hub import RealtimeHub
from heddle.realtime.signing import channel_auth, is_valid_socket_id, parse_thread_channel
from realtime.realtime_testkit import APP_KEY, APP_SECRET, realtime_app

pytestmark = pytest.mark.node

TOKEN = "session-token-for-the-test"


def js_app(hub: RealtimeHub, *, forbidden: set[str], wrongly_signed: set[str], **router_options: Any) -> FastAPI:
    """The realtime router plus a test-only `/auth` endpoint in the shape pusher-js calls."""
    app = realtime_app(hub, **router_options)

    @app.post("/auth")
    async def auth(request: Request):
        if request.headers.get("authorization") != f"Bearer {TOKEN}":
            return JSONResponse({"error": "unauthorized"}, status_code=401)
        form = parse_qs((await request.body()).decode())
        socket_id, channel = form.get("socket_id", [""])[0], form.get("channel_name", [""])[0]
        if not is_valid_socket_id(socket_id) or parse_thread_channel(channel) is None:
            return JSONResponse({"error": "bad request"}, status_code=400)
        if channel in forbidden:
            return JSONResponse({"error": "not your thread"}, status_code=403)
        secret = "not-the-secret" if channel in wrongly_signed else APP_SECRET
        return {"auth": channel_auth(APP_KEY, secret, socket_id, channel)}

    return app


class NodeSubscriber:
    """`node subscribe.mjs <config>` as a child process; its JSON lines, read without blocking."""

    def __init__(self, proc: asyncio.subprocess.Process):
        self.proc = proc
        self.lines: list[dict[str, Any]] = []

    @classmethod
    async def start(cls, script, port: int, channels: list[str], *, events: int, token: str = TOKEN,
                    timeout_ms: int = 15_000) -> NodeSubscriber:
        config = {"key": APP_KEY, "wsHost": "127.0.0.1", "wsPort": port, "authEndpoint": f"http://127.0.0.1:{port}/auth",
                  "token": token, "channels": channels, "events": events, "timeoutMs": timeout_ms}
        proc = await asyncio.create_subprocess_exec("node", str(script), json.dumps(config),
                                                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        return cls(proc)

    async def next(self, timeout: float = 15) -> dict[str, Any]:
        raw = await asyncio.wait_for(self.proc.stdout.readline(), timeout)
        if not raw:
            stderr = (await self.proc.stderr.read()).decode()[-2000:]
            raise AssertionError(f"pusher-js exited ({await self.proc.wait()}) early; lines: {self.lines}; {stderr}")
        line = json.loads(raw)
        self.lines.append(line)
        return line

    async def until(self, predicate, timeout: float = 15) -> list[dict[str, Any]]:
        """Read lines until `predicate(lines)` holds; returns the lines read so far."""
        async with asyncio.timeout(timeout):
            while not predicate(self.lines):
                await self.next()
        return self.lines

    async def exit_code(self, timeout: float = 15) -> int:
        """Read the remaining lines, then wait for the process to exit."""
        while raw := await asyncio.wait_for(self.proc.stdout.readline(), timeout):
            self.lines.append(json.loads(raw))
        return await asyncio.wait_for(self.proc.wait(), timeout)

    def kill(self) -> None:
        if self.proc.returncode is None:
            self.proc.kill()


def of_type(lines: list[dict], kind: str) -> list[dict]:
    return [line for line in lines if line["type"] == kind]


@pytest.fixture
def channels() -> dict[str, str]:
    return {name: f"private-thread-{uuid.uuid4()}" for name in ("mine", "theirs", "forged")}


@pytest.fixture
async def js_server(module_server, channels):
    server, app = module_server
    hub = RealtimeHub()
    app.app = js_app(hub, forbidden={channels["theirs"]}, wrongly_signed={channels["forged"]})
    yield server, hub
    await hub.aclose(timeout=2)


async def test_pusher_js_subscribes_and_receives_events_in_order(pusher_js, js_server, channels):
    server, hub = js_server
    events = 25
    client = await NodeSubscriber.start(pusher_js, server.port, list(channels.values()), events=events)
    try:
        lines = await client.until(lambda ls: len(of_type(ls, "subscribed")) + len(of_type(ls, "subscription_error")) == 3)
        connected = of_type(lines, "connected")
        assert len(connected) == 1 and is_valid_socket_id(connected[0]["socket_id"])
        assert [s["channel"] for s in of_type(lines, "subscribed")] == [channels["mine"]]
        refused = {e["channel"]: e["status"] for e in of_type(lines, "subscription_error")}
        assert refused == {channels["theirs"]: 403,  # the auth endpoint said no (pusher-js never subscribed)
                           channels["forged"]: 401}  # the server refused the forged signature
        assert hub.subscriber_count(channels["mine"]) == 1 and hub.subscriber_count(channels["forged"]) == 0

        for n in range(events):
            await hub.publish(channels["forged"], "run.updated", {"n": -1})  # nobody may get these
            await hub.publish(channels["mine"], "message.created" if n % 2 else "run.updated",
                              {"n": n, "content": "héllo ✓", "nested": {"list": [1, None, True]}})
        await client.until(lambda ls: len(of_type(ls, "event")) == events)
        received = of_type(client.lines, "event")
        assert [e["data"]["n"] for e in received] == list(range(events))
        assert all(e["channel"] == channels["mine"] for e in received)
        assert received[1]["event"] == "message.created" and received[0]["event"] == "run.updated"
        assert received[0]["data"] == {"n": 0, "content": "héllo ✓", "nested": {"list": [1, None, True]}}
        assert await client.exit_code() == 0 and client.lines[-1] == {**client.lines[-1], "type": "done", "events": events}
    finally:
        client.kill()


async def test_pusher_js_sends_the_bearer_header_to_the_auth_endpoint(pusher_js, js_server, channels):
    server, hub = js_server
    client = await NodeSubscriber.start(pusher_js, server.port, [channels["mine"]], events=0, token="wrong-token")
    try:
        assert await client.exit_code() == 0
        errors = of_type(client.lines, "subscription_error")
        assert [(e["channel"], e["status"]) for e in errors] == [(channels["mine"], 401)]
        assert hub.channel_count == 0
    finally:
        client.kill()


async def test_pusher_js_keeps_the_connection_alive_through_activity_pings(pusher_js, module_server, channels):
    """The server pings after 1 s of client silence and pusher-js pings after 1 s without
    traffic; both sides answer, so the one connection survives idle periods."""
    server, app = module_server
    hub = RealtimeHub()
    app.app = js_app(hub, forbidden=set(), wrongly_signed=set(), activity_timeout=1, pong_timeout=1)
    client = await NodeSubscriber.start(pusher_js, server.port, [channels["mine"]], events=1)
    try:
        await client.until(lambda ls: of_type(ls, "subscribed"))
        await asyncio.sleep(3.5)  # several activity periods
        await hub.publish(channels["mine"], "run.updated", {"alive": True})
        await client.until(lambda ls: of_type(ls, "event"))
        assert of_type(client.lines, "event")[0]["data"] == {"alive": True}
        assert len(of_type(client.lines, "connected")) == 1 and not of_type(client.lines, "error")
        assert await client.exit_code() == 0
    finally:
        client.kill()
        await hub.aclose(timeout=2)
