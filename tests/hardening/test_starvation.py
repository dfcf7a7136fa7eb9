"""No request waits on another client's slowness (issue 15, part 1).

Before the fix, 16 sockets (31 on PostgreSQL) that sent half a body to the realtime auth
endpoint held every pooled connection and made every other request wait 30 s, then fail; a
workspace whose JWKS URI answered slowly held connections for its whole fetch.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from direct.direct_testkit import JwksServer, make_signing_key, sign
from hardening.abuse_kit import half_sent, p50, timed
from support.loom import SCRIPTED_AGENT, open_thread
from support.tenants import make_tenant

pytestmark = pytest.mark.slow

# A short body timeout is not wanted here: the attack must still be in progress while measured.
SERVER_SETTINGS = {"body_timeout": 60.0, "jwks_fetch_timeout": 8.0}
HOLD = 64


def _normal_calls(http, victim, agent, thread_id):
    """What other clients keep doing: reads, writes, Identify, realtime auth of their own."""
    h = victim.headers()
    return [
        lambda: http.get("/v1/workspace", headers={"Authorization": h["Authorization"]}),
        lambda: http.post("/v1/loom/threads", json={"agent": agent}, headers=h),
        lambda: http.get("/v1/loom/threads", headers=h),
        lambda: http.post("/v1/identify", json={"identifier": "DEUTDEFF"},
                          headers={"Authorization": h["Authorization"]}),
        lambda: http.post("/v1/loom/realtime/auth", headers=h,
                          json={"socket_id": "123.456", "channel_name": f"private-thread-{thread_id}"}),
    ]


def test_half_sent_bodies_do_not_starve_other_requests(server, tenant):
    attacker_agent = tenant.add_agent(SCRIPTED_AGENT)
    victim = make_tenant(server)
    agent = victim.add_agent(SCRIPTED_AGENT)
    with server.client() as http:
        thread_id = open_thread(http, victim.headers(), agent)
        attacker_thread = open_thread(http, tenant.headers(), attacker_agent)
        calls = _normal_calls(http, victim, agent, thread_id)
        timed(calls, 2)  # warm up
        baseline, base_status = timed(calls, 6)
        # Most on the realtime auth route (it used to check a connection out before reading
        # its body), the rest on every other body-taking route.
        targets = ["/v1/loom/realtime/auth"] * 40 + ["/v1/loom/threads"] * 8 + [
            f"/v1/loom/threads/{attacker_thread}/messages"] * 8 + ["/v1/identify"] * 8
        assert len(targets) == HOLD
        auth = tenant.headers()
        sockets = [half_sent(server.port, path, auth) for path in targets]
        try:
            time.sleep(0.5)  # every held request has reached the server and is waiting
            attacked, attacked_status = timed(calls, 6)
            # The held connections are still open and unanswered.
            for sock in sockets[:4]:
                sock.setblocking(False)
                with pytest.raises(BlockingIOError):
                    sock.recv(1)
        finally:
            for sock in sockets:
                sock.close()
    assert base_status == attacked_status == [200, 200, 200, 200, 200] * 6
    # Generous, relative to this run's own baseline: a starved pool meant 30 s and a 500.
    bound = max(1.0, 20 * p50(baseline))
    assert max(attacked) < bound, (p50(baseline), p50(attacked), max(attacked))
    assert p50(attacked) < max(0.25, 5 * p50(baseline)), (p50(baseline), p50(attacked))


def _direct_tenant(server, jwks: JwksServer, key, path: str):
    t = make_tenant(server)
    t.update(jwks_uri=jwks.publish(key.jwk, path=path))
    return t


def _token(t, key, sub: str) -> str:
    now = int(time.time())
    return sign(key, {"iss": t.key_id, "sub": sub, "aud": ["service"], "iat": now, "exp": now + 600})


def test_a_slow_jwks_uri_does_not_slow_other_workspaces(server):
    key = make_signing_key("ES256", "es256-starve")
    fast_jwks, slow_jwks = JwksServer(), JwksServer()
    fast = _direct_tenant(server, fast_jwks, key, "/fast.json")
    slow = _direct_tenant(server, slow_jwks, key, "/slow.json")
    fast_h = {"Authorization": f"Bearer {_token(fast, key, 'u_fast')}"}
    with server.client() as http:
        calls = [lambda: http.get("/v1/loom/threads", headers=fast_h),
                 lambda: http.get("/v1/loom/realtime/config", headers=fast_h)]
        timed(calls, 3)  # the fast workspace's JWKS is cached now
        baseline, base_status = timed(calls, 10)
        slow_jwks.state.delay = 4.0  # each fetch of the slow workspace's JWKS takes 4 s
        # Many distinct tokens (distinct subjects) of the slow workspace, more than the pool.
        slow_tokens = [_token(slow, key, f"u_{i}") for i in range(48)]
        with ThreadPoolExecutor(48) as pool, server.client(timeout=30) as slow_http:
            started = time.perf_counter()
            pending = [pool.submit(slow_http.get, "/v1/loom/threads",
                                   headers={"Authorization": f"Bearer {t}"}) for t in slow_tokens]
            time.sleep(0.5)  # they are all waiting for the slow JWKS now
            during, during_status = timed(calls, 10)
            slow_statuses = [f.result().status_code for f in pending]
            slow_took = time.perf_counter() - started
    assert base_status == during_status == [200, 200] * 10
    assert slow_statuses == [200] * 48  # the slow workspace gets its answer once its JWKS comes
    assert slow_took >= 3.5  # the slow JWKS really was slow while the others were measured
    assert max(during) < max(1.0, 20 * p50(baseline)), (p50(baseline), p50(during), max(during))
    assert slow_jwks.hits("/slow.json") == 1  # one fetch shared by all 48 requests
