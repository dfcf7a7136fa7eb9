"""Failed authentication is rate limited per client address (HEDDLE_RATE_LIMIT_AUTH_FAILURES):
past the budget an address gets 429 before any credential is looked at; other addresses and
the budget's own window are unaffected. Over real loopback sockets from 127.0.0.x sources."""

from __future__ import annotations

import httpx
import pytest

from support.server import LiveServer
from support.tenants import make_tenant

BUDGET = 5


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    server = LiveServer(database_url=f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('db') / 'h.db'}",
                        rate_limit_auth_failures=f"{BUDGET}/minute").start()
    yield server
    server.stop()


def _client(live, source: str) -> httpx.Client:
    return httpx.Client(base_url=live.base_url, timeout=10,
                        transport=httpx.HTTPTransport(local_address=source))


def test_an_address_past_its_failed_authentications_gets_429_even_with_a_good_key(live):
    tenant = make_tenant(live)
    good = {"Authorization": f"Bearer {tenant.secret}"}
    with _client(live, "127.0.0.60") as http:
        assert http.get("/v1/workspace", headers=good).status_code == 200  # successes are not counted
        for n in range(BUDGET):
            bad = http.get("/v1/workspace", headers={"Authorization": f"Bearer sk_live_guess{n}"})
            assert bad.status_code == 401, bad.text
        refused = http.get("/v1/workspace", headers=good)
        assert refused.status_code == 429
        error = refused.json()["error"]
        assert error["code"] == "rate_limited" and error["details"]["scope"] == "auth_failures"
        assert int(refused.headers["retry-after"]) >= 1
        # Loom routes share the budget
        loom = http.get("/v1/loom/threads", headers={**good, "Service-Subject": "web:a"})
        assert loom.status_code == 429
    with _client(live, "127.0.0.61") as other:
        assert other.get("/v1/workspace", headers=good).status_code == 200


def test_loom_and_console_failures_count_too(live):
    with _client(live, "127.0.0.62") as http:
        for n in range(BUDGET - 1):
            r = http.get("/v1/loom/threads", headers={"Authorization": f"Bearer sk_live_x{n}",
                                                      "Service-Subject": "web:a"})
            assert r.status_code == 401
        # a cookie naming no session is a failed sign-in; no cookie at all is not
        assert http.get("/console/api/me").status_code == 401
        assert http.get("/console/api/me", headers={"Cookie": "heddle_console=forged"}).status_code == 401
        assert http.get("/v1/workspace", headers={"Authorization": "Bearer sk_live_y"}).status_code == 429
        assert http.get("/console/api/me", headers={"Cookie": "heddle_console=forged2"}).status_code == 429
