"""The hosted publisher, through the official `pusher` library, against a local Events API that
checks signatures exactly as Pusher does."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest
from pusher.http import Request as PusherRequest
from pusher.pusher_client import PusherClient

from heddle.realtime.publishers import PusherPublisher
from realtime.pusher_events_api import PusherEventsAPI
from realtime.realtime_testkit import LoopServer
from support.net import free_port

APP_ID, KEY, SECRET = "4242", "hosted-key", "hosted-secret-abcdef"


@pytest.fixture(scope="module")
async def api_server():
    api = PusherEventsAPI(APP_ID, KEY, SECRET)
    async with LoopServer(api.app) as server:
        yield api, server


@pytest.fixture
def api(api_server):
    """The module's Events API, with its record and fault settings reset for this test."""
    api, server = api_server
    api.events.clear()
    api.rejected.clear()
    api.fail_next, api.delay, api.requests = 0, 0.0, 0
    api.port = server.port
    return api


def publisher(api, **options) -> PusherPublisher:
    options.setdefault("secret", SECRET)
    return PusherPublisher(APP_ID, KEY, host="127.0.0.1", port=api.port, ssl=False, timeout=2, **options)


async def test_events_arrive_signed_and_in_order(api):
    pub = publisher(api)
    for n in range(10):
        await pub.publish("private-thread-a", "run.updated", {"n": n, "text": "é"})
    await asyncio.wait_for(pub.flush(), 10)
    assert api.rejected == [] and pub.stats() == {"sent": 10, "failed": 0, "dropped": 0, "pending": 0}
    assert [json.loads(e["data"]) for e in api.events] == [{"n": n, "text": "é"} for n in range(10)]
    assert all(e["name"] == "run.updated" and e["channels"] == ["private-thread-a"] for e in api.events)
    await pub.aclose()


async def test_order_is_kept_per_channel_across_parallel_workers(api):
    api.delay = 0.002
    pub = publisher(api, workers=4)
    channels = [f"private-thread-{i}" for i in range(8)]
    for n in range(10):
        for channel in channels:
            await pub.publish(channel, "message.created", {"n": n})
    await asyncio.wait_for(pub.aclose(), 20)
    assert pub.sent == 80
    for channel in channels:
        assert [json.loads(e["data"])["n"] for e in api.events if e["channels"] == [channel]] == list(range(10))


async def test_a_wrong_secret_is_rejected_by_the_api_and_never_raises(api):
    pub = publisher(api, secret="not-the-secret")
    await pub.publish("private-thread-a", "run.updated", {"n": 1})  # must not raise
    await asyncio.wait_for(pub.flush(), 10)
    assert api.rejected == [(401, "Invalid signature")] and api.events == []
    assert pub.failed == 1 and pub.sent == 0
    await pub.aclose()


async def test_server_errors_are_retried(api):
    api.fail_next = 2
    pub = publisher(api, retries=2)
    await pub.publish("private-thread-a", "run.updated", {"n": 1})
    await asyncio.wait_for(pub.flush(), 10)
    assert api.requests == 3 and len(api.events) == 1 and pub.sent == 1
    await pub.aclose()


async def test_retries_run_out_and_the_failure_is_counted(api):
    api.fail_next = 5
    pub = publisher(api, retries=1)
    await pub.publish("private-thread-a", "run.updated", {"n": 1})
    await asyncio.wait_for(pub.flush(), 10)
    assert api.requests == 2 and api.events == [] and pub.failed == 1
    await pub.aclose()


async def test_an_unreachable_api_is_counted_not_raised():
    pub = PusherPublisher(APP_ID, KEY, SECRET, host="127.0.0.1", port=free_port(), ssl=False, timeout=1,
                          retries=0)
    await pub.publish("private-thread-a", "run.updated", {"n": 1})
    await asyncio.wait_for(pub.flush(), 10)
    assert pub.failed == 1
    await pub.aclose()


async def test_events_the_api_would_refuse_are_counted(api):
    pub = publisher(api)
    await pub.publish("private-thread-a", "run.updated", {"big": "x" * 20_000})  # over Pusher's 10 kB
    await pub.publish("invalid channel", "run.updated", {})  # the library refuses it
    await pub.publish("private-thread-a", "run.updated", {"x": object()})  # not JSON
    await pub.publish("private-thread-a", "run.updated", {"x": float("inf")})
    await pub.publish(None, "run.updated", {})  # type: ignore[arg-type]
    await pub.publish("private-thread-a", "run.updated", "not a dict")  # type: ignore[arg-type]
    await asyncio.wait_for(pub.flush(), 10)
    assert pub.failed == 6 and pub.sent == 0 and api.events == []
    await pub.aclose()


async def test_a_full_queue_drops_and_counts_instead_of_growing(api):
    pub = publisher(api, workers=1, max_pending=2)
    for n in range(10):  # publish() does not yield, so the worker has taken nothing yet
        await pub.publish("private-thread-a", "run.updated", {"n": n})
    assert pub.dropped == 8
    await asyncio.wait_for(pub.aclose(), 10)
    assert [json.loads(e["data"])["n"] for e in api.events] == [0, 1] and pub.sent == 2


async def test_aclose_drains_then_refuses_new_events(api):
    pub = publisher(api)
    for n in range(5):
        await pub.publish("private-thread-a", "run.updated", {"n": n})
    await asyncio.wait_for(pub.aclose(), 10)
    assert pub.sent == 5
    await pub.publish("private-thread-a", "run.updated", {"n": 99})
    assert pub.dropped == 1 and len(api.events) == 5
    await pub.aclose()  # twice is fine


async def test_aclose_gives_up_after_drain_timeout():
    # Its own API server: the request in flight at aclose() still lands after the test.
    api = PusherEventsAPI(APP_ID, KEY, SECRET)
    api.delay = 0.5
    async with LoopServer(api.app) as server:
        api.port = server.port
        pub = publisher(api, workers=1, drain_timeout=0.2)
        for n in range(5):
            await pub.publish("private-thread-a", "run.updated", {"n": n})
        started = time.monotonic()
        await pub.aclose()
        assert time.monotonic() - started < 2 and pub.dropped >= 3


def test_constructor_refuses_bad_options():
    for options in ({"workers": 0}, {"max_pending": 1, "workers": 2}, {"retries": -1}):
        with pytest.raises(ValueError):
            PusherPublisher(APP_ID, KEY, SECRET, **options)
    with pytest.raises(ValueError):
        PusherPublisher("not-a-number", KEY, SECRET)


# -- the checking server itself refuses what Pusher refuses ---------------------------------------


def signed_request(secret: str = SECRET) -> PusherRequest:
    client = PusherClient(app_id=APP_ID, key=KEY, secret=secret, host="127.0.0.1", ssl=False)
    return PusherRequest(client, "POST", f"/apps/{APP_ID}/events",
                         {"name": "run.updated", "channels": ["private-thread-a"], "data": "{}"})


async def send(api, request: PusherRequest, *, path: str | None = None, body: bytes | None = None,
               query: dict | None = None) -> int:
    params = {**request.query_params, **(query or {})}
    async with httpx.AsyncClient() as http:
        response = await http.post(f"http://127.0.0.1:{api.port}{path or request.path}", params=params,
                                   content=request.body if body is None else body)
    return response.status_code


async def test_the_checking_server_accepts_the_library_and_refuses_tampering(api):
    assert await send(api, signed_request()) == 200
    assert await send(api, signed_request(secret="wrong")) == 401
    assert await send(api, signed_request(), body=b'{"name":"x","channels":["a"],"data":"{}"}') == 401
    assert await send(api, signed_request(), query={"auth_key": "other"}) == 401
    assert await send(api, signed_request(), query={"auth_version": "2.0"}) == 401
    assert await send(api, signed_request(), query={"auth_timestamp": str(int(time.time()) - 3600)}) == 401
    assert await send(api, signed_request(), query={"extra": "1"}) == 401  # not covered by the signature
    assert await send(api, signed_request(), path="/apps/999/events") == 404
    assert [status for status, _ in api.rejected] == [401, 401, 401, 401, 401, 401, 404]
    assert len(api.events) == 1
