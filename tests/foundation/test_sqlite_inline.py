"""The inline SQLite driver: writers of one process queue without blocking the event loop, and a
writer of another process makes `BEGIN IMMEDIATE` wait with asyncio sleeps, then time out."""

from __future__ import annotations

import asyncio
import sqlite3
import time

import pytest
from sqlalchemy import text
from sqlalchemy.exc import OperationalError
from sqlalchemy.ext.asyncio import create_async_engine

from heddle.db.base import Database
from heddle.db.sqlite_inline import inline_creator


@pytest.fixture
def path(tmp_path):
    p = tmp_path / "inline.db"
    conn = sqlite3.connect(p)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE counter (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)")
    conn.execute("INSERT INTO counter VALUES (1, 0)")
    conn.commit()
    conn.close()
    return p


async def _ticker(stop: asyncio.Event) -> int:
    ticks = 0
    while not stop.is_set():
        await asyncio.sleep(0.005)
        ticks += 1
    return ticks


async def test_writers_of_one_process_queue_and_none_is_lost(path):
    db = Database(f"sqlite+aiosqlite:///{path}")

    async def increment():
        async with db.transaction() as session:
            n = (await session.execute(text("SELECT n FROM counter WHERE id = 1"))).scalar()
            await asyncio.sleep(0)  # another writer gets the loop here, and must wait for us
            await session.execute(text("UPDATE counter SET n = :n WHERE id = 1"), {"n": n + 1})

    try:
        await asyncio.gather(*[increment() for _ in range(60)])
        async with db.session() as session:
            assert (await session.execute(text("SELECT n FROM counter"))).scalar() == 60
    finally:
        await db.dispose()


async def test_another_process_holding_the_lock_makes_begin_wait_without_blocking_the_loop(path):
    db = Database(f"sqlite+aiosqlite:///{path}")
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    stop = asyncio.Event()
    ticker = asyncio.create_task(_ticker(stop))
    loop = asyncio.get_running_loop()
    loop.call_later(0.3, other.execute, "COMMIT")
    try:
        started = time.monotonic()
        async with db.transaction() as session:
            await session.execute(text("UPDATE counter SET n = n + 1"))
        waited = time.monotonic() - started
        stop.set()
        assert waited >= 0.25
        assert await ticker > 20  # the loop kept running while the write waited
    finally:
        stop.set()
        other.close()
        await db.dispose()


async def test_a_lock_held_too_long_times_out_as_database_is_locked(path):
    engine = create_async_engine(f"sqlite+aiosqlite:///{path}",
                                 async_creator=inline_creator(str(path), lock_timeout=0.2))
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(OperationalError, match="locked"):
            async with engine.connect() as conn:
                await conn.exec_driver_sql("BEGIN IMMEDIATE")
        other.execute("COMMIT")
        async with engine.connect() as conn:  # the writer lock was released on the failure
            await conn.exec_driver_sql("BEGIN IMMEDIATE")
            await conn.exec_driver_sql("UPDATE counter SET n = 5")
            await conn.commit()
    finally:
        other.close()
        await engine.dispose()
