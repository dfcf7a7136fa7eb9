"""Thread lifecycle: GET/DELETE a thread, erase a subject, retention, checked in the database."""

from __future__ import annotations

import datetime as dt
import time
import uuid

from sqlalchemy import select, update

from heddle.db.base import Base
from heddle.loom.models import Message, Run, Thread
from run_control.run_control_kit import EventListener, wait_until

SERVER_SETTINGS = {"retention_sweep_seconds": 0.3}


def _traces_of_thread(caller, thread, subject="web:alice") -> list[str]:
    return [m["run_id"] for m in caller.messages(thread, subject) if m["run_id"]]


def _busy_thread(caller, toolhost, subject="web:alice") -> tuple[str, set[str]]:
    """A thread with closed, failed, cancelled and queued runs, tool calls and charges."""
    thread = caller.thread(subject)
    for content in ("call: balance {}", "DEUTDEFF", "fail: nope", 'call: pay {"amount": 3}'):
        run_id = caller.post(thread, content, subject).json()["data"]["run_id"]
        caller.wait(run_id, subject=subject)
    caller.cancel(run_id, subject)  # the pay approval: declined by the cancel
    slow = caller.post(thread, "call: slow {}", subject).json()["data"]["run_id"]
    toolhost.wait_for_call("/tools/slow")
    queued = caller.post(thread, "later", subject, if_busy="enqueue").json()["data"]
    assert queued["queued"]
    toolhost.release()
    caller.wait(slow, states=("closed",), subject=subject)
    caller.wait(queued["run_id"], states=("closed",), subject=subject)
    ids = {thread, *_traces_of_thread(caller, thread, subject)}
    for run_id in list(ids - {thread}):
        trace = caller.trace(run_id, subject)
        for turn in trace["turns"]:
            ids |= {tc["id"] for tc in turn["tool_calls"]}
    ids |= {m["id"] for m in caller.messages(thread, subject)}
    return thread, ids


def _rows_mentioning(tenant, ids: set[str]) -> list[tuple[str, dict]]:
    """Every row of every table in which any of `ids` appears (as a UUID, its hex, or in text)."""
    wanted = {str(i) for i in ids} | {uuid.UUID(str(i)).hex for i in ids}

    async def scan(s):
        found = []
        for table in Base.metadata.sorted_tables:
            for row in (await s.execute(select(table))).mappings():
                for value in row.values():
                    text = str(value.hex if isinstance(value, uuid.UUID) else value)
                    if any(w in text for w in wanted):
                        found.append((table.name, dict(row)))
                        break
        return found

    return tenant.run(scan)


def test_get_thread(caller, toolhost):
    thread = caller.thread()
    empty = caller.http.get(f"/v1/loom/threads/{thread}", headers=caller.headers())
    assert empty.status_code == 200
    data = empty.json()["data"]
    assert data["id"] == thread and data["agent"] == caller.tenant.agent and data["subject"] == "web:alice"
    assert data["latest_run"] is None and data["queued_messages"] == 0
    run_id = caller.post(thread, "ask: ok?").json()["data"]["run_id"]
    caller.wait(run_id)
    data = caller.http.get(f"/v1/loom/threads/{thread}", headers=caller.headers()).json()["data"]
    assert data["latest_run"] == {"id": run_id, "state": "awaiting_input"} and data["last_message_at"]
    other = caller.http.get(f"/v1/loom/threads/{thread}", headers=caller.headers("web:mallory"))
    assert other.status_code == 404 and other.json()["error"]["code"] == "not_found"
    assert caller.http.get(f"/v1/loom/threads/{uuid.uuid4()}", headers=caller.headers()).status_code == 404
    assert caller.http.get(f"/v1/loom/threads/{thread}").status_code == 401


def test_delete_thread_leaves_no_row_and_the_ledger_still_balances(caller, toolhost, tenant, server):
    thread, ids = _busy_thread(caller, toolhost)
    assert len(ids) > 10 and _rows_mentioning(tenant, ids)
    ledger_before = tenant.run(lambda s: s.scalar(select(__import__("sqlalchemy").func.count()).select_from(
        Base.metadata.tables["ledger_entries"])))
    balance_before = tenant.balance_micro()
    # another subject can neither see nor delete it
    other = caller.http.delete(f"/v1/loom/threads/{thread}", headers=caller.headers("web:mallory"))
    assert other.status_code == 404
    with EventListener(server, caller.headers(), thread) as events:
        resp = caller.http.delete(f"/v1/loom/threads/{thread}", headers=caller.headers())
        assert resp.status_code == 200, resp.text
        events.wait_for(lambda n, d: n == "thread.deleted" and d["thread_id"] == thread)
    erased = resp.json()["data"]["erased"]
    assert resp.json()["data"]["deleted"] is True and erased["threads"] == 1 and erased["runs"] == 6
    assert erased["tool_calls"] == 3 and erased["ledger_entries_cut"] >= 6
    server.flush_request_log()
    assert _rows_mentioning(tenant, ids) == []  # not one row of the thread anywhere
    # money stays: every ledger row is kept, and the balance is still the ledger's sum
    assert tenant.balance_micro() == balance_before == tenant.ledger_sum()
    assert tenant.run(lambda s: s.scalar(select(__import__("sqlalchemy").func.count()).select_from(
        Base.metadata.tables["ledger_entries"]))) == ledger_before
    assert caller.http.get(f"/v1/loom/threads/{thread}", headers=caller.headers()).status_code == 404
    again = caller.http.delete(f"/v1/loom/threads/{thread}", headers=caller.headers())
    assert again.status_code == 404
    # the subject can start over with the same agent
    assert caller.thread() != thread


def test_delete_thread_erases_its_webhook_deliveries_delivered_or_pending(caller, toolhost, tenant, server):
    """A delivery's body is the Run (reply and question text included): erasure deletes it with
    its attempts, and a pending one is never sent afterwards."""
    from heddle.webhooks import service as webhook_service
    from heddle.webhooks.models import WebhookDelivery
    from support.net import free_port

    dead = f"http://127.0.0.1:{free_port()}/hooks"  # nothing listens: deliveries stay pending

    async def configure(s):
        await webhook_service.configure(s, tenant.workspace_id, url=dead)
        await s.commit()

    tenant.run(configure)
    try:
        keep = caller.thread("web:bob")
        kept_run = caller.post(keep, "ask: stay?", "web:bob").json()["data"]["run_id"]
        caller.wait(kept_run, subject="web:bob")
        thread, ids = _busy_thread(caller, toolhost)
        about = WebhookDelivery.body["data"]["thread_id"].as_string()

        def deliveries(thread_id):
            return tenant.run(lambda s: s.scalar(select(__import__("sqlalchemy").func.count()).where(
                about == thread_id)))

        wait_until(lambda: deliveries(thread) >= 3)
        resp = caller.http.delete(f"/v1/loom/threads/{thread}", headers=caller.headers())
        assert resp.status_code == 200, resp.text
        assert deliveries(thread) == 0 and deliveries(keep) >= 1  # only that thread's
        server.flush_request_log()
        assert _rows_mentioning(tenant, ids) == []
    finally:
        async def remove(s):
            await webhook_service.configure(s, tenant.workspace_id, url="")
            await s.commit()

        tenant.run(remove)


def test_delete_thread_while_a_run_is_busy(caller, toolhost, tenant):
    thread = caller.thread()
    run_id = caller.post(thread, "call: slow {}").json()["data"]["run_id"]
    toolhost.wait_for_call("/tools/slow")
    assert caller.http.delete(f"/v1/loom/threads/{thread}", headers=caller.headers()).status_code == 200
    toolhost.release()
    time.sleep(0.3)  # the executor finds its run gone and writes nothing
    assert _rows_mentioning(tenant, {thread, run_id}) == []
    assert tenant.balance_micro() == tenant.ledger_sum()


def test_erase_a_subject(http, tenant, toolhost, server):
    from run_control.run_control_kit import Caller

    relay = Caller("relay", tenant, toolhost, http)
    direct = Caller("direct", tenant, toolhost, http)
    second_agent = tenant.add_agent({"name": "other", "model_class": "scripted", "instructions": "", "tools": []})
    threads = [relay.thread("web:erin"), relay.thread("web:erin", agent=second_agent)]
    for thread in threads:
        relay.wait(relay.post(thread, "hello", "web:erin").json()["data"]["run_id"], subject="web:erin")
    keep = relay.thread("web:frank")
    relay.wait(relay.post(keep, "hello", "web:frank").json()["data"]["run_id"], subject="web:frank")
    path = "/v1/loom/subjects/web:erin"
    refused = http.delete(path, headers=direct.headers("web:erin"))
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "forbidden"
    mismatch = http.delete(path, headers=tenant.headers("web:frank"))
    assert mismatch.status_code == 403
    bad = http.delete("/v1/loom/subjects/not%20a%20subject", headers=tenant.headers(None))
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_subject"
    assert http.delete(path).status_code == 401
    with EventListener(server, tenant.headers("web:erin"), threads[1]) as events:
        resp = http.delete(path, headers=tenant.headers(None))
        assert resp.status_code == 200, resp.text
        events.wait_for(lambda n, d: n == "thread.deleted" and d == {"thread_id": threads[1],
                                                                       "reason": "subject_erased"})
    assert resp.json()["data"]["erased"]["threads"] == 2 and resp.json()["data"]["subject"] == "web:erin"
    server.flush_request_log()
    assert _rows_mentioning(tenant, set(threads)) == []
    assert tenant.run(lambda s: s.scalar(select(Thread.id).where(Thread.subject == "web:erin"))) is None
    assert tenant.run(lambda s: s.scalar(select(Run.id).where(Run.subject == "web:erin"))) is None
    log_paths = tenant.run(lambda s: s.scalars(select(Base.metadata.tables["request_log"].c.path)))
    assert not [p for p in log_paths if "erin" in p]
    assert relay.messages(keep, "web:frank")  # another subject's thread is untouched
    assert tenant.balance_micro() == tenant.ledger_sum()
    # idempotent: erasing a subject with nothing left is a 200 with zero counts
    again = http.delete(path, headers=tenant.headers("web:erin"))
    assert again.status_code == 200 and again.json()["data"]["erased"]["threads"] == 0


def test_retention_prunes_idle_threads_in_the_background(caller, toolhost, tenant, server):
    old, recent = caller.thread("web:old"), caller.thread("web:recent")
    for thread, subject in ((old, "web:old"), (recent, "web:recent")):
        caller.wait(caller.post(thread, "hello", subject).json()["data"]["run_id"], subject=subject)
    balance = tenant.balance_micro()
    back = dt.datetime.now(dt.UTC) - dt.timedelta(days=3)

    async def age(s):
        tid = uuid.UUID(old)
        await s.execute(update(Thread).where(Thread.id == tid).values(created_at=back))
        await s.execute(update(Message).where(Message.thread_id == tid).values(created_at=back))
        await s.execute(update(Run).where(Run.thread_id == tid).values(updated_at=back, created_at=back))

    tenant.run(age)
    time.sleep(1)  # no retention_days yet: nothing is pruned
    assert caller.http.get(f"/v1/loom/threads/{old}", headers=caller.headers("web:old")).status_code == 200
    tenant.update(retention_days=2)
    wait_until(lambda: caller.http.get(f"/v1/loom/threads/{old}", headers=caller.headers("web:old")).status_code
               == 404, what="the pruner to erase the idle thread")
    assert caller.http.get(f"/v1/loom/threads/{recent}", headers=caller.headers("web:recent")).status_code == 200
    assert tenant.balance_micro() == balance == tenant.ledger_sum()
    tenant.update(retention_days=0)  # 0 keeps threads for ever again
