"""Request limits, through the real server (issue 15, part 2): header size and count (431),
JSON nesting depth (400 json_too_deep), body time (408). Rate limits are another module's."""

from __future__ import annotations

import json
import socket
import time

from hardening.abuse_kit import half_sent
from support.loom import SCRIPTED_AGENT, open_thread

SERVER_SETTINGS = {"body_timeout": 1.5}


def _error(resp, status: int, code: str) -> dict:
    assert resp.status_code == status, resp.text
    body = resp.json()
    assert body["status"] == "error" and body["error"]["code"] == code, body
    assert resp.headers.get("request-id")
    return body["error"]


def test_a_40_kb_header_is_431(http, tenant):
    err = _error(http.get("/v1/workspace", headers={**tenant.headers(), "X-Padding": "a" * 40_000}),
                 431, "headers_too_large")
    assert "16384" in err["message"]
    # Many small headers adding up past 16 KiB in all, too.
    many = {f"X-Pad-{i}": "b" * 400 for i in range(45)}
    _error(http.get("/v1/workspace", headers={**tenant.headers(), **many}), 431, "headers_too_large")
    # Just under the limit is served.
    assert http.get("/v1/workspace", headers={**tenant.headers(), "X-Padding": "a" * 15_000}).status_code == 200


def test_too_many_headers_is_431(http, tenant):
    many = {f"X-H{i}": "1" for i in range(120)}
    err = _error(http.get("/v1/workspace", headers={**tenant.headers(), **many}), 431, "headers_too_large")
    assert "headers" in err["message"]


def _raw_head(port: int, header_line_bytes: int) -> tuple[bytes, int]:
    """Send a request whose one header line is `header_line_bytes` long; what came back, and
    how much of the line the server let us send before it hung up."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sent = 0
    try:
        sock.sendall(b"GET /v1/workspace HTTP/1.1\r\nHost: x\r\nX-Huge: ")
        chunk = b"z" * 65536
        try:
            while sent < header_line_bytes:
                sock.sendall(chunk)
                sent += len(chunk)
            sock.sendall(b"\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass
        answer = b""
        try:
            while True:
                data = sock.recv(65536)
                if not data:
                    break
                answer += data
        except (ConnectionResetError, TimeoutError):
            pass
        return answer, sent
    finally:
        sock.close()


def test_a_16_mb_header_line_is_not_served(server):
    answer, sent = _raw_head(server.port, 16 * 1024 * 1024)
    # The parser gives up at its cap: a bare 400 (or a reset), never the app's answer.
    assert not answer.startswith(b"HTTP/1.1 2"), answer[:200]
    assert answer == b"" or answer.startswith(b"HTTP/1.1 400"), answer[:200]
    assert sent < 16 * 1024 * 1024  # the server hung up long before the line ended
    # And the server is fine afterwards.
    with server.client() as http:
        assert http.get("/healthz").status_code == 200


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_json_nesting_depth_is_limited(http, tenant):
    agent = tenant.add_agent(SCRIPTED_AGENT)
    h = {**tenant.headers(), "Content-Type": "application/json"}
    thread = open_thread(http, tenant.headers(), agent)
    deep = '{"content": "hi", "extra": ' + _nested(65) + "}"
    err = _error(http.post(f"/v1/loom/threads/{thread}/messages", content=deep, headers=h), 400, "json_too_deep")
    assert "64" in err["message"]
    # A megabyte-sized nest (which used to reach the JSON parser's recursion limit) too.
    huge = _nested(400_000)
    _error(http.post("/v1/identify", content=huge, headers=h), 400, "json_too_deep")
    # Brackets inside strings are text, not nesting; 64 levels are allowed.
    text = json.dumps({"content": "[" * 5000})
    assert http.post(f"/v1/loom/threads/{thread}/messages", content=text, headers=h).status_code in (202, 409)
    ok_depth = '{"identifier": "DEUTDEFF", "x": ' + _nested(62) + "}"
    resp = http.post("/v1/identify", content=ok_depth, headers=h)
    assert resp.status_code in (200, 400), resp.text
    assert resp.json()["error"]["code"] != "json_too_deep" if resp.status_code == 400 else True


def test_a_body_not_sent_in_time_is_408(server, tenant):
    sock = half_sent(server.port, "/v1/identify", {"Authorization": f"Bearer {tenant.secret}"})
    try:
        sock.settimeout(10)
        started = time.monotonic()
        answer = sock.recv(65536)
        waited = time.monotonic() - started
    finally:
        sock.close()
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert b'"request_timeout"' in answer and b"connection: close" in answer.lower()
    assert 1.0 <= waited < 6.0
