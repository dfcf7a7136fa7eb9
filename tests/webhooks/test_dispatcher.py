"""The webhook dispatcher on a real database: exclusive claims, leases, SSRF guard, giving up,
and delivery after a restart of the whole server."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import time

import pytest
from sqlalchemy import select

from heddle.config import Settings
from heddle.db.base import Database, utcnow
from heddle.db.migrate import upgrade
from heddle.outbound.safe_http import build_outbound_client
from heddle.webhooks import outbox
from heddle.webhooks import service as webhook_service
from heddle.webhooks.dispatcher import WebhookDispatcher, backoff
from heddle.webhooks.models import WebhookDelivery
from heddle.workspaces import service as ws_service
from support.loom import SCRIPTED_AGENT, open_thread, post, wait_run
from support.net import free_port
from webhooks.webhook_testkit import Receiver, spec_verify


def client(allow_private: bool = True):
    return build_outbound_client(allow_private=allow_private, connect_timeout=2, timeout=5,
                                 max_response_bytes=65536)


async def seeded(url: str, hook_url: str, count: int = 1, **settings):
    await upgrade(url)
    db = Database(url)
    async with db.transaction() as s:
        ws = await ws_service.create_workspace(s, "hooks")
        endpoint = await webhook_service.configure(s, ws.id, url=hook_url)
        for n in range(count):
            outbox.enqueue(s, ws.id, "run.closed", {"id": f"run-{n}", "state": "closed"})
    return db, ws.id, endpoint.secret, Settings(database_url=url, **settings)


async def deliveries(db):
    async with db.session() as s:
        return {d.id: d for d in await s.scalars(select(WebhookDelivery))}


async def test_claims_are_exclusive_and_leased(db_url):
    db, _, _, settings = await seeded(db_url, "https://hooks.example.com/h", count=30)
    other = Database(db_url)
    http = client()
    try:
        first, second = WebhookDispatcher(db, http, settings), WebhookDispatcher(other, http, settings)
        a, b = await asyncio.gather(first.claim(), second.claim())
        ids_a, ids_b = {j.id for j in a}, {j.id for j in b}
        assert not ids_a & ids_b and len(ids_a | ids_b) == 30  # each delivery claimed exactly once
        assert await first.claim() == []  # leased: not due again yet
        later = utcnow() + first.lease + dt.timedelta(seconds=1)
        again = await first.claim(now=later)  # a process that died mid-attempt: claimed again
        assert {j.id for j in again} == ids_a | ids_b and all(j.attempt == 1 for j in again)
    finally:
        await http.aclose()
        await other.dispose()
        await db.dispose()


async def test_private_targets_are_refused_by_the_guarded_client(sqlite_url):
    receiver = Receiver()
    db, _, _, settings = await seeded(sqlite_url, receiver.url.replace("http://", "https://"))
    http = client(allow_private=False)
    try:
        dispatcher = WebhookDispatcher(db, http, settings)
        (job,) = await dispatcher.claim()
        assert await dispatcher.attempt(job) is False
        (delivery,) = (await deliveries(db)).values()
        # refused the same way at every retry: failed at once, with the reason
        assert delivery.state == "failed" and delivery.attempt_count == 1 and delivery.next_attempt_at is None
        assert delivery.last_error.startswith("destination_refused")
        assert receiver.received == []  # nothing left the process
    finally:
        receiver.close()
        await http.aclose()
        await db.dispose()


async def test_a_delivery_is_given_up_after_the_retry_window(sqlite_url):
    receiver = Receiver(statuses=[500, 500])
    db, _, _, settings = await seeded(sqlite_url, receiver.url, webhook_retry_hours=24, webhook_retry_base_seconds=1)
    http = client()
    try:
        async with db.transaction() as s:  # owed 23 h 59 min 59.5 s ago
            (delivery,) = await s.scalars(select(WebhookDelivery))
            delivery.created_at = utcnow() - dt.timedelta(hours=24) + dt.timedelta(seconds=0.5)
        dispatcher = WebhookDispatcher(db, http, settings)
        (job,) = await dispatcher.claim()
        await dispatcher.attempt(job)  # fails; a 1 s backoff still fits in the 24 h window? no
        (delivery,) = (await deliveries(db)).values()
        assert delivery.state == "failed" and delivery.next_attempt_at is None and delivery.attempt_count == 1
    finally:
        receiver.close()
        await http.aclose()
        await db.dispose()


def test_backoff_doubles_to_a_ceiling_and_covers_a_day():
    delays = [backoff(n, base=10, ceiling=3600, rand=lambda: 0.0) for n in range(1, 40)]
    assert delays[:4] == [10, 20, 40, 80] and max(delays) == 3600
    assert sum(delays[:35]) > 24 * 3600  # with the defaults, retries go on for more than a day
    assert backoff(3, base=10, ceiling=3600, rand=lambda: 1.0) == pytest.approx(40 * 0.8)


def test_a_delivery_owed_before_a_restart_is_delivered_after_it(tmp_path):
    from support.server import LiveServer
    from support.tenants import make_tenant

    url = f"sqlite+aiosqlite:///{tmp_path / 'restart.db'}"
    port = free_port()  # nothing listens here yet
    hook = f"http://127.0.0.1:{port}/hook"
    fast = {"webhook_retry_base_seconds": 1.0, "webhook_poll_seconds": 0.1}
    first = LiveServer(database_url=url, **fast).start()
    try:
        tenant = make_tenant(first)
        tenant.run(lambda s: webhook_service.configure(s, tenant.workspace_id, url=hook))
        agent = tenant.add_agent(SCRIPTED_AGENT)
        h = tenant.headers("web:restart")
        with first.client() as http:
            run_id = post(http, h, open_thread(http, h, agent), "hello")["run_id"]
            wait_run(http, h, run_id, states=("closed",))

        def attempts():
            async def read():
                async with first.services.database().session() as s:
                    return await webhook_service.list_deliveries(s, tenant.workspace_id)
            return first.call(read())

        deadline = time.monotonic() + 10
        while not (attempts() and attempts()[0]["attempt_count"]) and time.monotonic() < deadline:
            time.sleep(0.05)
        (owed,) = attempts()
        assert owed["state"] == "pending" and owed["attempts"][0]["error"].startswith("connect_failed")
    finally:
        first.stop()
    receiver = Receiver(port=port)  # the receiver comes up while no server runs
    second = LiveServer(database_url=url, **fast).start()
    try:
        (got,) = receiver.wait_for(1)
        event = json.loads(got.body)
        assert event["id"] == owed["id"] and event["data"]["id"] == run_id
        secret = second.call(_secret(second, tenant.workspace_id))
        assert spec_verify(got.headers["Service-Signature"], "POST", "/hook", got.body, secret, got.at)
    finally:
        second.stop()
        receiver.close()


async def _secret(server, workspace_id):
    async with server.services.database().session() as s:
        return (await outbox.endpoint_for(s, workspace_id)).secret
