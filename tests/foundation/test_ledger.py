"""The credits ledger under concurrent charges, on SQLite and on PostgreSQL."""

from __future__ import annotations

import asyncio

import pytest

from heddle.billing import service as billing
from heddle.db.base import Database
from heddle.db.migrate import upgrade
from heddle.money import MICRO, to_credits, to_micro
from heddle.workspaces import service as ws_service


async def _setup(url: str, credits: int) -> tuple[Database, str]:
    await upgrade(url)
    db = Database(url)
    async with db.transaction() as s:
        ws = await ws_service.create_workspace(s, "ledger", credits)
    return db, ws.id


async def _try_charge(db: Database, ws_id: str, amount: int) -> bool:
    try:
        async with db.transaction() as s:
            await billing.charge(s, ws_id, amount, reason="identify", ref="t")
        return True
    except billing.InsufficientCredits:
        return False


async def test_concurrent_charges_never_overdraw(db_url):
    db, ws_id = await _setup(db_url, 20)
    try:
        results = await asyncio.gather(*[_try_charge(db, ws_id, MICRO) for _ in range(50)])
        assert sum(results) == 20
        async with db.session() as s:
            assert await billing.balance_micro(s, ws_id) == 0
            assert await billing.ledger_sum(s, ws_id) == 0
            entries = await billing.recent_entries(s, ws_id, limit=100)
        assert len([e for e in entries if e.kind == "charge"]) == 20
        assert all(e.balance_after_micro >= 0 for e in entries)
    finally:
        await db.dispose()


async def test_concurrent_grants_and_charges_keep_balance_equal_to_ledger(db_url):
    db, ws_id = await _setup(db_url, 5)

    async def grant():
        async with db.transaction() as s:
            await billing.grant(s, ws_id, MICRO // 2)

    try:
        work = [_try_charge(db, ws_id, 3 * MICRO // 4) for _ in range(30)] + [grant() for _ in range(10)]
        await asyncio.gather(*work)
        async with db.session() as s:
            balance = await billing.balance_micro(s, ws_id)
            assert balance >= 0 and balance == await billing.ledger_sum(s, ws_id)
    finally:
        await db.dispose()


async def test_charge_rolls_back_with_its_transaction(db_url):
    db, ws_id = await _setup(db_url, 3)
    try:
        with pytest.raises(RuntimeError):
            async with db.transaction() as s:
                await billing.charge(s, ws_id, MICRO, reason="identify")
                raise RuntimeError("caller failed after charging")
        async with db.session() as s:
            assert await billing.balance_micro(s, ws_id) == 3 * MICRO == await billing.ledger_sum(s, ws_id)
    finally:
        await db.dispose()


def test_money_conversions():
    assert to_micro(1) == MICRO and to_micro("0.000001") == 1 and to_micro(0.1) == 100_000
    assert to_credits(1_500_000) == 1.5 and to_credits(2 * MICRO) == 2 and isinstance(to_credits(2 * MICRO), int)
    assert to_micro("0.0000005") == 1  # half up
