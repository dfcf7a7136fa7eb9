"""GET /v1/loom/runs/{id}/events: Server-Sent Events of a run, resumable with Last-Event-ID.

Against the real server (SQLite and PostgreSQL), with the scripted model and with an
OpenAI-compatible fake that streams its reply slowly over real SSE.
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import time
import uuid
from pathlib import Path

import httpx
import pytest

from direct.direct_testkit import make_signing_key, sign
from support.loom import SCRIPTED_AGENT, open_thread, post, wait_run
from support.net import free_port
from support.sse import collect, parse

sys.path.insert(0, str(Path(__file__).parents[1] / "providers"))

import llmfake_openai  # noqa: E402
from llmfake_http import Reply, Script, ServerThread  # noqa: E402

REPLY = " ".join(f"word{n}" for n in range(24)) + "."
FAKE_KEY = "sk-fake-sse"


@pytest.fixture(scope="module", autouse=True)
def fake_model(request):
    """An OpenAI-compatible fake that streams; the module's servers get it as class `slow`."""
    script = Script()
    fake = ServerThread(llmfake_openai.create_app(script, FAKE_KEY), free_port())
    fake.start()
    request.module.SERVER_SETTINGS = {
        "sse_heartbeat_seconds": 0.2, "sse_poll_seconds": 0.5,
        "model_classes": json.dumps({"slow": {
            "provider": "openai", "model": "gpt-fake", "base_url": f"{fake.url}/v1", "api_key": FAKE_KEY,
            "input_price_per_1k": 1.0, "output_price_per_1k": 2.0, "max_retries": 0}})}
    yield script
    fake.stop()


def events_path(run_id: str) -> str:
    return f"/v1/loom/runs/{run_id}/events"


def finished_run(http, tenant, content="hello"):
    agent = tenant.add_agent(SCRIPTED_AGENT)
    h = tenant.headers("web:sse")
    run_id = post(http, h, open_thread(http, h, agent), content)["run_id"]
    wait_run(http, h, run_id, states=("closed", "failed"))
    return h, run_id


def check_story(events, run_id):
    """Ids 1..N in order; the reply's deltas add up to the message; the last event is terminal."""
    assert [e["id"] for e in events] == [str(n) for n in range(1, len(events) + 1)]
    replies = [e["data"] for e in events if e["event"] == "message.created" and e["data"]["role"] == "assistant"]
    deltas = [e["data"] for e in events if e["event"] == "message.delta"]
    assert deltas and len(replies) == 1
    assert {(d["run_id"], d["message_id"]) for d in deltas} == {(run_id, replies[0]["id"])}
    assert [d["seq"] for d in deltas] == list(range(len(deltas)))
    assert "".join(d["delta"] for d in deltas) == replies[0]["content"]
    assert events[-1]["event"] == "run.updated" and events[-1]["data"]["terminal"] is True
    return replies[0]


def test_a_finished_run_is_replayed_and_the_stream_ends(http, tenant):
    h, run_id = finished_run(http, tenant)
    events, ended = collect(http, events_path(run_id), h)
    assert ended
    assert [e["event"] for e in events[:2]] == ["message.created", "run.updated"]
    assert events[0]["data"]["role"] == "user" and events[1]["data"]["state"] == "running"
    reply = check_story(events, run_id)
    assert events[-1]["data"]["state"] == "closed" and events[-1]["data"]["latest_message"] == reply


def test_resuming_after_any_event_gives_exactly_the_rest(http, tenant):
    h, run_id = finished_run(http, tenant)
    full, _ = collect(http, events_path(run_id), h)
    for cut in (1, 2, 5, len(full) - 1):
        rest, ended = collect(http, events_path(run_id), {**h, "Last-Event-ID": str(cut)})
        assert ended and rest == full[cut:]
    rest, ended = collect(http, events_path(run_id) + "?last_event_id=3", h)
    assert ended and rest == full[3:]
    # After the terminal event there is nothing more: the stream ends at once.
    assert collect(http, events_path(run_id), {**h, "Last-Event-ID": full[-1]["id"]}) == ([], True)


def test_a_live_reply_resumed_mid_stream_loses_nothing(server, http, tenant, fake_model):
    fake_model.push(Reply(text=REPLY, chunk_delay=0.04))
    agent = tenant.add_agent({"name": "slow", "model_class": "slow", "instructions": "Be slow.", "tools": []},
                             classes=("slow",))
    h = tenant.headers("web:live-sse")
    run_id = post(http, h, open_thread(http, h, agent), "tell me something")["run_id"]
    first, ended = collect(http, events_path(run_id), h, limit=6)  # then the connection drops
    assert not ended and first[-1]["event"] == "message.delta"  # the model is still writing
    time.sleep(0.3)  # more pieces are written while nobody listens
    rest, ended = collect(http, events_path(run_id), {**h, "Last-Event-ID": first[-1]["id"]})
    assert ended
    events = first + rest
    reply = check_story(events, run_id)
    assert reply["content"] == REPLY and len([e for e in events if e["event"] == "message.delta"]) == 24
    # The stored turn carries the exact usage the fake reported, and the run was charged for it.
    trace = http.get(f"/v1/loom/runs/{run_id}/trace", headers=h).json()["data"]
    (turn,) = trace["turns"]
    assert (turn["input_tokens"], turn["output_tokens"]) == (5, 24)  # "Be slow." + "tell me something"; 24 words
    assert trace["cost_credits"] == pytest.approx((5 * 1.0 + 24 * 2.0) / 1000)


def test_the_stream_waits_through_awaiting_input_without_holding_a_connection(server, http, tenant):
    agent = tenant.add_agent(SCRIPTED_AGENT)
    h = tenant.headers("web:waiting")
    thread = open_thread(http, h, agent)
    run_id = post(http, h, thread, "ask: What is your name?")["run_id"]
    assert wait_run(http, h, run_id)["state"] == "awaiting_input"
    seen: list[dict] = []
    done = threading.Event()

    def listen():
        with httpx.Client(base_url=server.base_url, timeout=20) as client, \
                client.stream("GET", events_path(run_id), headers=h) as response:
            for item in parse(response.iter_lines()):
                seen.append(item)
        done.set()

    threading.Thread(target=listen, daemon=True).start()
    deadline = time.monotonic() + 10
    while sum("comment" in s for s in seen) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sum("comment" in s for s in seen) >= 3  # heartbeats while the run waits
    pool = server.services.database().engine.pool
    samples = []
    for _ in range(10):
        samples.append(pool.checkedout())
        time.sleep(0.03)
    assert sorted(samples)[5] == 0, samples  # the idle stream holds no database connection
    post(http, h, thread, "Ada")
    assert done.wait(10), "the stream did not end after the run closed"
    events = [s for s in seen if "comment" not in s]
    states = [e["data"]["state"] for e in events if e["event"] == "run.updated"]
    assert states == ["running", "awaiting_input", "running", "closed"]
    assert [e["id"] for e in events] == [str(n) for n in range(1, len(events) + 1)]
    assert events[-2]["data"]["content"] == "You said: Ada"


def test_a_failed_run_ends_the_stream(http, tenant):
    h, run_id = finished_run(http, tenant, "fail: the provider is down")
    events, ended = collect(http, events_path(run_id), h)
    assert ended and events[-1]["data"]["state"] == "failed"
    assert events[-1]["data"]["error"]["code"] == "model_error"
    assert not any(e["event"] == "message.delta" for e in events)


def test_access_is_that_of_the_run(server, http, tenant):
    from support.tenants import make_tenant

    h, run_id = finished_run(http, tenant)
    path = events_path(run_id)
    assert http.get(path).json()["error"]["code"] == "unauthorized"
    other_subject = http.get(path, headers=tenant.headers("web:mallory"))
    assert other_subject.status_code == 404 and other_subject.json()["error"]["code"] == "not_found"
    workspace_wide, ended = collect(http, path, tenant.headers(None))  # relay without a subject
    assert ended and workspace_wide[-1]["data"]["id"] == run_id
    stranger = make_tenant(server)
    assert http.get(path, headers=stranger.headers(None)).status_code == 404
    assert http.get(events_path("not-a-uuid"), headers=h).status_code == 404
    assert http.get(events_path("00000000-0000-4000-8000-000000000000"), headers=h).status_code == 404
    for bad in ("x", "-1", "1.5", "99999999999"):
        r = http.get(path, headers={**h, "Last-Event-ID": bad})
        assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_request", bad
    assert http.get(path + "?last_event_id=abc", headers=h).status_code == 400
    browser = http.get(path, headers={**h, "Origin": "https://evil.example"})
    assert browser.json()["error"]["code"] == "secret_key_in_browser"
    # Direct mode: the subject's session token reads its own run's events.
    key = make_signing_key("ES256", "sse-key")
    tenant.update(jwks_json={"keys": [key.jwk]})
    now = int(time.time())
    token = sign(key, {"iss": tenant.key_id, "sub": "web:sse", "aud": ["service"], "iat": now, "exp": now + 120})
    events, ended = collect(http, path, {"Authorization": f"Bearer {token}"})
    assert ended and events[-1]["data"]["id"] == run_id
    token = sign(key, {"iss": tenant.key_id, "sub": "web:eve", "aud": ["service"], "iat": now, "exp": now + 120})
    assert http.get(path, headers={"Authorization": f"Bearer {token}"}).status_code == 404


def test_events_stored_by_another_process_arrive_by_polling(server, http, tenant):
    """An event written without this process's wake-up (as a worker process would) still
    reaches an open stream within the poll interval, and a terminal one ends it."""
    from heddle.loom.event_log import append
    from heddle.loom.run_event import RunEvent

    agent = tenant.add_agent(SCRIPTED_AGENT)
    h = tenant.headers("web:elsewhere")
    run_id = post(http, h, open_thread(http, h, agent), "ask: Still there?")["run_id"]
    run = wait_run(http, h, run_id)
    assert run["state"] == "awaiting_input"
    before, _ = collect(http, events_path(run_id), h, limit=4)  # up to awaiting_input
    assert before[-1]["data"]["state"] == "awaiting_input"
    got: list = []

    def listen():
        got.append(collect(http.__class__(base_url=server.base_url), events_path(run_id),
                           {**h, "Last-Event-ID": before[-1]["id"]}))

    reader = threading.Thread(target=listen, daemon=True)
    reader.start()
    time.sleep(0.3)
    import uuid as uuid_mod

    written = time.monotonic()
    tenant.run(lambda s: append(s, uuid_mod.UUID(run_id), [RunEvent(
        "run.updated", {**run, "state": "closed", "terminal": True}, None, uuid_mod.UUID(run_id))]))
    reader.join(5)
    (events, ended), = got
    assert ended and [e["id"] for e in events] == [str(int(before[-1]["id"]) + 1)]
    assert events[0]["data"]["terminal"] is True and time.monotonic() - written < 2


def test_opening_a_stream_takes_one_session(server, http, tenant):
    """The access check and the stream's first read share the request's session: one pool
    checkout and three statements (the key, the run, its events) for a finished run's stream,
    on every message's path (issue 48; the first read had a session of its own)."""
    import asyncio

    from sqlalchemy import event

    h, run_id = finished_run(http, tenant)
    engine = server.services.db.engine.sync_engine
    seen: list[tuple[object, str]] = []

    def task() -> object:
        try:
            return asyncio.current_task()
        except RuntimeError:
            return None

    def on_checkout(*_):
        seen.append((task(), "checkout"))

    def on_statement(conn, cursor, statement, *_):
        seen.append((task(), " ".join(statement.split())))

    event.listen(engine.pool, "checkout", on_checkout)
    event.listen(engine, "before_cursor_execute", on_statement)
    try:
        events, ended = collect(http, events_path(run_id), h)
    finally:
        event.remove(engine, "before_cursor_execute", on_statement)
        event.remove(engine.pool, "checkout", on_checkout)
    assert ended and events[-1]["data"]["state"] == "closed"
    # The stream's tasks are those that read the run or its events, but not the server's own
    # tasks, which may read beside them (the delta writer, the pollers, runs).
    own = ("delta-writer", "schedule-poller", "webhook-", "request-log-", "run-", "lease-", "retention-",
           "idempotency-pruner")
    mine = {t for t, what in seen if t is not None and not t.get_name().startswith(own)
            and (" FROM runs" in what or " FROM run_events" in what)}
    statements = [what for t, what in seen if t in mine and what != "checkout"]
    assert len(statements) == 3, statements
    assert [what for t, what in seen if t in mine and what == "checkout"] == ["checkout"]


def test_a_stream_never_sent_follows_nothing(server, tenant):
    """A response cut off before its first event never starts the stream's generator: the
    stream's wake-up subscription, taken with its first read, is dropped all the same."""
    import asyncio

    with server.client() as http:
        h, run_id = finished_run(http, tenant)
    signals = server.services.run_events.signals
    app = server.app
    headers = [(k.lower().encode(), v.encode()) for k, v in h.items()] + [(b"host", b"test")]
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET",
             "scheme": "http", "path": events_path(run_id), "raw_path": events_path(run_id).encode(),
             "query_string": b"", "headers": headers, "client": ("127.0.0.1", 1234), "server": ("test", 80)}

    async def receive():
        await asyncio.sleep(3600)

    async def send(message):
        if message["type"] == "http.response.start":
            raise OSError("the client went away")

    async def call():
        try:
            await app(scope, receive, send)
        except OSError:
            pass
        return signals.watched(uuid.UUID(run_id))

    assert server.call(call()) is False


def slow_run(http, tenant, fake_model, subject: str) -> tuple[dict, uuid.UUID]:
    """A run of the `slow` class (the fake model streams a piece every 50 ms), just posted."""
    fake_model.push(Reply(text=REPLY, chunk_delay=0.05))
    agent = tenant.add_agent({"name": "slow", "model_class": "slow", "instructions": "Be slow.", "tools": []},
                             classes=("slow",))
    h = tenant.headers(subject)
    return h, uuid.UUID(post(http, h, open_thread(http, h, agent), "hello")["run_id"])


def test_what_is_handed_after_the_first_read_follows_it_at_once(server, http, tenant, fake_model):
    """The stream's first read is made when the request opens it (`RunEventStream.open`); a
    piece handed to the stream after that read and before the stream's first turn goes out
    with it, after the read's events, not at the next poll."""
    from heddle.loom.run_event import RunEvent
    from heddle.loom.sse import RunEventStream

    h, run_id = slow_run(http, tenant, fake_model, "web:handed")
    services = server.services
    db = services.db

    async def first_write():
        stream = RunEventStream(db, services.run_events.signals, run_id, 0, heartbeat_seconds=60, poll_seconds=60)
        async with db.session() as session:
            await stream.open(session, "running")
        last = stream._opened[1][-1].seq
        # As the delta writer hands a piece it has just stored (a made-up one: only its place counts).
        services.run_events.signals.notify(run_id, [RunEvent("message.delta", {"delta": "x"}, None, run_id, last + 1)])
        events = stream.events()
        try:
            assert (await anext(events)).startswith("retry:")
            return last, await asyncio.wait_for(anext(events), 5)
        finally:
            await events.aclose()

    last, text = server.call(first_write())
    ids = [int(line[4:]) for line in text.splitlines() if line.startswith("id: ")]
    assert ids == list(range(1, last + 2))
    wait_run(http, h, str(run_id), states=("closed",))


def test_a_replys_first_piece_skips_the_window_and_the_next_ones_keep_it(server, http, tenant, fake_model,
                                                                         monkeypatch):
    """The window that coalesces a stream's writes (loom/delta_pacing.py) holds news that comes
    right after a send of pieces; the piece that comes right after `run.updated` or
    `message.created` (a reply's first) goes at once. With a window of a minute, the first
    piece arrives at once and the second one waits."""
    from heddle.loom import sse
    from heddle.loom.run_event import RunEvent
    from heddle.loom.sse import RunEventStream

    monkeypatch.setattr(sse, "SSE_WINDOW_SECONDS", 60.0)
    h, run_id = slow_run(http, tenant, fake_model, "web:first-piece")
    services = server.services
    signals = services.run_events.signals
    wait_run(http, h, str(run_id), states=("closed",))

    async def two_pieces():
        stream = RunEventStream(services.db, signals, run_id, 0, heartbeat_seconds=600, poll_seconds=600)
        async with services.db.session() as session:
            await stream.open(session, "running")
        opened = stream._opened[1]
        # The stream's first send: the run's events before its reply (the user's message, the run).
        first = next(n for n, event in enumerate(opened) if event.name == "message.delta")
        stream._opened = ("running", opened[:first])
        last = opened[first - 1].seq
        events = stream.events()
        try:
            assert (await anext(events)).startswith("retry:")
            sent = await asyncio.wait_for(anext(events), 5)
            assert "event: message.delta" not in sent
            signals.notify(run_id, [RunEvent("message.delta", {"delta": "a"}, None, run_id, last + 1)])
            piece = await asyncio.wait_for(anext(events), 5)  # at once, not after the minute
            signals.notify(run_id, [RunEvent("message.delta", {"delta": "b"}, None, run_id, last + 2)])
            held = asyncio.ensure_future(anext(events))
            done, _ = await asyncio.wait({held}, timeout=0.5)
            held.cancel()
            await asyncio.gather(held, return_exceptions=True)  # the stream ends with the cancel
            return piece, bool(done)
        finally:
            await events.aclose()

    piece, second_sent = server.call(two_pieces())
    assert piece.startswith(f"id: {last_seq(piece)}\nevent: message.delta\n")
    assert second_sent is False


def last_seq(text: str) -> int:
    return [int(line[4:]) for line in text.splitlines() if line.startswith("id: ")][-1]
