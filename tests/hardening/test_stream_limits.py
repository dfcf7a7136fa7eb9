"""Open run event streams are capped per API key and per subject (heddle/loom/stream_limits.py):
429 `rate_limited` past a cap, the slot back as soon as a stream's client leaves."""

from __future__ import annotations

import contextlib
import time

import httpx
import pytest

from support.loom import SCRIPTED_AGENT, open_thread, post, wait_run
from support.server import LiveServer
from support.tenants import make_tenant

PER_KEY, PER_SUBJECT = 4, 2


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    server = LiveServer(database_url=f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('db') / 'h.db'}",
                        sse_max_streams_per_key=PER_KEY, sse_max_streams_per_subject=PER_SUBJECT,
                        sse_heartbeat_seconds=0.2).start()
    yield server
    server.stop()


def _waiting_run(http, tenant, subject: str) -> str:
    """A run that stays open (awaiting_input), so its event stream does not end by itself."""
    h = tenant.headers(subject)
    run_id = post(http, h, open_thread(http, h, tenant.add_agent(SCRIPTED_AGENT)), "ask: Which one?")["run_id"]
    assert wait_run(http, h, run_id)["state"] == "awaiting_input"
    return run_id


_LINES: list = []  # the streams' line readers: a reader dropped half-way closes its response


def _open(stack: contextlib.ExitStack, http: httpx.Client, run_id: str, headers: dict) -> httpx.Response:
    response = stack.enter_context(http.stream("GET", f"/v1/loom/runs/{run_id}/events", headers=headers))
    if response.status_code == 200:
        lines = response.iter_lines()
        _LINES.append(lines)
        next(lines)  # the stream is open on the server (its `retry:` line came)
    else:
        response.read()
    return response


def test_streams_over_the_subject_and_key_caps_are_429_until_one_closes(live):
    tenant, other = make_tenant(live), make_tenant(live)
    limits = httpx.Limits(max_connections=50, max_keepalive_connections=0)
    with httpx.Client(base_url=live.base_url, timeout=10, limits=limits) as http:
        runs = {s: _waiting_run(http, tenant, s) for s in ("web:a", "web:b", "web:c")}
        with contextlib.ExitStack() as stack:
            held_a = [_open(stack, http, runs["web:a"], tenant.headers("web:a")) for _ in range(PER_SUBJECT)]
            assert all(r.status_code == 200 for r in held_a)
            refused = _open(stack, http, runs["web:a"], tenant.headers("web:a"))
            assert refused.status_code == 429 and refused.headers["retry-after"] == "5"
            error = refused.json()["error"]
            assert error["code"] == "rate_limited" and error["details"]["scope"] == "streams_per_subject"

            for _ in range(PER_KEY - PER_SUBJECT):
                assert _open(stack, http, runs["web:b"], tenant.headers("web:b")).status_code == 200
            refused = _open(stack, http, runs["web:c"], tenant.headers("web:c"))
            assert refused.status_code == 429
            assert refused.json()["error"]["details"]["scope"] == "streams_per_key"

            # another workspace's key has its own caps, and its plain requests are served as ever
            other_run = _waiting_run(http, other, "web:a")
            assert _open(stack, http, other_run, other.headers("web:a")).status_code == 200
            assert http.get(f"/v1/loom/runs/{other_run}", headers=other.headers("web:a")).status_code == 200

            held_a[0].close()  # the client leaves: its slot comes back
            deadline = time.monotonic() + 5
            while True:
                again = _open(stack, http, runs["web:c"], tenant.headers("web:c"))
                if again.status_code == 200 or time.monotonic() > deadline:
                    break
                time.sleep(0.1)
            assert again.status_code == 200
        metrics = http.get("/metrics").text
    assert 'heddle_event_streams_refused_total{limit="streams_per_subject"}' in metrics
    assert 'heddle_event_streams_refused_total{limit="streams_per_key"}' in metrics
    # every stream closed: the gauge is back to zero
    deadline = time.monotonic() + 5
    while "heddle_event_streams_open 0.0" not in metrics and time.monotonic() < deadline:
        time.sleep(0.1)
        metrics = httpx.get(f"{live.base_url}/metrics").text
    assert "heddle_event_streams_open 0.0" in metrics
    _LINES.clear()
