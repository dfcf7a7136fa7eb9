"""Where the counters live: Redis shares them between server processes; memory does not; a
storage that is down lets requests through rather than failing them."""

from __future__ import annotations

import socket

import pytest

from support.server import LiveServer
from support.tenants import make_tenant

REDIS = ("127.0.0.1", 6379)


def _redis_up() -> bool:
    try:
        with socket.create_connection(REDIS, timeout=1):
            return True
    except OSError:
        return False


def _two_servers(sqlite_url: str, storage: str) -> tuple[LiveServer, LiveServer]:
    settings = {"database_url": sqlite_url, "rate_limit_per_key": "4/10second", "rate_limit_storage": storage}
    return LiveServer(**settings).start(), LiveServer(**settings).start()


def _statuses(a: LiveServer, b: LiveServer, headers: dict) -> list[int]:
    with a.client() as ca, b.client() as cb:
        return [(ca if i % 2 == 0 else cb).get("/v1/workspace", headers=headers).status_code for i in range(6)]


@pytest.mark.skipif(not _redis_up(), reason="Redis not reachable on 127.0.0.1:6379")
def test_redis_storage_shares_the_bucket_between_servers(sqlite_url):
    a, b = _two_servers(sqlite_url, "redis://127.0.0.1:6379/0")
    try:
        tenant = make_tenant(a)
        assert _statuses(a, b, tenant.headers(None)) == [200, 200, 200, 200, 429, 429]
    finally:
        a.stop()
        b.stop()


def test_memory_storage_counts_per_process(sqlite_url):
    a, b = _two_servers(sqlite_url, "memory://")
    try:
        tenant = make_tenant(a)
        assert _statuses(a, b, tenant.headers(None)) == [200] * 6  # 3 each, under 4 per process
    finally:
        a.stop()
        b.stop()


def test_storage_down_lets_requests_through(sqlite_url):
    from support.net import free_port

    dead = LiveServer(database_url=sqlite_url, rate_limit_per_key="1/10second",
                      rate_limit_storage=f"redis://127.0.0.1:{free_port()}/0").start()
    try:
        tenant = make_tenant(dead)
        with dead.client() as c:
            assert [c.get("/v1/workspace", headers=tenant.headers(None)).status_code for _ in range(3)] == [200] * 3
    finally:
        dead.stop()
