"""GET/POST/DELETE /v1/loom/memories through the real server, relay and direct, SQLite and
PostgreSQL: the person's own view, every bad input, erasure, retention and the webhooks."""

from __future__ import annotations

import datetime as dt
import json
import time
import uuid

import pytest
from typer.testing import CliRunner

from direct.direct_testkit import JwksServer, make_signing_key, sign
from heddle.cli.main import app as cli
from heddle.loom.memory_models import Memory
from heddle.loom.retention import prune_once
from support.tenants import make_tenant
from webhooks.webhook_testkit import Receiver


def add(http, h, content="Prefers replies in French."):
    return http.post("/v1/loom/memories", json={"content": content}, headers=h)


def listed(http, h) -> list[dict]:
    r = http.get("/v1/loom/memories", headers=h)
    assert r.status_code == 200, r.text
    return r.json()["data"]["items"]


def test_add_list_delete_newest_first(http, tenant):
    h = tenant.headers("web:mem-alice")
    first = add(http, h, "Account ends 4417.")
    assert first.status_code == 201, first.text
    second = add(http, h, "  Prefers replies in French.  ")
    fact = second.json()["data"]
    assert fact["content"] == "Prefers replies in French." and fact["source"] == "api"
    assert fact["subject"] == "web:mem-alice" and fact["agent_id"] is None and fact["created_at"].endswith("Z")
    items = listed(http, h)
    assert [m["content"] for m in items] == ["Prefers replies in French.", "Account ends 4417."]
    gone = http.delete(f"/v1/loom/memories/{fact['id']}", headers=h)
    assert gone.status_code == 200 and gone.json()["data"]["deleted"] is True
    assert [m["content"] for m in listed(http, h)] == ["Account ends 4417."]
    again = http.delete(f"/v1/loom/memories/{fact['id']}", headers=h)
    assert again.status_code == 404 and again.json()["error"]["code"] == "not_found"


@pytest.mark.parametrize(("body", "code"), [
    ({"content": ""}, "invalid_request"),
    ({"content": "   "}, "invalid_request"),
    ({"content": "x" * 501}, "invalid_request"),  # HEDDLE_MEMORY_FACT_MAX_CHARS is 500 by default
    ({"content": "x" * 8001}, "invalid_request"),
    ({"content": "nul \u0000 here"}, "invalid_request"),
    ({}, "invalid_request"),
    ({"content": "ok", "subject": "web:bob"}, "invalid_request"),
    ({"content": 5}, "invalid_request"),
])
def test_bad_facts_are_refused_and_nothing_is_stored(http, tenant, body, code):
    h = tenant.headers("web:mem-bad")
    r = http.post("/v1/loom/memories", json=body, headers=h)
    assert r.status_code == 400 and r.json()["error"]["code"] == code, r.text
    assert listed(http, h) == []


def test_a_fact_over_the_cap_names_the_field(http, tenant):
    r = add(http, tenant.headers("web:mem-cap"), "y" * 501)
    error = r.json()["error"]
    assert error["details"][0]["field"] == "content" and "500" in error["message"]


def test_subject_is_required_and_checked(http, tenant):
    r = http.get("/v1/loom/memories", headers=tenant.headers(subject=None))
    assert r.status_code == 400 and r.json()["error"]["code"] == "subject_required"
    r = add(http, tenant.headers(subject=None))
    assert r.status_code == 400 and r.json()["error"]["code"] == "subject_required"
    r = http.get("/v1/loom/memories", headers=tenant.headers("alice"))
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_subject"
    r = http.get("/v1/loom/memories", headers={"Service-Subject": "web:x"})
    assert r.status_code == 401


def test_another_subjects_and_another_workspaces_fact_is_not_found(http, tenant, server):
    mine = add(http, tenant.headers("web:mem-owner")).json()["data"]
    other_subject = http.delete(f"/v1/loom/memories/{mine['id']}", headers=tenant.headers("web:mem-intruder"))
    assert other_subject.status_code == 404 and other_subject.json()["error"]["code"] == "not_found"
    stranger = make_tenant(server)
    other_workspace = http.delete(f"/v1/loom/memories/{mine['id']}", headers=stranger.headers("web:mem-owner"))
    assert other_workspace.status_code == 404
    assert listed(http, stranger.headers("web:mem-owner")) == []
    for bad in ("not-a-uuid", str(uuid.uuid4())):
        assert http.delete(f"/v1/loom/memories/{bad}", headers=tenant.headers("web:mem-owner")).status_code == 404
    assert [m["id"] for m in listed(http, tenant.headers("web:mem-owner"))] == [mine["id"]]


def test_memory_full_is_a_409(server, http, tenant):
    h = tenant.headers("web:mem-full")
    limit = server.settings.memory_max_facts

    async def fill(s):
        for i in range(limit):
            s.add(Memory(workspace_id=tenant.workspace_id, subject="web:mem-full", content=f"fact {i}", source="api"))

    tenant.run(fill)
    r = add(http, h)
    assert r.status_code == 409 and r.json()["error"]["code"] == "memory_full"
    assert len(listed(http, h)) == 100


def test_direct_mode_sees_and_deletes_its_own_and_may_not_add(http, tenant):
    key = make_signing_key("ES256", "mem-direct")
    jwks = JwksServer()
    url = jwks.publish(key.jwk, path=f"/{tenant.workspace_id}/jwks.json")
    tenant.update(jwks_uri=url)
    now = int(time.time())

    def token(sub):
        claims = {"iss": tenant.key_id, "sub": sub, "aud": ["service"], "iat": now, "exp": now + 120}
        return {"Authorization": f"Bearer {sign(key, claims)}"}

    mine = add(http, tenant.headers("web:dora")).json()["data"]
    theirs = add(http, tenant.headers("web:erin")).json()["data"]
    dora = token("web:dora")
    assert [m["id"] for m in listed(http, dora)] == [mine["id"]]
    r = http.post("/v1/loom/memories", json={"content": "I am great"}, headers=dora)
    assert r.status_code == 403 and r.json()["error"]["code"] == "forbidden"
    assert http.delete(f"/v1/loom/memories/{theirs['id']}", headers=dora).status_code == 404
    assert http.delete(f"/v1/loom/memories/{mine['id']}", headers=dora).status_code == 200
    assert listed(http, dora) == [] and len(listed(http, tenant.headers("web:erin"))) == 1
    r = http.get("/v1/loom/memories", headers={**dora, "Service-Subject": "web:erin"})
    assert r.status_code == 400 and r.json()["error"]["code"] == "subject_header_with_token"


def test_erasing_a_subject_erases_its_memories(http, tenant):
    h = tenant.headers("web:mem-erase")
    add(http, h, "one")
    add(http, h, "two")
    keep = tenant.headers("web:mem-keep")
    add(http, keep, "kept")
    r = http.delete("/v1/loom/subjects/web:mem-erase", headers=tenant.headers(subject=None))
    assert r.status_code == 200, r.text
    assert r.json()["data"]["erased"]["memories"] == 2
    assert listed(http, h) == [] and len(listed(http, keep)) == 1


def test_retention_erases_facts_older_than_retention_days(server, http, tenant):
    tenant.update(retention_days=30)
    h = tenant.headers("web:mem-old")

    async def old(s):
        s.add(Memory(workspace_id=tenant.workspace_id, subject="web:mem-old", content="old fact", source="api",
                     created_at=dt.datetime.now(dt.UTC) - dt.timedelta(days=31)))

    tenant.run(old)
    add(http, h, "new fact")
    server.call(prune_once(server.services.database()))
    assert [m["content"] for m in listed(http, h)] == ["new fact"]


def test_memory_changes_owe_webhooks(server, http, tenant):
    receiver = Receiver()
    try:
        result = CliRunner().invoke(cli, ["workspace", "update", tenant.workspace_id, "--webhook-url", receiver.url,
                                          "--database-url", server.settings.database_url, "--json"])
        assert result.exit_code == 0, result.output
        h = tenant.headers("web:mem-hook")
        fact = add(http, h, "Likes tea.").json()["data"]
        http.delete(f"/v1/loom/memories/{fact['id']}", headers=h)
        # Two deliveries, possibly in either order (the dispatcher sends them concurrently).
        events = {r.event["type"]: r.event for r in receiver.wait_for(2, timeout=60)}
        assert set(events) == {"memory.created", "memory.deleted"}
        assert events["memory.created"]["data"]["id"] == fact["id"]
        assert events["memory.deleted"]["data"]["content"] == "Likes tea."
        listed_deliveries = http.get("/v1/webhooks/deliveries", headers=tenant.headers(subject=None))
        assert listed_deliveries.status_code == 200, listed_deliveries.text
        rows = listed_deliveries.json()["data"]["items"]
        assert {(d["type"], d["run_id"]) for d in rows} >= {("memory.created", None), ("memory.deleted", None)}
    finally:
        receiver.close()
    json.dumps(events)  # plain JSON all the way


def test_python_clients_remember_list_and_delete(server, tenant):
    import asyncio

    from heddle.client import AsyncHeddle, Heddle, HeddleAPIError

    with Heddle(server.base_url, api_key=tenant.secret, subject="web:py-mem") as client:
        fact = client.loom.add_memory("Likes green tea.")
        assert fact.content == "Likes green tea." and fact.source == "api"
        assert [m.id for m in client.loom.list_memories().items] == [fact.id]
        assert client.loom.delete_memory(fact.id).deleted is True
        try:
            client.loom.delete_memory(fact.id)
            raise AssertionError("a deleted fact is not found")
        except HeddleAPIError as exc:
            assert exc.code == "not_found"

    async def aio():
        async with AsyncHeddle(server.base_url, api_key=tenant.secret, subject="web:py-mem") as client:
            fact = await client.loom.add_memory("Has two cats.")
            assert (await client.loom.list_memories()).items[0].id == fact.id
            assert (await client.loom.delete_memory(fact.id)).deleted is True

    asyncio.run(aio())
