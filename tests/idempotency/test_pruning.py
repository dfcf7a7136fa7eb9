"""Keys expire: the background pruner deletes them and the key runs anew (short TTL here)."""

from __future__ import annotations

import time

from sqlalchemy import func, select

from heddle.idempotency.models import IdempotencyRecord

# 0.0005 h = 1.8 s; pruned every 0.2 s.
SERVER_SETTINGS = {"idempotency_ttl_hours": 0.0005, "idempotency_prune_interval_s": 0.2}


def stored(tenant) -> int:
    return tenant.run(lambda s: s.scalar(select(func.count()).select_from(IdempotencyRecord).where(
        IdempotencyRecord.workspace_id == tenant.workspace_id)))


def test_expired_keys_are_pruned_in_the_background(http, tenant):
    h = {**tenant.headers(None), "Idempotency-Key": "short-lived"}
    first = http.post("/v1/identify", json={"identifier": "DEUTDEFF"}, headers=h)
    assert first.status_code == 200 and stored(tenant) == 1
    assert http.post("/v1/identify", json={"identifier": "DEUTDEFF"}, headers=h).headers["idempotent-replayed"]
    deadline = time.monotonic() + 15
    while stored(tenant) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert stored(tenant) == 0
    again = http.post("/v1/identify", json={"identifier": "DEUTDEFF"}, headers=h)
    assert again.status_code == 200 and "idempotent-replayed" not in again.headers  # a new call, billed
    assert tenant.balance_micro() == 98_000_000
