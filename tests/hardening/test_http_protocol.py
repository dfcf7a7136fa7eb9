"""The HTTP protocol (heddle/http_protocol.py) over raw sockets against the real server: the
head cap of the httptools parser, requests whose head and body share a segment, pipelining,
and one write per response."""

from __future__ import annotations

import json
import socket
import time

from heddle.serving import PARSER_HEAD_FACTOR

CAP = 16 * 1024 * PARSER_HEAD_FACTOR  # HEDDLE_MAX_HEADER_BYTES (16 KiB) x the parser's factor


def _read_all(sock: socket.socket) -> bytes:
    answer = b""
    try:
        while data := sock.recv(65536):
            answer += data
    except (ConnectionResetError, TimeoutError):
        pass
    return answer


def _connect(server) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=10)


def test_a_head_trickled_past_the_cap_is_refused_with_400_and_closed(server):
    sock = _connect(server)
    try:
        sock.sendall(b"GET /v1/workspace HTTP/1.1\r\nHost: x\r\n")
        sent = 0
        try:
            while sent < CAP * 2:  # many small header lines, each one well-formed
                line = b"X-Pad-%d: %s\r\n" % (sent, b"p" * 1000)
                sock.sendall(line)
                sent += len(line)
                time.sleep(0.0005 if sent % 20_000 < 1100 else 0)
            sock.sendall(b"\r\n")  # complete: a server without the cap would answer it (431)
        except (BrokenPipeError, ConnectionResetError):
            pass
        answer = _read_all(sock)
    finally:
        sock.close()
    assert answer == b"" or answer.startswith(b"HTTP/1.1 400"), answer[:200]
    assert b"head too large" in answer or answer == b""
    assert b"headers_too_large" not in answer  # the parser, not the app, refused it


def test_a_large_body_in_the_same_segment_as_the_head_is_served(server, tenant):
    """The cap counts a head's bytes: a body that arrives with the head is not counted."""
    h = tenant.headers()
    body = json.dumps({"identifier": "DEUTDEFF", "pad": "x" * (CAP + 10_000)}).encode()
    head = (f"POST /v1/identify HTTP/1.1\r\nHost: x\r\nAuthorization: {h['Authorization']}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
    sock = _connect(server)
    try:
        sock.sendall(head + body)  # one send: the kernel hands it over in as few reads as it likes
        answer = _read_all(sock)
    finally:
        sock.close()
    status = int(answer.split(b" ", 2)[1])
    # Whatever the app makes of the extra field, the parser let the request through.
    assert status != 400 or b'"status":"error"' in answer, answer[:300]
    assert b"request-id" in answer.lower()


def test_pipelined_requests_are_each_answered_in_order(server):
    sock = _connect(server)
    try:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n" * 3
                     + b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        answer = _read_all(sock)
    finally:
        sock.close()
    assert answer.count(b"HTTP/1.1 200") == 4, answer[:500]


def test_a_response_head_and_body_arrive_together(server):
    """One write per response: the first read after a keep-alive request holds the whole answer."""
    sock = _connect(server)
    try:
        for _ in range(5):
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            first = sock.recv(65536)
            head, _, body = first.partition(b"\r\n\r\n")
            length = int(next(line.split(b":", 1)[1] for line in head.split(b"\r\n")
                              if line.lower().startswith(b"content-length")))
            assert len(body) == length, first
    finally:
        sock.close()


def test_a_malformed_request_line_is_a_plain_400(server):
    sock = _connect(server)
    try:
        sock.sendall(b"GET /healthz HTTP/1.1 extra\r\nHost: x\r\n\r\n")
        answer = _read_all(sock)
    finally:
        sock.close()
    assert answer.startswith(b"HTTP/1.1 400"), answer[:200]
