"""Several processes starting at once on one empty PostgreSQL database all come up."""

from __future__ import annotations

import asyncio
import subprocess

import pytest
from sqlalchemy import text

from heddle.db.base import create_engine
from heddle.db.migrate import upgrade
from support.processes import bound_port, spawn, wait_healthy

pytestmark = pytest.mark.postgres


@pytest.mark.slow
def test_four_servers_started_at_once_on_an_empty_database_all_come_up(pg_url):
    env = {"HEDDLE_DATABASE_URL": pg_url, "HEDDLE_LOG_LEVEL": "WARNING"}
    started = [spawn(["serve"], env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for _ in range(4)]
    procs = [proc for proc, _ in started]
    try:
        for proc, port_file in started:  # all four start at once; each is waited for in turn

            def output(proc=proc) -> str:
                proc.wait(10)
                return proc.stderr.read().decode()

            # 180 s: four interpreters importing at once on a small machine
            wait_healthy(proc, bound_port(proc, port_file, output, 180), output, 180)
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
