"""Nothing a client sends grows without bound (issue 15, part 3): metric labels come from route
templates, unauthenticated calls leave no request-log row, and old rows are pruned."""

from __future__ import annotations

import datetime as dt
import random
import string
import time

import pytest
from sqlalchemy import func, select

from heddle.db.base import utcnow
from heddle.observability.models import RequestLogEntry

pytestmark = pytest.mark.slow
SERVER_SETTINGS = {"request_log_retention_days": 1, "request_log_prune_interval": 0.3}


def _metric_lines(http) -> list[str]:
    text = http.get("/metrics").text
    return [line for line in text.splitlines() if line and not line.startswith("#")]


def _noise(rng: random.Random) -> str:
    return "".join(rng.choices(string.ascii_letters + string.digits, k=12))


def _request_log_rows(server) -> int:
    async def count():
        async with server.services.database().session() as s:
            return await s.scalar(select(func.count()).select_from(RequestLogEntry))

    server.flush_request_log()
    return server.call(count())


def _unmatched_burst(http, rng: random.Random, n: int) -> None:
    for i in range(n):
        kind = i % 4
        if kind == 0:
            resp = http.get(f"/v1/x{_noise(rng)}")
        elif kind == 1:  # a wrong content type: refused before routing
            resp = http.post(f"/v1/x{_noise(rng)}", content=b"a=b", headers={"Content-Type": "text/plain"})
        elif kind == 2:
            resp = http.request(f"M{_noise(rng).upper()}", f"/{_noise(rng)}/{_noise(rng)}")
        else:
            resp = http.get(f"/v1/loom/runs/{_noise(rng)}/{_noise(rng)}?{_noise(rng)}=1")
        assert resp.status_code in (404, 405, 415, 400), resp.status_code


def test_random_unmatched_paths_leave_metrics_the_same_size(server):
    rng = random.Random(15)
    with server.client() as http:
        _unmatched_burst(http, rng, 40)  # every kind of label set exists once
        _metric_lines(http)  # and /metrics' own series
        rows_before = _request_log_rows(server)
        before = _metric_lines(http)
        _unmatched_burst(http, rng, 10_000)
        after = _metric_lines(http)
        rows_after = _request_log_rows(server)
    assert len(after) == len(before)
    # The same series: only the counts and sums changed.
    assert [line.rsplit(" ", 1)[0] for line in after] == [line.rsplit(" ", 1)[0] for line in before]
    assert abs(len("\n".join(after)) - len("\n".join(before))) < 400
    assert all("/v1/x" not in line for line in after)
    assert rows_after == rows_before  # unauthenticated calls are not written to the request log


def test_authenticated_calls_are_logged_and_labelled_by_route(server, tenant):
    with server.client() as http:
        before = _request_log_rows(server)
        for _ in range(3):
            assert http.get("/v1/workspace", headers=tenant.headers()).status_code == 200
        assert http.get("/v1/loom/runs/not-a-uuid", headers=tenant.headers()).status_code == 404
        lines = _metric_lines(http)
    assert _request_log_rows(server) == before + 4
    assert any('route="/v1/loom/runs/{run_id}"' in line and 'status="404"' in line for line in lines)


def test_old_request_log_rows_are_pruned_in_the_background(server, tenant):
    async def seed():
        async with server.services.database().transaction() as s:
            for age_days in (3, 2, 1.5):
                s.add(RequestLogEntry(request_id=f"old{age_days}", method="GET", path="/v1/workspace", status=200,
                                      latency_ms=1.0, workspace_id=tenant.workspace_id,
                                      created_at=utcnow() - dt.timedelta(days=age_days)))
            s.add(RequestLogEntry(request_id="recent", method="GET", path="/v1/workspace", status=200,
                                  latency_ms=1.0, workspace_id=tenant.workspace_id,
                                  created_at=utcnow() - dt.timedelta(hours=20)))

    async def ids():
        async with server.services.database().session() as s:
            return set(await s.scalars(select(RequestLogEntry.request_id).where(
                RequestLogEntry.workspace_id == tenant.workspace_id)))

    server.call(seed())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and ids_left(server, ids) & {"old3", "old2", "old1.5"}:
        time.sleep(0.1)
    assert server.call(ids()) == {"recent"}


def ids_left(server, ids) -> set[str]:
    return server.call(ids())


def test_pruning_goes_in_batches_until_nothing_old_is_left(server, tenant):
    from heddle.observability.retention import RequestLogPruner

    async def seed_and_prune():
        db = server.services.database()
        # 13-19 hours old: younger than the background pruner's 1 day (it must not race us),
        # older than this pruner's 12 hours.
        async with db.transaction() as s:
            for i in range(7):
                s.add(RequestLogEntry(request_id=f"b{i}", method="GET", path="/v1/workspace", status=200,
                                      latency_ms=1.0, workspace_id=tenant.workspace_id,
                                      created_at=utcnow() - dt.timedelta(hours=13 + i)))
        pruner = RequestLogPruner(db, retention_days=0.5, interval=3600, batch_size=2)
        deleted = await pruner.prune()
        async with db.session() as s:
            left = set(await s.scalars(select(RequestLogEntry.request_id).where(
                RequestLogEntry.workspace_id == tenant.workspace_id)))
        return deleted, left

    deleted, left = server.call(seed_and_prune())
    assert deleted >= 7  # four batches of at most 2
    assert not left & {f"b{i}" for i in range(7)}
