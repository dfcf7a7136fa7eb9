"""Fixtures shared by every test package.

PostgreSQL tests talk to the real local server: each test session creates its own database
(`heddle_t_<random>`) and drops it at the end, so parallel sessions never collide.
Set HEDDLE_TEST_PG_URL to point somewhere else, or HEDDLE_TEST_PG=0 to skip them.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import socket

import pytest

PG_ADMIN_URL = os.environ.get("HEDDLE_TEST_PG_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/test")


def _pg_available() -> bool:
    if os.environ.get("HEDDLE_TEST_PG") == "0":
        return False
    try:
        with socket.create_connection(("127.0.0.1", 5432), timeout=1):
            return True
    except OSError:
        return False


async def _pg_admin(sql: str) -> None:
    import asyncpg

    dsn = PG_ADMIN_URL.replace("postgresql+asyncpg://", "postgresql://")
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


@pytest.fixture(scope="session")
def pg_database_factory():
    """Call it to get the URL of a new, empty PostgreSQL database; all are dropped at the end."""
    if not _pg_available():
        if os.environ.get("CI") and os.environ.get("HEDDLE_TEST_PG") != "0":  # not left out on purpose
            pytest.fail("PostgreSQL is required in CI but 127.0.0.1:5432 is not reachable")
        pytest.skip("PostgreSQL not reachable on 127.0.0.1:5432")
    created: list[str] = []
    base = PG_ADMIN_URL.rsplit("/", 1)[0]

    def make() -> str:
        name = f"heddle_t_{secrets.token_hex(6)}"
        asyncio.run(_pg_admin(f'CREATE DATABASE "{name}"'))
        created.append(name)
        return f"{base}/{name}"

    yield make
    for name in created:
        asyncio.run(_pg_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture
def pg_url(pg_database_factory):
    """A fresh, empty PostgreSQL database for this test."""
    return pg_database_factory()


@pytest.fixture
def sqlite_url(tmp_path):
    return f"sqlite+aiosqlite:///{tmp_path / 'heddle.db'}"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request, tmp_path):
    """Each test using this runs twice: on a fresh SQLite file and on PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'heddle.db'}"
    return request.getfixturevalue("pg_url")


@pytest.fixture(scope="module", params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def server(request, tmp_path_factory):
    """A real Heddle server on a loopback port, once per test module and database backend."""
    from support.server import LiveServer

    if request.param == "sqlite":
        url = f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('db') / 'heddle.db'}"
    else:
        url = request.getfixturevalue("pg_database_factory")()
    overrides = getattr(request.module, "SERVER_SETTINGS", {})
    live = LiveServer(database_url=url, **overrides).start()
    yield live
    live.stop()


@pytest.fixture
def tenant(server):
    """A fresh workspace with 100 credits and a live key, on the module's server."""
    from support.tenants import make_tenant

    return make_tenant(server)


@pytest.fixture
def http(server):
    with server.client() as client:
        yield client
