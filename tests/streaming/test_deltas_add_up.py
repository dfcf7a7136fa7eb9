"""Streamed replies lose nothing on any path, under 100 concurrent streams (issue 48).

A real server (SQLite and PostgreSQL) with an OpenAI-compatible fake that streams each reply
word by word, slowly; 100 conversations post at once and read their runs live over SSE while
a raw Pusher-protocol client (as tests/realtime does) is subscribed to every thread. For every
run, each path adds up to the stored reply:

- the live SSE stream: ids 1..N without a gap, deltas in `seq` order joining to the reply;
- the stored log: a fresh stream from the start gives exactly what the live one gave;
- resuming: from every event id (`Last-Event-ID`) the rest is exactly the log's rest (every id
  of a few runs; one id in the middle of every other run);
- realtime: the thread's channel carries the same pieces in order, then the whole message.

And a retried attempt's text is still retracted (`reset: true`) on every path.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import httpx
import pytest
from websockets.asyncio.client import connect

from support.net import free_port
from support.sse import parse

sys.path.insert(0, str(Path(__file__).parents[1] / "providers"))

import llmfake_openai  # noqa: E402
from llmfake_http import Reply, ServerThread  # noqa: E402

pytestmark = pytest.mark.slow

WORDS = 40
REPLY = " ".join(f"piece{n}" for n in range(WORDS)) + "."
STREAMS = 100
FAKE_KEY = "sk-fake-streaming"
AGENT = {"name": "streamer", "model_class": "slow", "instructions": "Stream.", "tools": []}


@pytest.fixture(scope="module", autouse=True)
def fake_model(request):
    from llmfake_http import Script

    script = Script()
    fake = ServerThread(llmfake_openai.create_app(script, FAKE_KEY), free_port())
    fake.start()
    request.module.SERVER_SETTINGS = {
        "run_concurrency": 200, "sse_max_streams_per_key": 0, "sse_max_streams_per_subject": 0,
        "model_classes": json.dumps({"slow": {
            "provider": "openai", "model": "gpt-fake", "base_url": f"{fake.url}/v1", "api_key": FAKE_KEY,
            "max_retries": 1, "timeout": 60, "options": {"retry_base_delay": 0.01, "retry_max_delay": 0.05}}})}
    yield script
    fake.stop()


def events_path(run_id: str) -> str:
    return f"/v1/loom/runs/{run_id}/events"


async def read_sse(client: httpx.AsyncClient, run_id: str, headers: dict, after: str | None = None) -> list[dict]:
    h = {**headers, **({"Last-Event-ID": after} if after is not None else {})}
    async with client.stream("GET", events_path(run_id), headers=h, timeout=120) as response:
        assert response.status_code == 200, await response.aread()
        lines = [line async for line in response.aiter_lines()]
    return [e for e in parse(iter(lines)) if "comment" not in e]


class Pusher:
    """A raw Pusher-protocol socket that records every event by channel."""

    def __init__(self, ws):
        self.ws = ws
        self.by_channel: dict[str, list[dict]] = {}

    @classmethod
    async def open(cls, server) -> tuple[Pusher, str]:
        ws = await connect(f"ws://127.0.0.1:{server.port}/app/{server.services.realtime.key}?protocol=7&client=js",
                           max_size=None)
        hello = json.loads(await ws.recv())
        assert hello["event"] == "pusher:connection_established"
        return cls(ws), json.loads(hello["data"])["socket_id"]

    async def subscribe(self, client, headers: dict, socket_id: str, channel: str) -> None:
        auth = (await client.post("/v1/loom/realtime/auth", json={"socket_id": socket_id, "channel_name": channel},
                                  headers=headers)).json()["data"]["auth"]
        await self.ws.send(json.dumps({"event": "pusher:subscribe", "data": {"channel": channel, "auth": auth}}))

    async def record(self) -> None:
        async for raw in self.ws:
            frame = json.loads(raw)
            if "channel" in frame and not frame["event"].startswith("pusher"):
                self.by_channel.setdefault(frame["channel"], []).append(
                    {"event": frame["event"], "data": json.loads(frame["data"])})

    def done(self, channel: str) -> bool:
        events = self.by_channel.get(channel, [])
        return bool(events) and events[-1]["event"] == "run.updated" and events[-1]["data"]["terminal"]


def story(events: list[dict], run_id: str) -> dict:
    """Checks a run's events (SSE, ids when present) and returns the assistant message; the
    deltas of a retracted attempt must end in a `reset` of their message id."""
    if events and "id" in events[0]:
        assert [e["id"] for e in events] == [str(n) for n in range(1, len(events) + 1)]
    (reply,) = [e["data"] for e in events if e["event"] == "message.created" and e["data"]["role"] == "assistant"]
    deltas = [e["data"] for e in events if e["event"] == "message.delta"]
    assert {d["run_id"] for d in deltas} == {run_id}
    by_message: dict[str, list[dict]] = {}
    for d in deltas:
        by_message.setdefault(d["message_id"], []).append(d)
    for message_id, pieces in by_message.items():
        assert [p["seq"] for p in pieces] == list(range(len(pieces)))
        if message_id != reply["id"]:  # a void attempt: retracted by its last delta
            assert pieces[-1].get("reset") is True and pieces[-1]["delta"] == ""
    kept = by_message[reply["id"]]
    assert not any(p.get("reset") for p in kept)
    assert "".join(p["delta"] for p in kept) == reply["content"]
    assert events[-1]["event"] == "run.updated" and events[-1]["data"]["state"] == "closed"
    return reply


async def converse(server, tenant, script, replies: list[Reply], conversations: int) -> list[dict]:
    """`conversations` threads, each posting one message at once, read live over SSE and by a
    Pusher socket per 50 channels; returns per run its live SSE events and realtime events."""
    script.push(*replies)
    agent = tenant.add_agent(AGENT, classes=("slow",))
    async with httpx.AsyncClient(base_url=server.base_url, timeout=120) as client:
        heads = [tenant.headers(f"web:stream{i}") for i in range(conversations)]
        threads = [(await client.post("/v1/loom/threads", json={"agent": agent}, headers=h)).json()["data"]["id"]
                   for h in heads]
        sockets = []
        for start in range(0, conversations, 50):
            sock, socket_id = await Pusher.open(server)
            for thread, h in zip(threads[start:start + 50], heads[start:start + 50], strict=True):
                await sock.subscribe(client, h, socket_id, f"private-thread-{thread}")
            sockets.append(sock)
        recorders = [asyncio.create_task(s.record()) for s in sockets]
        await asyncio.sleep(0.2)  # subscriptions confirmed

        async def one(thread: str, h: dict) -> dict:
            answer = await client.post(f"/v1/loom/threads/{thread}/messages", json={"content": "go"}, headers=h)
            assert answer.status_code == 202, answer.text
            run_id = answer.json()["data"]["run_id"]
            return {"run_id": run_id, "thread": thread, "headers": h, "live": await read_sse(client, run_id, h)}

        runs = await asyncio.gather(*(one(t, h) for t, h in zip(threads, heads, strict=True)))
        for run in runs:
            channel = f"private-thread-{run['thread']}"
            sock = sockets[threads.index(run["thread"]) // 50]
            for _ in range(200):
                if sock.done(channel):
                    break
                await asyncio.sleep(0.05)
            run["realtime"] = sock.by_channel.get(channel, [])
            run["stored"] = await read_sse(client, run["run_id"], run["headers"])
        for task in recorders:
            task.cancel()
        for sock in sockets:
            await sock.ws.close()
        return runs


async def test_every_path_adds_up_under_100_concurrent_streams(server, tenant, fake_model):
    runs = await converse(server, tenant, fake_model, [Reply(text=REPLY, chunk_delay=0.01)] * STREAMS, STREAMS)
    async with httpx.AsyncClient(base_url=server.base_url, timeout=120) as client:
        for n, run in enumerate(runs):
            live, stored = run["live"], run["stored"]
            assert story(stored, run["run_id"])["content"] == REPLY
            assert story(live, run["run_id"])["content"] == REPLY
            assert stored == live  # the stored log is what the live stream sent
            assert [e["event"] for e in run["realtime"] if e["event"] != "message.delta"] == [
                "message.created", "run.updated", "message.created", "run.updated"]
            assert story(run["realtime"], run["run_id"])["content"] == REPLY
            realtime_deltas = [e["data"] for e in run["realtime"] if e["event"] == "message.delta"]
            assert realtime_deltas == [e["data"] for e in live if e["event"] == "message.delta"]
            cuts = range(len(stored) + 1) if n < 3 else (len(stored) // 2,)
            for cut in cuts:
                rest = await read_sse(client, run["run_id"], run["headers"], after=str(cut))
                assert rest == stored[cut:], (run["run_id"], cut)


async def test_a_retried_attempt_is_still_retracted_on_every_path(server, tenant, fake_model):
    broken = Reply(text=REPLY, chunk_delay=0.01, break_after=8)  # 7 pieces, then the connection drops
    runs = await converse(server, tenant, fake_model, [broken, Reply(text=REPLY, chunk_delay=0.01)], 1)
    (run,) = runs
    for events in (run["live"], run["stored"], run["realtime"]):
        assert story(events, run["run_id"])["content"] == REPLY
        resets = [e["data"] for e in events if e["event"] == "message.delta" and e["data"].get("reset")]
        assert len(resets) == 1 and resets[0]["seq"] > 0  # the void attempt had sent pieces
    async with httpx.AsyncClient(base_url=server.base_url, timeout=60) as client:
        for cut in range(len(run["stored"]) + 1):
            rest = await read_sse(client, run["run_id"], run["headers"], after=str(cut))
            assert rest == run["stored"][cut:]
