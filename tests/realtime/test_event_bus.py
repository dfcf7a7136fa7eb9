"""Events across processes: HEDDLE_EVENT_BUS=postgres|redis, the real pusher-js, two servers.

Two API servers share one PostgreSQL database and the built-in server's credentials. pusher-js
holds a socket on server A and asks server B to sign its subscription; the run is posted to B
and executes there, so every event reaches A only through the bus. (Worker processes are
covered in tests/scale/.)
"""

from __future__ import annotations

import asyncio
import secrets
import socket

import pytest

from direct.direct_testkit import make_signing_key
from heddle.config import Settings
from heddle.deployment import DeploymentError, check_deployment
from heddle.realtime.bus import PG_PART_BYTES, BusPublisher, BusRelay, build_bus
from heddle.realtime.hub import RealtimeHub
from realtime.test_app_pusher_js import NodeClient, token
from support.loom import SCRIPTED_AGENT, open_thread, post, wait_run
from support.server import LiveServer
from support.tenants import make_tenant

REDIS_URL = "redis://127.0.0.1:6379/0"


def _redis_up() -> bool:
    try:
        with socket.create_connection(("127.0.0.1", 6379), timeout=1):
            return True
    except OSError:
        return False


def shared_settings(bus: str) -> dict:
    if bus == "redis" and not _redis_up():
        pytest.skip("Redis not reachable on 127.0.0.1:6379")
    # A channel of its own, so parallel test sessions on the same Redis/PostgreSQL never mix.
    return {"event_bus": bus, "redis_url": REDIS_URL, "event_bus_channel": f"heddle_t_{secrets.token_hex(4)}",
            "pusher_app_id": "app-1", "pusher_key": f"key-{secrets.token_hex(4)}",
            "pusher_secret": secrets.token_urlsafe(24)}


@pytest.fixture(params=["postgres", "redis"])
def pair(request, pg_database_factory):
    url = pg_database_factory()
    shared = shared_settings(request.param)
    a = LiveServer(database_url=url, **shared).start()
    b = LiveServer(database_url=url, **shared).start()
    yield a, b
    a.stop()
    b.stop()




@pytest.mark.postgres
@pytest.mark.node
def test_pusher_js_on_a_gets_every_event_of_a_run_on_b_signed_by_b(pair, pusher_js):
    a, b = pair
    tenant = make_tenant(a)
    key = make_signing_key("ES256", "browser-key")
    tenant.update(jwks_json={"keys": [key.jwk]})
    agent = tenant.add_agent(SCRIPTED_AGENT)
    alice = {"Authorization": f"Bearer {token(tenant, key, 'u_alice')}"}
    with a.client() as http_a, b.client() as http_b:
        thread = open_thread(http_b, alice, agent)
        config = http_a.get("/v1/loom/realtime/config", headers=alice).json()["data"]
        assert config["key"] == http_b.get("/v1/loom/realtime/config", headers=alice).json()["data"]["key"]
        client = NodeClient(pusher_js, {
            "key": config["key"], "wsHost": "127.0.0.1", "wsPort": a.port,
            # the socket is on A; the channel signature comes from B
            "authEndpoint": f"{b.base_url}/v1/loom/realtime/auth", "token": token(tenant, key, "u_alice"),
            "channels": [f"private-thread-{thread}"], "events": 10_000, "timeoutMs": 30000})
        try:
            assert client.next("subscribed")["channel"] == f"private-thread-{thread}"
            runs = []
            for text in ("hello", "again"):
                runs.append(post(http_b, alice, thread, text)["run_id"])
                assert wait_run(http_b, alice, runs[-1])["state"] == "closed"
            events = []  # the whole-object events; the replies' message.delta pieces come between them
            while len(events) < 8:
                event = client.next("event")
                if event["event"] != "message.delta":
                    events.append(event)
            assert [(e["event"], e["data"].get("role") or e["data"].get("state")) for e in events] == [
                ("message.created", "user"), ("run.updated", "running"),
                ("message.created", "assistant"), ("run.updated", "closed")] * 2
            assert [events[3]["data"]["id"], events[7]["data"]["id"]] == runs
        finally:
            client.close()
    publisher = b.services.realtime.publisher  # on PostgreSQL the storing transactions send them (0010)
    assert publisher.sent + publisher.by_database >= 8 and a.services.realtime.relay.relayed >= 8


@pytest.mark.postgres
@pytest.mark.parametrize("bus", ["postgres", "redis"])
async def test_bus_keeps_order_and_carries_events_larger_than_a_notify(bus, pg_url):
    """Many events, some far over PostgreSQL's 8000-byte NOTIFY limit, arrive whole and in order."""
    shared = shared_settings(bus)
    make = lambda: build_bus(bus, database_url=pg_url, redis_url=REDIS_URL,  # noqa: E731
                             channel=shared["event_bus_channel"])
    hub = RealtimeHub(max_event_bytes=256 * 1024)
    received: list[str] = []

    async def send_text(text: str) -> None:
        received.append(text)

    async def close_socket(code: int, reason: str) -> None:
        return None

    conn = hub.open(send_text, close_socket)
    channel = "private-thread-00000000-0000-4000-8000-000000000001"
    hub.subscribe(conn, channel)
    relay = BusRelay(make(), hub)
    await relay.start()
    publisher = BusPublisher(make())
    try:
        sizes = [10, PG_PART_BYTES * 3 + 17, 5, 40_000, 1] * 4  # "é" is 6 bytes escaped
        for n, size in enumerate(sizes):
            await publisher.publish(channel, "message.created", {"n": n, "content": "é" * size})
        deadline = asyncio.get_running_loop().time() + 10
        while len(received) < len(sizes) and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.02)
        import json

        got = [json.loads(json.loads(frame)["data"]) for frame in received]
        assert [g["n"] for g in got] == list(range(len(sizes)))
        assert [len(g["content"]) for g in got] == sizes and publisher.failed == 0
    finally:
        await relay.aclose()
        await publisher.aclose()
        await hub.aclose(timeout=1)


@pytest.mark.parametrize("settings, message", [
    ({"executor": "queue"}, "needs PostgreSQL"),
    ({"event_bus": "postgres"}, "LISTEN/NOTIFY"),
    ({"executor": "queue", "database_url": "postgresql+asyncpg://x/y"}, "HEDDLE_EVENT_BUS=postgres or redis"),
    ({"executor": "queue", "event_bus": "redis", "database_url": "postgresql+asyncpg://x/y", "pusher_key": "k"},
     "set HEDDLE_PUSHER_APP_ID, HEDDLE_PUSHER_SECRET"),
    ({"event_bus": "redis"}, "set HEDDLE_PUSHER_APP_ID, HEDDLE_PUSHER_KEY, HEDDLE_PUSHER_SECRET"),
])
def test_settings_that_cannot_work_across_processes_are_refused(settings, message):
    with pytest.raises(DeploymentError, match=message):
        check_deployment(Settings(**settings))


def test_a_single_process_and_hosted_pusher_need_no_shared_credentials():
    check_deployment(Settings())
    check_deployment(Settings(executor="queue", database_url="postgresql+asyncpg://x/y", realtime="pusher"))
    check_deployment(Settings(executor="queue", event_bus="postgres", database_url="postgresql+asyncpg://x/y",
                              pusher_app_id="1", pusher_key="k", pusher_secret="s"))
