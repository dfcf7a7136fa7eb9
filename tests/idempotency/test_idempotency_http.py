"""Idempotency-Key on thread, message and identify posts, through the real server (SQLite and
PostgreSQL): replay of the first response, 409 for another request, concurrency, expiry."""

from __future__ import annotations

import datetime as dt
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
from sqlalchemy import func, select

from heddle.billing.models import LedgerEntry
from heddle.idempotency import store
from heddle.idempotency.models import IdempotencyRecord
from heddle.loom.models import Message
from support.loom import SCRIPTED_AGENT, open_thread, wait_run

IDENTIFIED = {"identifier": "DEUTDEFF"}


@pytest.fixture
def agent(tenant):
    return tenant.add_agent(SCRIPTED_AGENT)


def keyed(headers: dict, key: str) -> dict:
    return {**headers, "Idempotency-Key": key}


def assert_replay(first, again):
    assert again.status_code == first.status_code, again.text
    assert again.headers.get("idempotent-replayed") == "true"
    assert "idempotent-replayed" not in first.headers
    assert again.json() == first.json()


def assert_reused(resp):
    assert resp.status_code == 409, resp.text
    assert resp.json()["error"]["code"] == "idempotency_key_reused"


def count(tenant, model, *where):
    return tenant.run(lambda s: s.scalar(select(func.count()).select_from(model).where(*where)))


def test_thread_create_replays_and_refuses_another_body(http, tenant, agent):
    key = str(uuid.uuid4())
    h = keyed(tenant.headers("web:ida"), key)
    first = http.post("/v1/loom/threads", json={"agent": agent}, headers=h)
    assert first.status_code == 201
    # Whitespace and key order do not make another body.
    again = http.post("/v1/loom/threads", content=b'{ "agent" :  "%s" }' % agent.encode(),
                      headers={**h, "Content-Type": "application/json"})
    assert_replay(first, again)
    other_agent = tenant.add_agent({**SCRIPTED_AGENT, "name": "other"})
    assert_reused(http.post("/v1/loom/threads", json={"agent": other_agent}, headers=h))
    # the same key for another subject or another endpoint is another request
    assert_reused(http.post("/v1/loom/threads", json={"agent": agent}, headers=keyed(tenant.headers("web:bo"), key)))
    assert_reused(http.post("/v1/identify", json=IDENTIFIED, headers=h))
    # without a key the same call is the ordinary 200 reuse, not a replay
    plain = http.post("/v1/loom/threads", json={"agent": agent}, headers=tenant.headers("web:ida"))
    assert plain.status_code == 200 and "idempotent-replayed" not in plain.headers


def test_message_post_replays_without_a_second_message_or_run(http, tenant, agent):
    h = tenant.headers("web:max")
    thread = open_thread(http, h, agent)
    key = "msg-" + uuid.uuid4().hex
    first = http.post(f"/v1/loom/threads/{thread}/messages", json={"content": "hello"}, headers=keyed(h, key))
    assert first.status_code == 202
    wait_run(http, h, first.json()["data"]["run_id"])
    again = http.post(f"/v1/loom/threads/{thread}/messages", json={"content": "hello"}, headers=keyed(h, key))
    assert_replay(first, again)
    assert_reused(http.post(f"/v1/loom/threads/{thread}/messages", json={"content": "hello!"}, headers=keyed(h, key)))
    users = count(tenant, Message, Message.thread_id == uuid.UUID(thread), Message.role == "user")
    assert users == 1
    # a new key is a new message
    fresh = http.post(f"/v1/loom/threads/{thread}/messages", json={"content": "hello"}, headers=keyed(h, "k2"))
    assert fresh.status_code == 202 and fresh.json()["data"]["run_id"] != first.json()["data"]["run_id"]


def test_a_refused_request_stores_nothing(http, tenant, agent):
    h = keyed(tenant.headers("web:nia"), "refused-once")
    missing = f"/v1/loom/threads/{uuid.uuid4()}/messages"
    for _ in range(2):
        resp = http.post(missing, json={"content": "hi"}, headers=h)
        assert resp.status_code == 404 and "idempotent-replayed" not in resp.headers
    assert count(tenant, IdempotencyRecord, IdempotencyRecord.workspace_id == tenant.workspace_id) == 0
    # ... so the key is still free for the request that succeeds
    thread = open_thread(http, tenant.headers("web:nia"), agent)
    ok = http.post(f"/v1/loom/threads/{thread}/messages", json={"content": "hi"}, headers=h)
    assert ok.status_code == 202


@pytest.mark.parametrize("key", ["", "x" * 256, "has space", "caf\u00e9"])
def test_malformed_key_is_400(http, tenant, agent, key):
    h = {**tenant.headers("web:kay"), "Idempotency-Key": key.encode("utf-8")}
    resp = http.post("/v1/loom/threads", json={"agent": agent}, headers=h)
    assert resp.status_code == 400 and resp.json()["error"]["code"] == "invalid_request", resp.text
    assert resp.json()["error"]["details"][0]["field"] == "Idempotency-Key"


def test_longest_key_is_accepted(http, tenant, agent):
    h = keyed(tenant.headers("web:long"), "k" * 255)
    first = http.post("/v1/loom/threads", json={"agent": agent}, headers=h)
    assert first.status_code == 201
    assert_replay(first, http.post("/v1/loom/threads", json={"agent": agent}, headers=h))


def test_keys_are_per_workspace(http, tenant, agent, server):
    from support.tenants import make_tenant

    other = make_tenant(server)
    other_agent = other.add_agent(SCRIPTED_AGENT)
    first = http.post("/v1/loom/threads", json={"agent": agent}, headers=keyed(tenant.headers(), "shared"))
    theirs = http.post("/v1/loom/threads", json={"agent": other_agent}, headers=keyed(other.headers(), "shared"))
    assert first.status_code == theirs.status_code == 201
    assert first.json()["data"]["id"] != theirs.json()["data"]["id"]


def test_identify_replay_is_not_billed_twice(http, tenant):
    h = keyed(tenant.headers(subject=None), "id-1")
    before = tenant.balance_micro()
    first = http.post("/v1/identify", json=IDENTIFIED, headers=h)
    assert first.status_code == 200 and first.json()["data"]["result"] == "identified"
    assert tenant.balance_micro() == before - 1_000_000
    for _ in range(3):
        assert_replay(first, http.post("/v1/identify", json=IDENTIFIED, headers=h))
    assert tenant.balance_micro() == before - 1_000_000 == tenant.ledger_sum()
    assert_reused(http.post("/v1/identify", json={"identifier": "BNPAFRPP"}, headers=h))
    # an unbilled result is replayed too
    h2 = keyed(tenant.headers(subject=None), "id-2")
    nf = http.post("/v1/identify", json={"identifier": "ZZZZDEFF"}, headers=h2)
    assert nf.status_code == 200
    assert_replay(nf, http.post("/v1/identify", json={"identifier": "ZZZZDEFF"}, headers=h2))


def test_concurrent_same_key_messages_make_one_message(http, tenant, agent, server):
    h = tenant.headers("web:race")
    thread = open_thread(http, h, agent)
    url = f"/v1/loom/threads/{thread}/messages"

    def send(_):
        with server.client() as c:
            return c.post(url, json={"content": "once"}, headers=keyed(h, "race-key"))

    with ThreadPoolExecutor(8) as pool:
        responses = list(pool.map(send, range(8)))
    assert {r.status_code for r in responses} == {202}, [r.text for r in responses]
    assert len({r.json()["data"]["run_id"] for r in responses}) == 1
    assert sum(r.headers.get("idempotent-replayed") == "true" for r in responses) == 7
    assert count(tenant, Message, Message.thread_id == uuid.UUID(thread), Message.role == "user") == 1


def test_concurrent_same_key_identify_is_billed_once(tenant, server):
    before = tenant.balance_micro()

    def send(_):
        with server.client() as c:
            return c.post("/v1/identify", json=IDENTIFIED, headers=keyed(tenant.headers(subject=None), "race-id"))

    with ThreadPoolExecutor(8) as pool:
        responses = list(pool.map(send, range(8)))
    assert {r.status_code for r in responses} == {200}, [r.text for r in responses]
    assert len({r.content for r in responses}) == 1
    assert tenant.balance_micro() == before - 1_000_000 == tenant.ledger_sum()
    charges = count(tenant, LedgerEntry, LedgerEntry.workspace_id == tenant.workspace_id, LedgerEntry.reason == "identify")
    assert charges == 1


def test_expired_keys_are_pruned_and_free_again(http, tenant, agent, server):
    h = keyed(tenant.headers("web:old"), "old-key")
    first = http.post("/v1/loom/threads", json={"agent": agent}, headers=h)
    assert first.status_code == 201

    async def prune_a_day_later():
        async with server.services.database().transaction() as s:
            return await store.prune(s, dt.timedelta(hours=24), now=dt.datetime.now(dt.UTC) + dt.timedelta(hours=25))

    assert server.call(prune_a_day_later()) >= 1
    again = http.post("/v1/loom/threads", json={"agent": agent}, headers=h)
    assert again.status_code == 200 and "idempotent-replayed" not in again.headers  # ran anew


def test_openapi_documents_the_header(http):
    paths = http.get("/openapi.json").json()["paths"]
    for path in ("/v1/loom/threads", "/v1/loom/threads/{thread_id}/messages", "/v1/loom/runs/{run_id}/outcome",
                 "/v1/identify"):
        names = [p["name"] for p in paths[path]["post"].get("parameters", [])]
        assert "Idempotency-Key" in names, path
