"""Many concurrent identify calls never exhaust the connection pool (a past deadlock)."""

from __future__ import annotations

import asyncio

import httpx

from heddle.money import MICRO


async def test_concurrent_identify_calls_complete_and_bill_exactly(server, tenant):
    async with httpx.AsyncClient(base_url=server.base_url, timeout=20,
                                 limits=httpx.Limits(max_connections=40)) as client:
        async def one():
            resp = await client.post("/v1/identify", json={"identifier": "DEUTDEFF"},
                                     headers=tenant.headers(subject=None))
            return resp.status_code

        before = tenant.balance_micro()
        statuses = await asyncio.gather(*[one() for _ in range(40)])
    assert statuses == [200] * 40
    assert before - tenant.balance_micro() == 40 * MICRO and tenant.balance_micro() == tenant.ledger_sum()
