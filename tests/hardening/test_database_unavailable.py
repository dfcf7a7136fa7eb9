"""A database that refuses connections is a 503 `service_unavailable` with Retry-After (the caller
may retry), not a 500 `internal_error`: the real app, on a real PostgreSQL role whose
connection limit is used up by the time the request needs one."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest
import sqlalchemy.exc as sa_exc

from heddle.api.errors import database_unreachable

pytestmark = pytest.mark.postgres


def test_what_counts_as_an_unreachable_database():
    refused = sa_exc.DBAPIError(None, None, OSError("sorry, too many clients already"))
    assert database_unreachable(refused)  # no statement: the connect itself failed
    assert database_unreachable(sa_exc.TimeoutError("QueuePool limit of size 10 overflow 20 reached"))
    failed_query = sa_exc.DBAPIError("SELECT 1", {}, ValueError("division by zero"))
    assert not database_unreachable(failed_query)
    assert not database_unreachable(ValueError("a bug"))


def test_a_request_when_postgres_refuses_connections_is_503_with_retry_after(pg_database_factory):
    from support.server import LiveServer
    from support.tenants import make_tenant

    url = pg_database_factory()
    dsn = url.replace("postgresql+asyncpg", "postgresql")
    admin, name = dsn.rsplit("/", 1)[0] + "/postgres", dsn.rsplit("/", 1)[1]

    async def allow_connections(allowed: bool) -> None:
        conn = await asyncpg.connect(admin)
        try:
            await conn.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS {str(allowed).lower()}')
            if not allowed:  # end the server's pooled sessions too: it must ask for new ones
                await conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1", name)
        finally:
            await conn.close()

    live = LiveServer(database_url=url, db_pool_size=1, db_max_overflow=0).start()
    try:
        headers = make_tenant(live).headers("web:x")
        with live.client() as http:
            assert http.get("/v1/workspace", headers=headers).status_code == 200
            asyncio.run(allow_connections(False))
            resp = http.get("/v1/workspace", headers=headers)
        assert resp.status_code == 503, resp.text
        assert resp.json()["error"]["code"] == "service_unavailable"
        assert resp.headers["Retry-After"] == "1"
    finally:
        asyncio.run(allow_connections(True))
        live.stop()
