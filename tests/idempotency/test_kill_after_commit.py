"""kill -9 between the commit and the response: a retry with the same key replays.

Issue 15 found message posts committed while their clients never got the 202. The stored
response commits in the request's own transaction, so a real `heddle serve` process that is
killed after its commit (held there by HEDDLE_FAULT_PAUSE_AFTER_COMMIT_S) still answers the
retry with the first response, and neither a second message nor a second charge is made.
"""

from __future__ import annotations

import signal
import subprocess
import threading
import time
import uuid

import httpx
import pytest

from support.loom import SCRIPTED_AGENT, open_thread
from support.processes import serve_process

pytestmark = pytest.mark.slow

IDENTIFIED = {"identifier": "DEUTDEFF"}


def _serve(db_url: str, **env: str) -> tuple[subprocess.Popen, str]:
    return serve_process(db_url, env=env)


def _identify_charges(db_url: str, workspace_id: str) -> int:
    import asyncio

    from sqlalchemy import func, select

    from heddle.billing.models import LedgerEntry
    from heddle.db.base import Database

    async def count():
        db = Database(db_url)
        try:
            async with db.session() as s:
                return await s.scalar(select(func.count()).select_from(LedgerEntry).where(
                    LedgerEntry.workspace_id == workspace_id, LedgerEntry.reason == "identify"))
        finally:
            await db.dispose()

    return asyncio.run(count())


def _send_and_lose(url: str, **kwargs) -> threading.Thread:
    """Send a request whose response will never come (the server dies)."""
    def go():
        try:
            httpx.post(url, timeout=60, **kwargs)
        except httpx.HTTPError:
            pass

    thread = threading.Thread(target=go, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_replay_after_kill_between_commit_and_response(backend, tmp_path, request):
    from support.server import LiveServer
    from support.tenants import make_tenant

    db_url = (f"sqlite+aiosqlite:///{tmp_path / 'kill.db'}" if backend == "sqlite"
              else request.getfixturevalue("pg_database_factory")())
    seed = LiveServer(database_url=db_url).start()  # also runs the migrations
    tenant = make_tenant(seed)
    agent = tenant.add_agent(SCRIPTED_AGENT)
    with seed.client() as http:
        h = tenant.headers("web:kill")
        thread = open_thread(http, h, agent)
    seed.stop()

    message_key, identify_key = f"m-{uuid.uuid4()}", f"i-{uuid.uuid4()}"
    proc, base = _serve(db_url, HEDDLE_FAULT_PAUSE_AFTER_COMMIT_S="60")
    try:
        lost = [
            _send_and_lose(f"{base}/v1/loom/threads/{thread}/messages", json={"content": "only once"},
                           headers={**h, "Idempotency-Key": message_key}),
            _send_and_lose(f"{base}/v1/identify", json=IDENTIFIED,
                           headers={**tenant.headers(None), "Idempotency-Key": identify_key}),
        ]
        # Wait until both are committed (the paused server still answers reads).
        with httpx.Client(base_url=base, timeout=10) as http:
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                items = http.get(f"/v1/loom/threads/{thread}/messages", headers=h).json()["data"]["items"]
                balance = http.get("/v1/workspace", headers=tenant.headers(None)).json()["data"]["balance_credits"]
                if items and balance == 99:
                    break
                time.sleep(0.05)
            assert [m["content"] for m in items] == ["only once"] and balance == 99
        committed_message_id = items[0]["id"]
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        for t in lost:
            t.join(10)
    finally:
        if proc.poll() is None:
            proc.kill()

    proc, base = _serve(db_url)  # a new process, on a port of its own
    try:
        with httpx.Client(base_url=base, timeout=10) as http:
            again = http.post(f"/v1/loom/threads/{thread}/messages", json={"content": "only once"},
                              headers={**h, "Idempotency-Key": message_key})
            assert again.status_code == 202 and again.headers["idempotent-replayed"] == "true", again.text
            assert again.json()["data"]["message_id"] == committed_message_id
            items = http.get(f"/v1/loom/threads/{thread}/messages", headers=h).json()["data"]["items"]
            assert [m["content"] for m in items if m["role"] == "user"] == ["only once"]

            paid = http.post("/v1/identify", json=IDENTIFIED, headers={**tenant.headers(None),
                                                                      "Idempotency-Key": identify_key})
            assert paid.status_code == 200 and paid.headers["idempotent-replayed"] == "true", paid.text
            assert paid.json()["data"]["result"] == "identified"
        # Charged once, by the request whose client never heard back (the recovered run's own
        # model turns are charged too, so count the Identify rows rather than the balance).
        assert _identify_charges(db_url, tenant.workspace_id) == 1
    finally:
        proc.terminate()
        proc.wait(10)
