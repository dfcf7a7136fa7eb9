"""The built-in server speaks the Pusher protocol (v7) to a raw WebSocket client, over loopback."""

from __future__ import annotations

import asyncio
import json
import re
import uuid
import warnings

import pytest
from websockets.asyncio.client import connect

from heddle.realtime import protocol
from heddle.realtime.hub import RealtimeHub
from heddle.realtime.signing import channel_auth
from realtime.realtime_testkit import (
    APP_KEY,
    APP_SECRET,
    FIXED_ID,
    LoopServer,
    PusherSocket,
    realtime_app,
    ws_url,
)


def thread_channel() -> str:
    return f"private-thread-{uuid.uuid4()}"


async def subscribed(live, channel: str | None = None) -> tuple[PusherSocket, str]:
    sock = await PusherSocket.open(live.port)
    channel = channel or thread_channel()
    ok = await sock.subscribe(channel, channel_auth(APP_KEY, APP_SECRET, sock.socket_id, channel))
    assert ok == {"event": "pusher_internal:subscription_succeeded", "channel": channel, "data": {}}
    return sock, channel


async def assert_next_is_pong(sock: PusherSocket) -> None:
    """Nothing was queued for this socket before the pong (the server keeps order)."""
    await sock.send("pusher:ping")
    assert (await sock.recv())["event"] == "pusher:pong"


async def test_handshake_gives_a_socket_id_and_activity_timeout_as_a_json_string(live):
    ws = await connect(ws_url(live.port))
    hello = json.loads(await ws.recv())
    assert hello["event"] == "pusher:connection_established" and isinstance(hello["data"], str)
    data = json.loads(hello["data"])
    assert re.fullmatch(r"[0-9]+\.[0-9]+", data["socket_id"]) and data["activity_timeout"] == 120
    assert live.hub.connection_count == 1
    await ws.close()
    for _ in range(100):
        if live.hub.connection_count == 0:
            break
        await asyncio.sleep(0.01)
    assert live.hub.connection_count == 0


async def test_every_connection_gets_its_own_socket_id(live):
    socks = [await PusherSocket.open(live.port) for _ in range(20)]
    assert len({s.socket_id for s in socks}) == 20
    for s in socks:
        await s.close()


@pytest.mark.parametrize("key,query,code", [
    ("unknown-key", "protocol=7", protocol.APP_DOES_NOT_EXIST),
    (APP_KEY, "protocol=6", protocol.UNSUPPORTED_PROTOCOL),
    (APP_KEY, "protocol=8", protocol.UNSUPPORTED_PROTOCOL),
    (APP_KEY, "client=js", protocol.NO_PROTOCOL_VERSION),
    (APP_KEY, "protocol=", protocol.NO_PROTOCOL_VERSION),
    (APP_KEY, "protocol=seven", protocol.INVALID_VERSION_FORMAT),
    (APP_KEY, "protocol=%EF%BC%97", protocol.INVALID_VERSION_FORMAT),  # a full-width 7
    (APP_KEY, "protocol=" + "7" * 50, protocol.INVALID_VERSION_FORMAT),
])
async def test_handshake_refusals_send_pusher_error_then_close_with_the_code(live, key, query, code):
    ws = await connect(ws_url(live.port, key=key, query=query))
    error = json.loads(await ws.recv())
    assert error["event"] == "pusher:error" and json.loads(error["data"])["code"] == code
    await asyncio.wait_for(ws.wait_closed(), 5)
    assert ws.close_code == code
    assert live.hub.connection_count == 0


async def test_ping_pong(live):
    sock = await PusherSocket.open(live.port)
    await sock.send("pusher:ping")
    assert await sock.recv() == {"event": "pusher:pong", "data": {}}
    await sock.ws.send('{"event":"pusher:ping","data":"{}"}')  # data as a JSON string is accepted too
    assert (await sock.recv())["event"] == "pusher:pong"
    await sock.close()


async def test_subscribe_and_receive_events_in_publish_order(live):
    sock, channel = await subscribed(live)
    assert live.hub.subscriber_count(channel) == 1
    for n in range(50):
        assert await live.hub.publish(channel, "run.updated", {"n": n, "text": "é \ud800"}) == 1
    frames = [await sock.recv() for _ in range(50)]
    assert [f["data"]["n"] for f in frames] == list(range(50))
    assert all(f["event"] == "run.updated" and f["channel"] == channel for f in frames)
    assert frames[0]["data"]["text"] == "é \ud800"  # a lone surrogate travels as a JSON escape
    await sock.close()


async def test_events_reach_only_subscribers_of_that_channel(live):
    a, channel_a = await subscribed(live)
    b, channel_b = await subscribed(live)
    await live.hub.publish(channel_a, "message.created", {"to": "a"})
    await live.hub.publish(channel_b, "message.created", {"to": "b"})
    assert (await a.recv())["data"] == {"to": "a"}
    assert (await b.recv())["data"] == {"to": "b"}
    await assert_next_is_pong(a)
    await assert_next_is_pong(b)


async def test_subscribing_twice_is_harmless(live):
    sock, channel = await subscribed(live)
    again = await sock.subscribe(channel, channel_auth(APP_KEY, APP_SECRET, sock.socket_id, channel))
    assert again["event"] == "pusher_internal:subscription_succeeded"
    await live.hub.publish(channel, "run.updated", {"n": 1})
    assert (await sock.recv())["data"] == {"n": 1}
    await assert_next_is_pong(sock)  # delivered once, not twice


async def test_unsubscribe_stops_events(live):
    sock, channel = await subscribed(live)
    await sock.send("pusher:unsubscribe", {"channel": channel})
    await assert_next_is_pong(sock)  # the unsubscribe was handled before the ping
    assert live.hub.subscriber_count(channel) == 0
    assert await live.hub.publish(channel, "run.updated", {}) == 0
    await assert_next_is_pong(sock)
    await sock.send("pusher:unsubscribe", {"channel": thread_channel()})  # never subscribed: ignored
    await assert_next_is_pong(sock)


@pytest.mark.parametrize("make_auth", [
    lambda sid, ch: channel_auth(APP_KEY, "not-the-secret", sid, ch),
    lambda sid, ch: channel_auth(APP_KEY, APP_SECRET, "1.2" if sid != "1.2" else "3.4", ch),  # another socket's
    lambda sid, ch: channel_auth(APP_KEY, APP_SECRET, sid, thread_channel()),  # another channel's
    lambda sid, ch: channel_auth("other-key", APP_SECRET, sid, ch),
    lambda sid, ch: channel_auth(APP_KEY, APP_SECRET, sid, ch).upper(),
    lambda sid, ch: None,
    lambda sid, ch: 12345,
    lambda sid, ch: "",
])
async def test_bad_signatures_are_refused_and_nothing_is_subscribed(live, make_auth):
    sock = await PusherSocket.open(live.port)
    channel = thread_channel()
    await sock.send("pusher:subscribe", {"channel": channel, "auth": make_auth(sock.socket_id, channel)})
    refused = await sock.recv()
    assert refused["event"] == "pusher:subscription_error" and refused["channel"] == channel
    assert refused["data"]["status"] == 401 and refused["data"]["type"] == "AuthError"
    assert live.hub.subscriber_count(channel) == 0
    await live.hub.publish(channel, "run.updated", {})
    await assert_next_is_pong(sock)


@pytest.mark.parametrize("channel", ["my-public-channel", "presence-thread-" + FIXED_ID,
                                     "private-other", "private-encrypted-thread-" + FIXED_ID,
                                     "private-thread-" + FIXED_ID.upper()])
async def test_other_channels_are_refused_even_with_a_valid_signature(live, channel):
    sock = await PusherSocket.open(live.port)
    refused = await sock.subscribe(channel, channel_auth(APP_KEY, APP_SECRET, sock.socket_id, channel))
    assert refused["event"] == "pusher:subscription_error" and refused["data"]["status"] == 403
    assert live.hub.channel_count == 0
    await assert_next_is_pong(sock)


@pytest.mark.parametrize("channel", ["", "a" * 165, "has space", "ünï", "new\nline"])
async def test_invalid_channel_names_get_pusher_error_and_the_connection_stays(live, channel):
    sock = await PusherSocket.open(live.port)
    error = await sock.subscribe(channel, "x:y")
    assert error == {"event": "pusher:error", "data": {"code": None, "message": "Invalid channel name"}}
    await assert_next_is_pong(sock)


async def test_client_events_and_unknown_events_are_refused_without_closing(live):
    sock, channel = await subscribed(live)
    await sock.send("client-typing", {"x": 1}, channel=channel)
    assert (await sock.recv())["event"] == "pusher:error"
    await sock.send("pusher:signin", {"auth": "x", "user_data": "{}"})
    assert (await sock.recv())["data"]["code"] is None
    await sock.send("something-else", {})
    assert (await sock.recv())["event"] == "pusher:error"
    await live.hub.publish(channel, "run.updated", {"still": "subscribed"})
    assert (await sock.recv())["data"] == {"still": "subscribed"}


async def test_too_many_channels_on_one_connection(live):
    live.hub.max_channels_per_connection = 3
    sock = await PusherSocket.open(live.port)
    channels = [thread_channel() for _ in range(4)]
    results = [await sock.subscribe(ch, channel_auth(APP_KEY, APP_SECRET, sock.socket_id, ch)) for ch in channels]
    assert [r["event"] for r in results[:3]] == ["pusher_internal:subscription_succeeded"] * 3
    assert results[3]["event"] == "pusher:subscription_error" and results[3]["data"]["status"] == 429
    assert live.hub.subscriber_count(channels[3]) == 0


@pytest.mark.parametrize("raw", [
    "not json", "", "[]", "null", '"pusher:ping"', "{}", '{"event": 5}', '{"event": ""}',
    '{"event": "pusher:subscribe"}', '{"event": "pusher:subscribe", "data": []}',
    '{"event": "pusher:subscribe", "data": "not json"}', '{"event": "pusher:subscribe", "data": {"channel": 5}}',
    '{"event": "pusher:unsubscribe", "data": {}}', '{"event": "pusher:ping", "channel": 7}',
    '{"event": "' + "x" * 201 + '"}', '{"event": "pusher:ping", "data": ' + "[" * 5000 + "]" * 5000 + "}",
    '{"event": "pusher:ping", "n": ' + "9" * 5000 + "}", '{"event": "pusher:ping", "data": NaN}x',
])
async def test_malformed_messages_get_4200_and_are_closed(live, raw):
    sock, channel = await subscribed(live)
    await sock.ws.send(raw)
    error = await sock.recv()
    assert error["event"] == "pusher:error" and error["data"]["code"] == protocol.INVALID_MESSAGE
    assert await sock.closed() == protocol.INVALID_MESSAGE
    await asyncio.sleep(0.05)
    assert live.hub.subscriber_count(channel) == 0 and live.hub.connection_count == 0


async def test_binary_frames_get_4200_and_are_closed(live):
    sock = await PusherSocket.open(live.port)
    await sock.ws.send(b'{"event": "pusher:ping"}')
    assert (await sock.recv())["data"]["code"] == protocol.INVALID_MESSAGE
    assert await sock.closed() == protocol.INVALID_MESSAGE


async def test_oversized_messages_get_4009_and_are_closed(live):
    sock = await PusherSocket.open(live.port)
    padding = "x" * protocol.MAX_CLIENT_MESSAGE_BYTES
    await sock.ws.send(json.dumps({"event": "pusher:ping", "data": {"pad": padding}}))
    error = await sock.recv()
    assert error["event"] == "pusher:error" and error["data"]["code"] == protocol.MESSAGE_TOO_LARGE
    assert await sock.closed() == protocol.MESSAGE_TOO_LARGE


async def test_size_is_counted_in_utf8_bytes(live):
    sock = await PusherSocket.open(live.port)
    # Under the limit in characters, over it in bytes.
    await sock.ws.send(json.dumps({"event": "pusher:ping", "data": {"pad": "é" * 6000}}, ensure_ascii=False))
    assert (await sock.recv())["data"]["code"] == protocol.MESSAGE_TOO_LARGE
    assert await sock.closed() == protocol.MESSAGE_TOO_LARGE


async def test_frames_beyond_the_websocket_limit_are_cut_by_the_server():
    hub = RealtimeHub()
    async with LoopServer(realtime_app(hub), ws_max_size=16 * 1024) as server:
        sock = await PusherSocket.open(server.port)
        await sock.ws.send("x" * (64 * 1024))
        assert await sock.closed() == 1009  # message too big, closed by the WebSocket layer
    assert hub.connection_count == 0


async def test_over_capacity_connections_are_refused_with_4100():
    hub = RealtimeHub(max_connections=2)
    async with LoopServer(realtime_app(hub)) as server:
        first, second = await PusherSocket.open(server.port), await PusherSocket.open(server.port)
        ws = await connect(ws_url(server.port))
        error = json.loads(await ws.recv())
        assert json.loads(error["data"])["code"] == protocol.OVER_CAPACITY
        await asyncio.wait_for(ws.wait_closed(), 5)
        assert ws.close_code == protocol.OVER_CAPACITY and hub.connection_count == 2
        await first.close()
        await second.close()


@pytest.mark.parametrize("ws_impl", ["websockets", "websockets-sansio"])
async def test_both_uvicorn_websockets_implementations(ws_impl):
    hub = RealtimeHub()
    with warnings.catch_warnings():  # uvicorn deprecates its legacy `websockets` implementation
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", UserWarning)
        async with LoopServer(realtime_app(hub), ws=ws_impl) as server:
            sock = await PusherSocket.open(server.port)
            channel = thread_channel()
            ok = await sock.subscribe(channel, channel_auth(APP_KEY, APP_SECRET, sock.socket_id, channel))
            assert ok["event"] == "pusher_internal:subscription_succeeded"
            await hub.publish(channel, "run.updated", {"ok": True})
            assert (await sock.recv())["data"] == {"ok": True}
            await sock.ws.send("nope")
            assert (await sock.recv())["data"]["code"] == protocol.INVALID_MESSAGE
            assert await sock.closed() == protocol.INVALID_MESSAGE


async def test_server_shutdown_closes_clients_and_empties_the_hub():
    hub = RealtimeHub()
    async with LoopServer(realtime_app(hub)) as server:
        sock, _ = await subscribed(type("L", (), {"port": server.port})())
        await hub.aclose()
        assert await sock.closed() == protocol.SERVER_CLOSING
    assert hub.connection_count == 0 and hub.channel_count == 0
