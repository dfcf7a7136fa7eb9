"""`GET /mcp` streams (issue 40, reproduction 2): counted with the run event streams, capped per
key and per address (429, another workspace still served), ended within seconds of the key's
revocation, and never older than their maximum lifetime (heddle/mcp_server/streams.py)."""

from __future__ import annotations

import contextlib
import time

import httpx
import pytest

from heddle.workspaces import service as ws_service
from support.loom import SCRIPTED_AGENT, open_thread, post, wait_run
from support.server import LiveServer
from support.tenants import make_tenant

PER_KEY, PER_ADDRESS, CHECK, LIFETIME = 3, 5, 0.5, 4.0
SSE = {"Accept": "text/event-stream"}


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    server = LiveServer(database_url=f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('db') / 'h.db'}",
                        sse_max_streams_per_key=PER_KEY, sse_max_streams_per_subject=PER_KEY,
                        sse_max_streams_per_address=PER_ADDRESS, mcp_stream_check_seconds=CHECK,
                        mcp_stream_max_seconds=LIFETIME, sse_heartbeat_seconds=0.2).start()
    yield server
    server.stop()


def _open(stack: contextlib.ExitStack, http: httpx.Client, secret: str) -> httpx.Response:
    response = stack.enter_context(http.stream("GET", "/mcp", headers={"Authorization": f"Bearer {secret}", **SSE}))
    if response.status_code != 200:
        response.read()
    return response


def _ends_within(response: httpx.Response, seconds: float) -> float:
    """Read the stream to its end; how long that took (fails past `seconds`)."""
    started = time.monotonic()
    for _ in response.iter_bytes():
        assert time.monotonic() - started < seconds, "the stream is still open"
    return time.monotonic() - started


def _client(live: LiveServer) -> httpx.Client:
    limits = httpx.Limits(max_connections=50, max_keepalive_connections=0)
    return httpx.Client(base_url=live.base_url, timeout=httpx.Timeout(10, read=LIFETIME + 5), limits=limits)


def test_mcp_streams_are_counted_with_event_streams_and_capped_per_key(live):
    tenant, other = make_tenant(live), make_tenant(live)
    with _client(live) as http, contextlib.ExitStack() as stack:
        # A run event stream of the key counts against the same cap.
        h = tenant.headers("web:a")
        run_id = post(http, h, open_thread(http, h, tenant.add_agent(SCRIPTED_AGENT)), "ask: Which one?")["run_id"]
        assert wait_run(http, h, run_id)["state"] == "awaiting_input"
        events = stack.enter_context(http.stream("GET", f"/v1/loom/runs/{run_id}/events", headers=h))
        assert events.status_code == 200
        held = [_open(stack, http, tenant.secret) for _ in range(PER_KEY - 1)]
        assert [r.status_code for r in held] == [200] * (PER_KEY - 1)
        refused = _open(stack, http, tenant.secret)
        assert refused.status_code == 429 and refused.headers["retry-after"] == "5"
        assert refused.json()["error"]["details"]["scope"] == "streams_per_key"
        # Another workspace's stream and its plain requests are served.
        assert _open(stack, http, other.secret).status_code == 200
        assert http.get("/v1/workspace", headers={"Authorization": f"Bearer {other.secret}"}).status_code == 200
        metrics = http.get("/metrics").text
        assert 'heddle_event_streams_refused_total{limit="streams_per_key"}' in metrics


def test_mcp_streams_are_capped_per_address(live):
    tenants = [make_tenant(live) for _ in range(3)]
    with _client(live) as http, contextlib.ExitStack() as stack:
        answered = [_open(stack, http, t.secret).status_code for t in tenants for _ in range(2)]
        assert answered == [200] * PER_ADDRESS + [429]


def test_a_revoked_keys_stream_ends_within_seconds(live):
    tenant = make_tenant(live)
    with _client(live) as http, contextlib.ExitStack() as stack:
        stream = _open(stack, http, tenant.secret)
        assert stream.status_code == 200
        tenant.run(lambda s: ws_service.revoke_key(s, tenant.key_id))
        assert _ends_within(stream, CHECK * 4) < CHECK * 4
        assert _open(stack, http, tenant.secret).status_code == 401


def test_a_stream_ends_at_its_maximum_lifetime_and_gives_its_slot_back(live):
    tenant = make_tenant(live)
    with _client(live) as http, contextlib.ExitStack() as stack:
        streams = [_open(stack, http, tenant.secret) for _ in range(PER_KEY)]
        assert [s.status_code for s in streams] == [200] * PER_KEY
        took = _ends_within(streams[0], LIFETIME + 3)
        assert LIFETIME - 1.5 < took < LIFETIME + 3
        for s in streams[1:]:
            _ends_within(s, 3)
        assert _open(stack, http, tenant.secret).status_code == 200


def test_streams_in_all_stay_under_the_connection_cap_so_other_workspaces_are_served(tmp_path):
    """The issue's 300 streams of one key under HEDDLE_MAX_CONNECTIONS=300, scaled down: streams
    in all are capped at half the connections, and another workspace's requests still answer."""
    server = LiveServer(database_url=f"sqlite+aiosqlite:///{tmp_path / 'h.db'}", max_connections=24,
                        max_connections_per_address=24, sse_max_streams_per_key=100).start()
    try:
        attacker, victim = make_tenant(server), make_tenant(server)
        with _client(server) as http, contextlib.ExitStack() as stack:
            answered = [_open(stack, http, attacker.secret).status_code for _ in range(16)]
            assert answered == [200] * 12 + [429] * 4
            refused = _open(stack, http, attacker.secret)
            assert refused.json()["error"]["details"]["scope"] == "streams_total"
            key = {"Authorization": f"Bearer {victim.secret}"}
            assert http.get("/v1/workspace", headers=key).status_code == 200
            assert http.post("/v1/identify", headers=key, json={"identifier": "DEUTDEFF"}).status_code == 200
    finally:
        server.stop()
