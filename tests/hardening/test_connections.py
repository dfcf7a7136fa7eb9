"""Bounded connections over raw loopback sockets (heddle/http_protocol.py, connection_limits.py):
a request head must be complete within HEDDLE_HEAD_TIMEOUT, and open connections are capped in
all and per client address (127.0.0.x: Linux routes the whole 127/8 to loopback, so a test can
be several clients)."""

from __future__ import annotations

import json
import socket
import time

import pytest

from support.server import LiveServer

HEAD_TIMEOUT = 0.6
PER_ADDRESS = 12
TOTAL = 20
HEALTHZ = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    server = LiveServer(database_url=f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('db') / 'h.db'}",
                        head_timeout=HEAD_TIMEOUT, max_connections=TOTAL,
                        max_connections_per_address=PER_ADDRESS).start()
    yield server
    server.stop()


def _connect(server, source: str = "127.0.0.1") -> socket.socket:
    sock = socket.socket()
    sock.settimeout(10)
    sock.bind((source, 0))
    sock.connect(("127.0.0.1", server.port))
    return sock


def _read_until_closed(sock: socket.socket) -> bytes:
    answer = b""
    try:
        while data := sock.recv(65536):
            answer += data
    except ConnectionResetError:
        answer += b"<reset>"
    return answer


def _read_answer(sock: socket.socket) -> bytes:
    """One response with a Content-Length body."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(next(line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")))
    while len(body) < length:
        body += sock.recv(65536)
    return data


def _envelope(answer: bytes) -> dict:
    return json.loads(answer.partition(b"\r\n\r\n")[2])


def _held(server, n: int, source: str) -> list[socket.socket]:
    """n keep-alive connections from `source`, each with one request answered and left open."""
    socks = []
    for _ in range(n):
        sock = _connect(server, source)
        sock.sendall(HEALTHZ)
        assert _read_answer(sock).startswith(b"HTTP/1.1 200")
        socks.append(sock)
    return socks


def test_half_sent_heads_get_408_and_are_closed_within_the_head_timeout(live):
    socks = [_connect(live, f"127.0.0.{10 + i % 5}") for i in range(10)]
    idle = _connect(live, "127.0.0.15")  # connects and sends nothing
    started = time.monotonic()
    for sock in socks:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")  # no blank line: the head never ends
    answers = [_read_until_closed(s) for s in socks]
    nothing = _read_until_closed(idle)
    elapsed = time.monotonic() - started
    for sock in [*socks, idle]:
        sock.close()
    assert elapsed < HEAD_TIMEOUT + 3, elapsed
    for answer in answers:
        assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
        assert b"connection: close" in answer.lower()
        assert _envelope(answer)["error"]["code"] == "request_timeout"
    assert nothing == b""  # closed without an answer: there was no request


def test_a_slow_head_that_completes_in_time_is_served(live):
    sock = _connect(live, "127.0.0.16")
    try:
        for part in (b"GET /healthz HTTP/1.1\r\n", b"Host: x\r\n", b"\r\n"):
            sock.sendall(part)
            time.sleep(HEAD_TIMEOUT / 5)
        assert _read_answer(sock).startswith(b"HTTP/1.1 200")
        # A keep-alive connection's next head has its own deadline, counted from its first byte.
        time.sleep(HEAD_TIMEOUT * 1.2)
        sock.sendall(HEALTHZ)
        assert _read_answer(sock).startswith(b"HTTP/1.1 200")
    finally:
        sock.close()


def test_connections_over_the_per_address_cap_get_503_and_other_addresses_are_served(live):
    held = _held(live, PER_ADDRESS, "127.0.0.20")
    try:
        extra = _connect(live, "127.0.0.20")
        extra.sendall(HEALTHZ)
        refused = _read_until_closed(extra)
        extra.close()
        assert refused.startswith(b"HTTP/1.1 503"), refused[:200]
        assert b"connection: close" in refused.lower() and b"retry-after: 1" in refused.lower()
        error = _envelope(refused)["error"]
        assert error["code"] == "service_unavailable" and "this address" in error["message"]
        other = _connect(live, "127.0.0.21")  # another client is not affected
        other.sendall(HEALTHZ)
        assert _read_answer(other).startswith(b"HTTP/1.1 200")
        other.close()
    finally:
        for sock in held:
            sock.close()
    time.sleep(0.2)  # the server sees the closes
    again = _connect(live, "127.0.0.20")
    again.sendall(HEALTHZ)
    assert _read_answer(again).startswith(b"HTTP/1.1 200")
    again.close()


def test_connections_over_the_total_cap_get_503_until_some_close(live):
    held = _held(live, PER_ADDRESS, "127.0.0.30") + _held(live, TOTAL - PER_ADDRESS, "127.0.0.31")
    try:
        extra = _connect(live, "127.0.0.32")
        extra.sendall(HEALTHZ)
        refused = _read_until_closed(extra)
        extra.close()
        assert refused.startswith(b"HTTP/1.1 503"), refused[:200]
        assert "retry shortly" in _envelope(refused)["error"]["message"]
    finally:
        for sock in held:
            sock.close()
    time.sleep(0.2)
    with live.client() as http:
        assert http.get("/healthz").status_code == 200
        metrics = http.get("/metrics").text
    assert 'heddle_http_connections_refused_total{limit="total"}' in metrics
    assert 'heddle_http_connections_refused_total{limit="address"}' in metrics
    assert "heddle_http_head_timeouts_total" in metrics


def test_a_refused_client_that_sends_nothing_is_closed_within_a_second(live):
    held = _held(live, PER_ADDRESS, "127.0.0.40")
    try:
        silent = _connect(live, "127.0.0.40")
        started = time.monotonic()
        answer = _read_until_closed(silent)
        silent.close()
        assert time.monotonic() - started < 3
        assert answer.startswith(b"HTTP/1.1 503")
    finally:
        for sock in held:
            sock.close()


def test_a_500_says_connection_close_and_the_next_request_uses_a_new_connection(live):
    """uvicorn drops the connection after an exception; the answer must say so."""
    async def boom():
        raise RuntimeError("a bug")

    live.app.add_api_route("/test-only/boom", boom)
    sock = _connect(live, "127.0.0.50")
    try:
        sock.sendall(b"GET /test-only/boom HTTP/1.1\r\nHost: x\r\n\r\n")
        answer = _read_until_closed(sock)  # the server closes after it: no hanging keep-alive
    finally:
        sock.close()
    assert answer.startswith(b"HTTP/1.1 500"), answer[:200]
    head = answer.partition(b"\r\n\r\n")[0].lower()
    assert head.count(b"connection: close") == 1, head
    assert _envelope(answer)["error"]["code"] == "internal_error"
    with live.client() as http:  # httpx honours Connection: close and opens a fresh socket
        assert http.get("/test-only/boom").status_code == 500
        assert http.get("/healthz").status_code == 200


def test_ordinary_errors_keep_the_connection_alive(live):
    sock = _connect(live, "127.0.0.51")
    try:
        sock.sendall(b"GET /v1/nothing-here HTTP/1.1\r\nHost: x\r\n\r\n")
        first = _read_answer(sock)
        assert first.startswith(b"HTTP/1.1 404") and b"connection: close" not in first.lower()
        sock.sendall(b"GET /v1/workspace HTTP/1.1\r\nHost: x\r\n\r\n")
        second = _read_answer(sock)
        assert second.startswith(b"HTTP/1.1 401") and b"connection: close" not in second.lower()
        sock.sendall(HEALTHZ)
        assert _read_answer(sock).startswith(b"HTTP/1.1 200")
    finally:
        sock.close()
