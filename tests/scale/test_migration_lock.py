"""Several processes starting at once on one empty PostgreSQL database all come up."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time

import httpx
import pytest
from sqlalchemy import text

from heddle.db.base import create_engine
from heddle.db.migrate import upgrade
from support.net import free_port

pytestmark = pytest.mark.postgres


@pytest.mark.slow
def test_four_servers_started_at_once_on_an_empty_database_all_come_up(pg_url):
    ports = [free_port() for _ in range(4)]
    env = {**os.environ, "HEDDLE_DATABASE_URL": pg_url, "HEDDLE_LOG_LEVEL": "WARNING"}
    procs = [subprocess.Popen([sys.executable, "-m", "heddle", "serve", "--port", str(p)], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for p in ports]
    try:
        up: set[int] = set()
        deadline = time.monotonic() + 180  # four interpreters importing at once on a small machine
        while len(up) < 4 and time.monotonic() < deadline:
            for proc, port in zip(procs, ports, strict=True):
                if port in up:
                    continue
                assert proc.poll() is None, proc.stderr.read().decode()[-3000:]
                try:
                    if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                        up.add(port)
                except httpx.HTTPError:
                    pass
            time.sleep(0.2)
        assert len(up) == 4
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()


async def test_concurrent_upgrades_in_one_process_take_turns(pg_url):
    """Eight upgrades on separate connections at once: none fails, the schema ends at head once."""
    engines = [create_engine(pg_url, pool_size=1, max_overflow=0) for _ in range(8)]
    try:
        # Without the lock these race on the same DDL (and can wait on each other for good).
        await asyncio.wait_for(asyncio.gather(*(upgrade(pg_url, engine=e) for e in engines)), 120)
        async with engines[0].connect() as conn:
            versions = (await conn.execute(text("SELECT version_num FROM alembic_version"))).scalars().all()
    finally:
        for e in engines:
            await e.dispose()
    from alembic.script import ScriptDirectory

    from heddle.db.migrate import alembic_config

    assert versions == [ScriptDirectory.from_config(alembic_config(pg_url)).get_current_head()]
